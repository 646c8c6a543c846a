package htmlreport

import (
	"fmt"
	"html/template"
	"math"
)

// IntervalRow is one condition of an experiment: its median change against
// baseline with the 95% interval, and each run's own change.
type IntervalRow struct {
	Label string
	// Change, Lo and Hi are relative changes (-0.5: half the performance).
	Change, Lo, Hi float64
	Points         []float64
	// Class is "sensitive", "insensitive", "inconclusive", or "" for the
	// baseline (drawn without an interval).
	Class string
	Note  string
}

// IntervalOptions shape an interval chart.
type IntervalOptions struct {
	Title string
	// Noise is the baseline's noise (a fraction), drawn as a band around 0.
	Noise float64
	// XMin and XMax fix the axis (fractions); 0, 0 fits the rows.
	XMin, XMax float64
	Width      float64
}

// classColors colours an experiment condition by what it showed.
var classColors = map[string]string{
	"sensitive":    "#c0392b",
	"insensitive":  "#4f8a5b",
	"inconclusive": "#c98a12",
	"":             "#6b7280",
}

// ClassColor is the colour of an experiment class.
func ClassColor(class string) string {
	if c, ok := classColors[class]; ok {
		return c
	}
	return "#6b7280"
}

// IntervalChart draws each condition's change with its interval against a
// zero line and the baseline's noise band.
func IntervalChart(name string, rows []IntervalRow, o IntervalOptions) template.HTML {
	const rowH, top = 30.0, 34.0
	w := o.Width
	if w == 0 {
		w = 960
	}
	labelW := 80.0
	for _, r := range rows {
		labelW = max(labelW, float64(len([]rune(r.Label)))*charWidth+14)
	}
	labelW = min(labelW, w*0.25)
	noteW := min(w*0.3, 260)
	x0, x1 := labelW, w-noteW

	lo, hi := min(-o.Noise, 0), max(o.Noise, 0)
	for _, r := range rows {
		lo, hi = min(lo, r.Lo, r.Change), max(hi, r.Hi, r.Change)
		for _, p := range r.Points {
			lo, hi = min(lo, p), max(hi, p)
		}
	}
	if o.XMin != 0 || o.XMax != 0 {
		lo, hi = min(lo, o.XMin), max(hi, o.XMax)
	}
	step := niceStep((hi - lo) / 6)
	lo, hi = math.Floor(lo/step-0.3)*step, math.Ceil(hi/step+0.3)*step
	xs := linearScale(lo, hi, x0, x1)
	height := top + float64(len(rows))*rowH + 26
	bottom := top + float64(len(rows))*rowH

	s := newSVG(name, w, height, o.Title)
	// Legend: what the marks mean.
	lx := x0
	s.circle(lx+4, 14, 4, colorText, "none", "")
	s.text(lx+12, 18, "start", fontSize, colorText, "median change")
	lx += 108
	s.line(lx, 14, lx+18, 14, colorText, 3)
	s.text(lx+24, 18, "start", fontSize, colorText, "95% interval")
	lx += 104
	s.circle(lx+4, 14, 3, "#ffffff", colorText, "")
	s.text(lx+12, 18, "start", fontSize, colorText, "one run")
	lx += 72
	if o.Noise > 0 {
		s.rect(lx, 8, 18, 12, "#e9ebee", "")
		s.text(lx+24, 18, "start", fontSize, colorText, fmt.Sprintf("baseline noise ±%.0f%%", o.Noise*100))
	}

	if o.Noise > 0 {
		a, b := xs(-o.Noise), xs(o.Noise)
		s.rect(a, top-4, b-a, bottom-top+8, "#e9ebee", fmt.Sprintf("baseline noise: ±%.1f%%", o.Noise*100))
	}
	for i := 0; lo+float64(i)*step <= hi+step/2; i++ {
		t := math.Round((lo+float64(i)*step)/step) * step
		if math.Abs(t) < step/1e6 {
			t = 0 // not "-0%"
		}
		x := xs(t)
		s.line(x, top-4, x, bottom+4, colorGrid, 1)
		s.text(x, bottom+18, "middle", smallFont, colorMuted, fmt.Sprintf("%+.0f%%", t*100))
	}
	zero := xs(0)
	s.line(zero, top-6, zero, bottom+6, "#1d2026", 1.2)
	for i, r := range rows {
		y := top + float64(i)*rowH + rowH/2
		c := ClassColor(r.Class)
		s.text(x0-10, y+4, "end", fontSize, colorText, fitText(r.Label, x0-14, charWidth), "font-family", "monospace")
		if r.Class != "" {
			s.line(xs(r.Lo), y, xs(r.Hi), y, c, 4, "stroke-linecap", "round")
			s.rect(xs(r.Lo), y-7, xs(r.Hi)-xs(r.Lo), 14, "transparent",
				fmt.Sprintf("%s: 95%% interval [%+.1f%%, %+.1f%%]", r.Label, r.Lo*100, r.Hi*100))
		}
		for j, p := range r.Points {
			s.circle(xs(p), y+7, 2.6, "#ffffff", c, fmt.Sprintf("%s run %d: %+.1f%%", r.Label, j+1, p*100))
		}
		s.circle(xs(r.Change), y, 5, c, "#ffffff", fmt.Sprintf("%s: median %+.1f%%", r.Label, r.Change*100))
		if r.Note != "" {
			s.text(x1+10, y+4, "start", fontSize, c, fitText(r.Note, noteW-12, sansCharWide))
		}
	}
	return s.done()
}
