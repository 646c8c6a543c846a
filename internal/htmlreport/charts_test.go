package htmlreport

import (
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// attrFloats returns the value of attribute name in every element of kind
// tag, in order.
func attrFloats(t *testing.T, svg, tag, name string) []float64 {
	t.Helper()
	re := regexp.MustCompile(`<` + tag + `\b[^>]*\b` + name + `="([-0-9.]+)"`)
	var out []float64
	for _, m := range re.FindAllStringSubmatch(svg, -1) {
		v, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func TestFlameGraphMergesStacksAndSizesFramesByWeight(t *testing.T) {
	u := func(names ...string) []Frame {
		var fs []Frame
		for _, n := range names {
			fs = append(fs, Frame{Name: n, Kind: FrameUser})
		}
		return fs
	}
	svg := string(FlameGraph("f", []FlameStack{
		{Frames: u("main", "work", "write"), Value: 3},
		{Frames: u("main", "work", "read"), Value: 1},
		{Frames: u("main", "tiny"), Value: 0.0001}, // under minFrameFrac: left out
		{Frames: u("ignored"), Value: 0},
	}, FlameOptions{Width: 1000}))
	re := regexp.MustCompile(`data-x="([0-9.]+)" data-w="([0-9.]+)" data-n="([^"]*)"`)
	got := map[string][2]float64{}
	for _, m := range re.FindAllStringSubmatch(svg, -1) {
		x, _ := strconv.ParseFloat(m[1], 64)
		w, _ := strconv.ParseFloat(m[2], 64)
		if _, dup := got[m[3]]; dup {
			t.Errorf("frame %q drawn twice: shared callers must merge", m[3])
		}
		got[m[3]] = [2]float64{x, w}
	}
	// Siblings in name order: tiny (not drawn, but it keeps its place)
	// before work, read before write.
	tiny := 0.0001 / 4.0001
	want := map[string][2]float64{
		"all": {0, 1}, "main": {0, 1}, "work": {tiny, 4 / 4.0001},
		"read": {tiny, 1 / 4.0001}, "write": {tiny + 1/4.0001, 3 / 4.0001},
	}
	for n, xw := range want {
		g, ok := got[n]
		if !ok {
			t.Errorf("no frame %q in %v", n, got)
			continue
		}
		if !near(g[0], xw[0], 1e-5) || !near(g[1], xw[1], 1e-5) {
			t.Errorf("frame %q at x=%.6f w=%.6f, want x=%.6f w=%.6f", n, g[0], g[1], xw[0], xw[1])
		}
	}
	for _, n := range []string{"tiny", "ignored"} {
		if _, ok := got[n]; ok {
			t.Errorf("frame %q should be left out (too narrow, or no weight)", n)
		}
	}
	// Depths: all, main, work, read/write: four rows of frameH.
	if ys := attrFloats(t, svg, "rect", "y"); slices.Max(ys) != 3*frameH {
		t.Errorf("deepest frame at y=%v, want %v", slices.Max(ys), 3*frameH)
	}
	if !strings.Contains(svg, `height="70"`) {
		t.Errorf("a 4-level graph should be 4×17+2 high: %.200s", svg)
	}
}

func TestStackFramesAreRootFirst(t *testing.T) {
	got := stackFrames(Frame{Name: "app", Kind: FrameRoot},
		[]string{"inner_user", "outer_user"}, "", []string{"schedule", "do_syscall_64"}, "")
	var names []string
	for _, f := range got {
		names = append(names, f.Name)
	}
	want := []string{"app", "outer_user", "inner_user", "do_syscall_64", "schedule"}
	if !slices.Equal(names, want) {
		t.Errorf("frames %v, want %v (the record holds innermost first)", names, want)
	}
	got = stackFrames(Frame{Name: "app", Kind: FrameRoot}, nil, "not taken", []string{"schedule"}, "")
	if got[1].Kind != FrameNote || got[1].Note != "not taken" {
		t.Errorf("a missing user stack is not marked: %+v", got)
	}
}

func TestStackedBarsSegmentsAreProportional(t *testing.T) {
	svg := string(StackedBars("b", []BarRow{
		{Label: "t1", Segments: []Segment{{"cpu", 1, "#111111"}, {"lock", 3, "#222222"}, {"none", 0, "#333333"}}},
		{Label: "t2", Segments: []Segment{{"cpu", 2, "#111111"}}},
	}, BarOptions{Max: 4, Width: 600}))
	re := regexp.MustCompile(`<rect x="[0-9.]+" y="[0-9.]+" width="([0-9.]+)" height="15" fill="(#[0-9]{6})"`)
	var widths []float64
	for _, m := range re.FindAllStringSubmatch(svg, -1) {
		w, _ := strconv.ParseFloat(m[1], 64)
		widths = append(widths, w)
	}
	if len(widths) != 3 {
		t.Fatalf("%d segments drawn, want 3 (a zero segment is not drawn): %v", len(widths), widths)
	}
	if !near(widths[1], 3*widths[0], 0.2) || !near(widths[2], 2*widths[0], 0.2) {
		t.Errorf("segment widths %v are not 1:3 and 2 for values 1, 3 and 2", widths)
	}
}

func TestHistogramDrawsEveryBucketOnALogAxis(t *testing.T) {
	svg := string(Histogram("h", []HistBucket{
		{Low: 0, High: 1023, Count: 5},
		{Low: 1024, High: 2047, Count: 20},
		{Low: 4096, High: 8191, Count: 10},
	}, HistogramOptions{Unit: UnitNs, Markers: []Marker{{"p50", 1500}}}))
	bars := regexp.MustCompile(`<rect x="([0-9.]+)" y="[0-9.]+" width="([0-9.]+)" height="([0-9.]+)" fill="#3a78c9"><title>([^<]*)</title>`).FindAllStringSubmatch(svg, -1)
	if len(bars) != 3 {
		t.Fatalf("%d bars, want 3", len(bars))
	}
	h := func(i int) float64 { v, _ := strconv.ParseFloat(bars[i][3], 64); return v }
	if !near(h(1), 4*h(0), 0.5) || !near(h(2), 2*h(0), 0.5) {
		t.Errorf("bar heights %v %v %v are not 5:20:10", h(0), h(1), h(2))
	}
	w := func(i int) float64 { v, _ := strconv.ParseFloat(bars[i][2], 64); return v }
	// Log2 buckets are equally wide on a log axis.
	if !near(w(0), w(1), 1.5) || !near(w(1), w(2), 1.5) {
		t.Errorf("log2 bucket widths %v %v %v differ", w(0), w(1), w(2))
	}
	if !strings.Contains(bars[1][4], "1.02µs to 2.05µs: 20 (57.1%)") {
		t.Errorf("tooltip %q", bars[1][4])
	}
	if !strings.Contains(svg, ">p50<") || !strings.Contains(svg, "stroke-dasharray") {
		t.Error("no p50 marker")
	}
	if empty := string(Histogram("e", nil, HistogramOptions{})); !strings.Contains(empty, "no values") {
		t.Error("an empty histogram does not say so")
	}
}

func TestLineChartSkipsMissingValues(t *testing.T) {
	svg := string(LineChart("l", []float64{1, 2, 3, 4}, []Series{
		{Label: "a", Color: "#111111", Y: []float64{10, math.NaN(), 30, 40}},
		{Label: "b", Color: "#222222", Y: []float64{5, 5, 5, 5}},
	}, LineOptions{Legend: true}))
	if n := strings.Count(svg, "<polyline"); n != 2 {
		t.Errorf("%d lines, want 2", n)
	}
	if n := strings.Count(svg, "<circle"); n != 7 {
		t.Errorf("%d points, want 7 (the missing one left out)", n)
	}
	if strings.Contains(svg, "NaN") {
		t.Error("NaN reached the SVG")
	}
	first, _, _ := strings.Cut(svg[strings.Index(svg, `points="`)+8:], `"`)
	if n := len(strings.Fields(first)); n != 3 {
		t.Errorf("series a has %d points on its line, want 3", n)
	}
}

func TestIntervalChartHasZeroLineNoiseBandAndRows(t *testing.T) {
	svg := string(IntervalChart("i", []IntervalRow{
		{Label: "baseline", Points: []float64{-0.02, 0, 0.03}},
		{Label: "io-pressure", Change: -0.49, Lo: -0.56, Hi: -0.35, Class: "sensitive", Points: []float64{-0.5, -0.45, -0.52}},
	}, IntervalOptions{Noise: 0.09, Width: 800}))
	for _, want := range []string{">+0%<", "baseline noise ±9%", ClassColor("sensitive"), "io-pressure: 95% interval [-56.0%, -35.0%]"} {
		if !strings.Contains(svg, want) {
			t.Errorf("no %q in the chart", want)
		}
	}
	if strings.Contains(svg, "-0%") {
		t.Error(`an axis label reads "-0%"`)
	}
	if n := strings.Count(svg, "<circle"); n != 3+3+2+2 {
		t.Errorf("%d circles, want 6 runs, 2 medians and 2 legend marks", n)
	}
}

func TestTicks(t *testing.T) {
	if got := niceTicks(957, 5); !slices.Equal(got, []float64{0, 200, 400, 600, 800, 1000}) {
		t.Errorf("niceTicks(957) = %v", got)
	}
	if got := logTicks(1e3, 1e6, UnitNs); !slices.Equal(got, []float64{1e3, 1e4, 1e5, 1e6}) {
		t.Errorf("logTicks(1µs, 1ms) = %v", got)
	}
	if got := logTicks(4096, 65536, UnitBytes); !slices.Equal(got, []float64{4096, 8192, 16384, 32768, 65536}) {
		t.Errorf("logTicks(4K, 64K) = %v", got)
	}
	if got := logTicks(1, 1<<20, UnitCount); len(got) > 7 || got[0] != 1 {
		t.Errorf("logTicks(1, 1M) = %v: want at most 7 from 1", got)
	}
}

func TestChartNameIsSafe(t *testing.T) {
	if got := chartName("timeline-disk", `"><img src=x>`, "iops"); got != "timeline-disk-___img_src_x_-iops" {
		t.Errorf("chartName = %q", got)
	}
}

// TestScalingSection: diagnose --scale's page has the throughput and cost
// charts, each level's row with its share of linear, and the summary.
func TestScalingSection(t *testing.T) {
	run := func(units, cpu float64) model.ExperimentRun {
		return model.ExperimentRun{Value: units, Units: units, DurationSec: 1, Time: map[string]float64{model.CatCPU: cpu * units}}
	}
	ex := &model.Experiments{Measure: model.Measure{Name: "ops/s", Unit: "ops/s", HigherIsBetter: true}, Scaling: &model.Scaling{
		Param: "threads", CPUs: 2, Class: "coherency", Summary: "limited by coherency <b>",
		Points: []model.ScalePoint{
			{N: 1, Runs: []model.ExperimentRun{run(1e6, 1e-6)}, Throughput: 1e6, Efficiency: 1, CPUSecPerUnit: 1e-6, TimePerUnit: map[string]float64{model.CatCPU: 1e-6}},
			{N: 2, Runs: []model.ExperimentRun{run(0.8e6, 2.5e-6)}, Throughput: 0.8e6, Efficiency: 0.4, CPUSecPerUnit: 2.5e-6, TimePerUnit: map[string]float64{model.CatCPU: 2.5e-6}},
			{N: 4, OverCPUs: true, Runs: []model.ExperimentRun{run(0.7e6, 2.6e-6)}, Throughput: 0.7e6, Efficiency: 0.175, CPUSecPerUnit: 2.6e-6, TimePerUnit: map[string]float64{model.CatCPU: 2.6e-6}},
		},
		Fit: &model.USLFit{Lambda: 1e6, Sigma: 1.5}}}
	s := experimentsSection(&model.Run{Experiments: ex})
	var text strings.Builder
	charts := 0
	for _, b := range s.Blocks {
		text.WriteString(b.Text)
		for _, f := range b.Figs {
			if strings.Contains(string(f.Chart), "<svg") {
				charts++
			}
			text.WriteString(f.Caption)
		}
		if b.Table != nil {
			for _, r := range b.Table.Rows {
				for _, c := range r {
					text.WriteString(c.Text + "|")
				}
			}
		}
	}
	got := text.String()
	for _, want := range []string{"limited by coherency <b>", "Throughput by threads", "Cost of a unit of work by threads", "threads=4 (over the 2 CPUs)|", "40%|", "2.50µs|"} {
		if !strings.Contains(got, want) {
			t.Errorf("the scaling section lacks %q:\n%s", want, got)
		}
	}
	if charts != 2 {
		t.Errorf("%d charts, want the throughput's and the cost's", charts)
	}
}
