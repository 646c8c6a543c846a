package htmlreport

import (
	"fmt"
	"html/template"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// categoryColors gives every time-accounting category one colour on every
// chart: blues for the CPU, warm colours for storage (darkest for the
// flush), purple for locks, green for sleep, greys for the rest.
var categoryColors = map[string]string{
	model.CatCPU:          "#3a78c9",
	model.CatCPUWait:      "#9cc3ea",
	model.CatStorageRead:  "#f2b14c",
	model.CatStorageWrite: "#e0723a",
	model.CatStorageSync:  "#b3322a",
	model.CatLock:         "#8b5fbf",
	model.CatSleep:        "#6aa96a",
	model.CatOther:        "#a7a9ad",
	model.CatUnknown:      "#d4d6d9",
}

// CategoryColor is the colour of a time-accounting category (grey for one
// this version does not know).
func CategoryColor(cat string) string {
	if c, ok := categoryColors[cat]; ok {
		return c
	}
	return "#c3c5c8"
}

// Segment is one part of a stacked bar.
type Segment struct {
	Label string
	Value float64
	Color string
}

// BarRow is one stacked bar: a label on the left, segments, and a note on
// the right (e.g. the total).
type BarRow struct {
	Label    string
	Tip      string
	Segments []Segment
	Note     string
}

// BarOptions shape a stacked-bar chart.
type BarOptions struct {
	// Title is the accessible name.
	Title string
	// Max is the value of a full-width bar; 0 scales to the longest row.
	// Two charts shown side by side share a scale by passing the same Max.
	Max float64
	// Percent labels the axis 0-100% of Max instead of in units.
	Percent bool
	// Format prints a value on the axis and in tooltips.
	Format func(float64) string
	// Legend lists the segment labels, in this order, above the bars.
	Legend []LegendItem
	// Width is the chart's width (default 960).
	Width float64
}

// LegendItems makes a legend from labels and colours (a pair per entry).
func LegendItems(labelColor ...string) []LegendItem {
	var out []LegendItem
	for i := 0; i+1 < len(labelColor); i += 2 {
		out = append(out, LegendItem{Label: labelColor[i], Color: labelColor[i+1]})
	}
	return out
}

// StackedBars draws one horizontal stacked bar per row.
func StackedBars(name string, rows []BarRow, o BarOptions) template.HTML {
	const rowH, barH, top0 = 22.0, 15.0, 6.0
	width := o.Width
	if width == 0 {
		width = 960
	}
	format := o.Format
	if format == nil {
		format = func(v float64) string { return fmt.Sprintf("%.3g", v) }
	}
	labelW := 70.0
	for _, r := range rows {
		labelW = max(labelW, float64(len([]rune(r.Label)))*charWidth+12)
	}
	labelW = min(labelW, width*0.3)
	noteW := 90.0
	for _, r := range rows {
		noteW = max(noteW, float64(len([]rune(r.Note)))*sansCharWide+10)
	}
	noteW = min(noteW, width*0.25)
	x0, x1 := labelW, width-noteW

	full := o.Max
	if full <= 0 {
		for _, r := range rows {
			sum := 0.0
			for _, sg := range r.Segments {
				sum += max(sg.Value, 0)
			}
			full = max(full, sum)
		}
	}
	if full <= 0 {
		full = 1
	}
	// The axis ends at the full bar, with round ticks up to it.
	var ticks []float64
	for _, t := range niceTicks(full, 5) {
		if t <= full*(1+1e-9) {
			ticks = append(ticks, t)
		}
	}
	if o.Percent {
		ticks = []float64{0, full / 4, full / 2, 3 * full / 4, full}
	}
	xs := linearScale(0, full, x0, x1)

	// The legend is measured by drawing it into a scratch chart first.
	legendH := 0.0
	if len(o.Legend) > 0 {
		scratch := &svg{}
		legendH = scratch.legend(x0, 0, width, o.Legend) + 12
	}
	top := top0 + legendH
	height := top + float64(len(rows))*rowH + 22
	s := newSVG(name, width, height, o.Title)
	if len(o.Legend) > 0 {
		s.legend(x0, top0+10, width, o.Legend)
	}
	bottom := top + float64(len(rows))*rowH
	for _, t := range ticks {
		x := xs(t)
		s.line(x, top-2, x, bottom, colorGrid, 1)
		label := format(t)
		if o.Percent {
			label = fmt.Sprintf("%.0f%%", t/full*100)
		}
		s.text(x, bottom+14, "middle", smallFont, colorMuted, label)
	}
	for i, r := range rows {
		y := top + float64(i)*rowH + (rowH-barH)/2
		s.text(x0-8, y+barH-3.5, "end", fontSize, colorText, fitText(r.Label, x0-12, charWidth), "font-family", "monospace")
		if r.Tip != "" {
			s.rect(0, y, x0-4, barH, "transparent", r.Tip)
		}
		x, sum := x0, 0.0
		for _, sg := range r.Segments {
			if sg.Value <= 0 {
				continue
			}
			sum += sg.Value
			w := xs(sum) - x
			tip := fmt.Sprintf("%s · %s: %s", r.Label, sg.Label, format(sg.Value))
			if o.Percent {
				tip = fmt.Sprintf("%s · %s: %.1f%%", r.Label, sg.Label, sg.Value/full*100)
			}
			s.rect(x, y, w, barH, sg.Color, tip)
			if o.Percent && w > 34 {
				s.text(x+w/2, y+barH-3.5, "middle", smallFont, textOn(sg.Color), fmt.Sprintf("%.0f%%", sg.Value/full*100))
			}
			x += w
		}
		if r.Note != "" {
			s.text(x1+8, y+barH-3.5, "start", fontSize, colorMuted, fitText(r.Note, noteW-10, sansCharWide))
		}
	}
	s.line(x0, top-2, x0, bottom, colorAxis, 1)
	return s.done()
}

// textOn picks black or white text for a fill colour "#rrggbb".
func textOn(fill string) string {
	var r, g, b int
	if _, err := fmt.Sscanf(fill, "#%02x%02x%02x", &r, &g, &b); err != nil {
		return colorText
	}
	if 0.299*float64(r)+0.587*float64(g)+0.114*float64(b) < 140 {
		return "#ffffff"
	}
	return "#1d2026"
}
