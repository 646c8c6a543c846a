package htmlreport

import (
	"fmt"
	"html/template"
	"math"
	"strconv"

	"github.com/perfsleuth/perfsleuth/internal/units"
)

// Unit says what a histogram's or a timeline's values are, for the axis.
type Unit int

// Units of chart values.
const (
	UnitCount Unit = iota
	UnitNs
	UnitBytes
	UnitPercent
)

// Format prints v in the unit, short.
func (u Unit) Format(v float64) string {
	switch u {
	case UnitNs:
		return units.FormatNs(v)
	case UnitBytes:
		return units.FormatSize(int64(v + 0.5))
	case UnitPercent:
		return strconv.FormatFloat(v, 'f', -1, 64) + "%"
	}
	return shortCount(v)
}

// shortCount prints 1234 as 1.2k, 2500000 as 2.5M.
func shortCount(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1e9:
		return trimZero(v/1e9, 1) + "G"
	case a >= 1e6:
		return trimZero(v/1e6, 1) + "M"
	case a >= 1e4:
		return trimZero(v/1e3, 0) + "k"
	case a >= 1e3:
		return trimZero(v/1e3, 1) + "k"
	case a >= 10 || a == math.Trunc(a):
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return trimZero(v, 2)
}

func trimZero(v float64, dec int) string {
	return strconv.FormatFloat(v, 'f', dec, 64)
}

// HistBucket is Count values in [Low, High], as the run record's buckets.
type HistBucket struct {
	Low, High float64
	Count     int64
}

// Marker is a labelled vertical line on a histogram (a percentile).
type Marker struct {
	Label string
	Value float64
}

// HistogramOptions shape a histogram.
type HistogramOptions struct {
	Title   string
	Unit    Unit
	Markers []Marker
	Color   string
	// Width and Height default to 440×180.
	Width, Height float64
	// XMin and XMax fix the axis (0: fit the buckets), so that two
	// histograms side by side share a scale.
	XMin, XMax float64
}

// Histogram draws buckets on a log2 value axis with linear counts, one bar
// per bucket as the record holds it (log2 buckets, or an HDR histogram's
// finer ones). A bucket starting at 0 is drawn from half its upper end.
func Histogram(name string, buckets []HistBucket, o HistogramOptions) template.HTML {
	w, h := o.Width, o.Height
	if w == 0 {
		w = 440
	}
	if h == 0 {
		h = 180
	}
	color := o.Color
	if color == "" {
		color = "#3a78c9"
	}
	low := func(b HistBucket) float64 {
		if b.Low > 0 {
			return b.Low
		}
		return max((b.High+1)/2, 0.5)
	}
	lo, hi := math.Inf(1), 0.0
	var maxCount, total int64
	for _, b := range buckets {
		lo, hi = min(lo, low(b)), max(hi, b.High+1)
		maxCount = max(maxCount, b.Count)
		total += b.Count
	}
	if len(buckets) == 0 {
		lo, hi = 1, 2
	}
	if o.XMin > 0 {
		lo = min(lo, o.XMin)
	}
	if o.XMax > 0 {
		hi = max(hi, o.XMax)
	}
	if hi/lo < 4 { // one or two buckets: give them room
		lo, hi = lo/2, hi*2
	}
	markerRows := min(len(o.Markers), 3)
	left, right, bottom := 46.0, 24.0, 30.0
	top := 10.0 + float64(markerRows)*11
	xs := func(v float64) float64 {
		return left + (math.Log2(v)-math.Log2(lo))/(math.Log2(hi)-math.Log2(lo))*(w-left-right)
	}
	yTicks := niceTicks(float64(maxCount), 4)
	ys := linearScale(0, yTicks[len(yTicks)-1], h-bottom, top)

	s := newSVG(name, w, h, o.Title)
	for _, t := range yTicks {
		y := ys(t)
		s.line(left, y, w-right, y, colorGrid, 1)
		s.text(left-5, y+3.5, "end", smallFont, colorMuted, shortCount(t))
	}
	for _, t := range logTicks(lo, hi, o.Unit) {
		x := xs(t)
		s.line(x, h-bottom, x, h-bottom+4, colorAxis, 1)
		s.text(x, h-bottom+15, tickAnchor(x, w), smallFont, colorMuted, o.Unit.Format(t))
	}
	for _, b := range buckets {
		x0, x1 := xs(low(b)), xs(b.High+1)
		y := ys(float64(b.Count))
		share := 0.0
		if total > 0 {
			share = float64(b.Count) / float64(total) * 100
		}
		tip := fmt.Sprintf("%s to %s: %s (%.1f%%)", o.Unit.Format(b.Low), o.Unit.Format(b.High), units.FormatCount(b.Count), share)
		gap := min(1, (x1-x0)/4)
		s.rect(x0+gap/2, y, x1-x0-gap, h-bottom-y, color, tip)
	}
	s.line(left, h-bottom, w-right, h-bottom, colorAxis, 1)
	for i, m := range o.Markers {
		if m.Value <= 0 || m.Value < lo || m.Value > hi {
			continue
		}
		x := xs(m.Value)
		row := float64(i % 3)
		s.line(x, 10+row*11, x, h-bottom, "#1d2026", 1, "stroke-dasharray", "3 2")
		if x > w-right-30 {
			s.text(x-3, 17+row*11, "end", smallFont, "#1d2026", m.Label, "font-weight", "600")
		} else {
			s.text(x+3, 17+row*11, "start", smallFont, "#1d2026", m.Label, "font-weight", "600")
		}
	}
	if len(buckets) == 0 {
		s.text(w/2, h/2, "middle", fontSize, colorMuted, "no values")
	}
	return s.done()
}

// logTicks picks round values for a log axis from lo to hi: powers of ten
// for times (1µs, 10µs, ...), powers of two for sizes and counts, thinned
// to at most 7, with 2 and 5 steps added when the range spans little.
func logTicks(lo, hi float64, u Unit) []float64 {
	var ticks []float64
	if u == UnitBytes || u == UnitCount {
		var pows []float64
		for e := math.Ceil(math.Log2(lo)); math.Pow(2, e) <= hi; e++ {
			pows = append(pows, math.Pow(2, e))
		}
		step := 1
		for len(pows)/step > 7 {
			step++
		}
		for i := 0; i < len(pows); i += step {
			ticks = append(ticks, pows[i])
		}
		return ticks
	}
	for e := math.Floor(math.Log10(lo)); math.Pow(10, e) <= hi; e++ {
		for _, m := range []float64{1, 2, 5} {
			if v := m * math.Pow(10, e); v >= lo && v <= hi {
				ticks = append(ticks, v)
			}
		}
	}
	if len(ticks) > 7 { // keep the powers of ten
		var tens []float64
		for _, t := range ticks {
			if l := math.Log10(t); math.Abs(l-math.Round(l)) < 1e-9 {
				tens = append(tens, t)
			}
		}
		ticks = tens
	}
	return ticks
}
