package htmlreport

import (
	"fmt"
	"html/template"
	"math"
)

// Series is one line of a line chart; Y has one value per X.
type Series struct {
	Label string
	Color string
	Y     []float64
	// Bold draws a thicker line (the all-CPU average among the CPUs).
	Bold bool
}

// LineOptions shape a line chart.
type LineOptions struct {
	Title string
	// YUnit prints the y axis; XLabel names the x axis ("s").
	YUnit  Unit
	XLabel string
	// YMax fixes the top of the y axis (100 for percentages); 0 fits the
	// data. Two charts side by side share a scale by passing the same YMax.
	YMax float64
	// Width and Height default to 460×190.
	Width, Height float64
	// Legend is drawn when true and there is more than one series.
	Legend bool
}

// maxPointMarks is the most points that get a dot with a tooltip; past it
// the line alone is drawn (a 10 ms timeline of a long run has thousands).
const maxPointMarks = 120

// LineChart draws series over a shared x (the timeline's sample times).
func LineChart(name string, x []float64, series []Series, o LineOptions) template.HTML {
	w, h := o.Width, o.Height
	if w == 0 {
		w = 460
	}
	if h == 0 {
		h = 190
	}
	left, right, bottom := 48.0, 16.0, 30.0
	top := 12.0
	var legend []LegendItem
	if o.Legend && len(series) > 1 {
		for _, sr := range series {
			legend = append(legend, LegendItem{Label: sr.Label, Color: sr.Color, Line: true})
		}
		scratch := &svg{}
		top = scratch.legend(left, 12, w, legend) + 8
	}
	xMax := 0.0
	for _, v := range x {
		xMax = max(xMax, v)
	}
	yMax := o.YMax
	if yMax <= 0 {
		for _, sr := range series {
			for _, v := range sr.Y {
				if !math.IsNaN(v) {
					yMax = max(yMax, v)
				}
			}
		}
	}
	yTicks := niceTicks(yMax, 4)
	// The time axis ends at the last sample, with round ticks up to it.
	var xTicks []float64
	for _, t := range niceTicks(xMax, 6) {
		if t <= xMax*(1+1e-9) {
			xTicks = append(xTicks, t)
		}
	}
	if xMax <= 0 {
		xMax = 1
	}
	xs := linearScale(0, xMax, left, w-right)
	ys := linearScale(0, yTicks[len(yTicks)-1], h-bottom, top)

	s := newSVG(name, w, h, o.Title)
	if len(legend) > 0 {
		s.legend(left, 12, w, legend)
	}
	for _, t := range yTicks {
		y := ys(t)
		s.line(left, y, w-right, y, colorGrid, 1)
		s.text(left-5, y+3.5, "end", smallFont, colorMuted, o.YUnit.Format(t))
	}
	for _, t := range xTicks {
		x := xs(t)
		s.line(x, h-bottom, x, h-bottom+4, colorAxis, 1)
		s.text(x, h-bottom+15, tickAnchor(x, w), smallFont, colorMuted, shortCount(t)+o.XLabel)
	}
	s.line(left, h-bottom, w-right, h-bottom, colorAxis, 1)
	s.line(left, top, left, h-bottom, colorAxis, 1)
	marks := len(x) <= maxPointMarks
	for _, sr := range series {
		var px, py []float64
		for i, v := range sr.Y {
			if i >= len(x) || math.IsNaN(v) {
				continue
			}
			px, py = append(px, xs(x[i])), append(py, ys(v))
		}
		width := 1.6
		if sr.Bold {
			width = 2.6
		}
		s.polyline(px, py, sr.Color, width, sr.Label)
		if !marks {
			continue
		}
		for i, v := range sr.Y {
			if i >= len(x) || math.IsNaN(v) {
				continue
			}
			s.circle(xs(x[i]), ys(v), 2.2, sr.Color, "none",
				fmt.Sprintf("%s at %s%s: %s", sr.Label, shortCount(x[i]), o.XLabel, o.YUnit.Format(round3(v))))
		}
	}
	return s.done()
}

// round3 keeps three significant digits for a tooltip.
func round3(v float64) float64 {
	if v == 0 {
		return 0
	}
	p := math.Pow(10, 2-math.Floor(math.Log10(math.Abs(v))))
	return math.Round(v*p) / p
}
