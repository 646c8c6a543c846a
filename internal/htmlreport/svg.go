package htmlreport

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"strconv"
	"strings"
)

// The charts are SVG written in Go, outside html/template, so that a chart
// is a function of plain numbers that another page (a comparison of two
// runs) can call. That makes this file the only escaping the charts get:
// every string that reaches an SVG goes through esc, including the ones
// that look safe (colours, labels made here), so that no call site has to
// decide which strings came from the workload.

// Font sizes and the width of a monospace character, used to fit labels
// into the space a chart gives them (SVG has no text overflow).
const (
	fontSize     = 11
	smallFont    = 10
	charWidth    = 0.61 * fontSize // monospace advance ≈ 0.6 em
	sansCharWide = 0.56 * fontSize // a sans-serif average, for labels on axes
)

// Palette colours used by more than one chart.
const (
	colorAxis  = "#8a8f98"
	colorGrid  = "#e3e6ea"
	colorText  = "#2b2f36"
	colorMuted = "#5f6670"
)

func esc(s string) string { return html.EscapeString(s) }

// num formats a coordinate: one decimal at most, no trailing zeros.
func num(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "0"
	}
	return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64)
}

// chartName makes a data-chart value from parts that may come from the
// workload (a disk or syscall name): lower-case letters, digits and dashes.
func chartName(parts ...string) string {
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			b.WriteByte('-')
		}
		for _, r := range strings.ToLower(p) {
			switch {
			case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
				b.WriteRune(r)
			default:
				b.WriteByte('_')
			}
		}
	}
	return b.String()
}

// svg accumulates one chart.
type svg struct {
	b    strings.Builder
	w, h float64
}

// newSVG opens a chart of w×h user units. name becomes data-chart, label
// the accessible name.
func newSVG(name string, w, h float64, label string) *svg {
	s := &svg{w: w, h: h}
	fmt.Fprintf(&s.b, `<svg xmlns="http://www.w3.org/2000/svg" class="chart" data-chart="%s" viewBox="0 0 %s %s" width="%s" height="%s" role="img" aria-label="%s">`+"\n",
		esc(name), num(w), num(h), num(w), num(h), esc(label))
	return s
}

// done closes the chart.
func (s *svg) done() template.HTML {
	s.b.WriteString("</svg>\n")
	return template.HTML(s.b.String())
}

// tipTag is a tooltip for the element it ends.
func tipTag(t string) string {
	if t == "" {
		return ""
	}
	return "<title>" + esc(t) + "</title>"
}

func (s *svg) rect(x, y, w, h float64, fill, tip string, extra ...string) {
	fmt.Fprintf(&s.b, `<rect x="%s" y="%s" width="%s" height="%s" fill="%s"%s>%s</rect>`+"\n",
		num(x), num(y), num(max(w, 0)), num(max(h, 0)), esc(fill), attrs(extra), tipTag(tip))
}

func (s *svg) line(x1, y1, x2, y2 float64, stroke string, width float64, extra ...string) {
	fmt.Fprintf(&s.b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="%s"%s/>`+"\n",
		num(x1), num(y1), num(x2), num(y2), esc(stroke), num(width), attrs(extra))
}

func (s *svg) circle(cx, cy, r float64, fill, stroke, tip string) {
	fmt.Fprintf(&s.b, `<circle cx="%s" cy="%s" r="%s" fill="%s" stroke="%s">%s</circle>`+"\n",
		num(cx), num(cy), num(r), esc(fill), esc(stroke), tipTag(tip))
}

// text writes t at (x, y); anchor is start, middle or end.
func (s *svg) text(x, y float64, anchor string, size float64, fill, t string, extra ...string) {
	fmt.Fprintf(&s.b, `<text x="%s" y="%s" text-anchor="%s" font-size="%s" fill="%s"%s>%s</text>`+"\n",
		num(x), num(y), esc(anchor), num(size), esc(fill), attrs(extra), esc(t))
}

func (s *svg) polyline(xs, ys []float64, stroke string, width float64, tip string) {
	var pts strings.Builder
	for i := range xs {
		if i > 0 {
			pts.WriteByte(' ')
		}
		pts.WriteString(num(xs[i]) + "," + num(ys[i]))
	}
	fmt.Fprintf(&s.b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="%s" stroke-linejoin="round">%s</polyline>`+"\n",
		pts.String(), esc(stroke), num(width), tipTag(tip))
}

// raw writes markup built here from escaped parts.
func (s *svg) raw(markup string) { s.b.WriteString(markup) }

// attrs turns name, value pairs into escaped attributes.
func attrs(kv []string) string {
	var b strings.Builder
	for i := 0; i+1 < len(kv); i += 2 {
		fmt.Fprintf(&b, ` %s="%s"`, esc(kv[i]), esc(kv[i+1]))
	}
	return b.String()
}

// fitText cuts t to what fits in width user units at char advance cw,
// marking the cut with an ellipsis; "" when not even two characters fit.
func fitText(t string, width, cw float64) string {
	n := int(width / cw)
	r := []rune(t)
	if len(r) <= n {
		return t
	}
	if n < 3 {
		return ""
	}
	return string(r[:n-1]) + "…"
}

// fitTextLeft cuts the start of t instead (paths end in what matters).
func fitTextLeft(t string, width, cw float64) string {
	n := int(width / cw)
	r := []rune(t)
	if len(r) <= n {
		return t
	}
	if n < 3 {
		return ""
	}
	return "…" + string(r[len(r)-n+1:])
}

// niceTicks returns about n round tick values from 0 to at least hi.
func niceTicks(hi float64, n int) []float64 {
	if hi <= 0 || math.IsNaN(hi) || math.IsInf(hi, 0) {
		return []float64{0, 1}
	}
	step := niceStep(hi / float64(n))
	var ticks []float64
	for v := 0.0; ; v += step {
		ticks = append(ticks, v)
		if v >= hi-step*1e-9 {
			break
		}
	}
	return ticks
}

// niceStep rounds raw up to 1, 2, 2.5 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	if raw <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if raw <= m*p*(1+1e-9) {
			return m * p
		}
	}
	return 10 * p
}

// linearScale maps [lo, hi] onto [a, b].
func linearScale(lo, hi, a, b float64) func(float64) float64 {
	if hi == lo {
		hi = lo + 1
	}
	return func(v float64) float64 { return a + (v-lo)/(hi-lo)*(b-a) }
}

// legend draws coloured squares with their labels in a row from (x, y),
// wrapping at maxX, and returns the y below it.
func (s *svg) legend(x, y, maxX float64, items []LegendItem) float64 {
	cx := x
	for _, it := range items {
		w := 14 + float64(len([]rune(it.Label)))*sansCharWide + 14
		if cx > x && cx+w > maxX {
			cx, y = x, y+16
		}
		if it.Line {
			s.line(cx, y-4, cx+10, y-4, it.Color, 2.5)
		} else {
			s.rect(cx, y-9, 10, 10, it.Color, "")
		}
		s.text(cx+14, y, "start", fontSize, colorText, it.Label)
		cx += w
	}
	return y + 8
}

// LegendItem is one entry of a chart's legend.
type LegendItem struct {
	Label, Color string
	// Line draws a line instead of a square (for a line chart).
	Line bool
}

// tickAnchor centres an axis label under its tick, except near the right
// edge of a chart of width w, where it ends at the tick so it is not cut.
func tickAnchor(x, w float64) string {
	if x > w-22 {
		return "end"
	}
	return "middle"
}
