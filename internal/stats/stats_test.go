package stats

import (
	"math"
	"testing"
)

func TestMedian(t *testing.T) {
	cases := []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{3}, 3},
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
	}
	for _, c := range cases {
		in := append([]float64(nil), c.in...)
		if got := Median(c.in); got != c.want {
			t.Errorf("Median(%v) = %v, want %v", c.in, got, c.want)
		}
		for i := range in {
			if in[i] != c.in[i] {
				t.Errorf("Median reordered its input: %v", c.in)
			}
		}
	}
}

func TestChangeInterval(t *testing.T) {
	ratio := func(ma, mb float64) float64 { return mb/ma - 1 }
	// Fully separated samples: every resample's change is negative.
	lo, hi := ChangeInterval([]float64{100, 102, 98}, []float64{50, 52, 49}, ratio)
	if !(lo < hi && hi < 0) {
		t.Errorf("separated: interval [%.3f, %.3f] should lie below zero", lo, hi)
	}
	if lo < 49.0/102-1-1e-9 || hi > 52.0/98-1+1e-9 {
		t.Errorf("separated: interval [%.3f, %.3f] outside the extreme ratios", lo, hi)
	}
	// Overlapping samples: the interval spans zero.
	lo, hi = ChangeInterval([]float64{100, 90, 110}, []float64{95, 105, 100}, ratio)
	if !(lo < 0 && hi > 0) {
		t.Errorf("overlapping: interval [%.3f, %.3f] should span zero", lo, hi)
	}
	// The same numbers give the same interval (fixed seed).
	lo2, hi2 := ChangeInterval([]float64{100, 90, 110}, []float64{95, 105, 100}, ratio)
	if lo != lo2 || hi != hi2 {
		t.Errorf("not reproducible: [%v, %v] then [%v, %v]", lo, hi, lo2, hi2)
	}
	if lo, hi := ChangeInterval(nil, []float64{1}, ratio); lo != 0 || hi != 0 {
		t.Errorf("empty sample: [%v, %v], want zeros", lo, hi)
	}
}

func TestRelSpread(t *testing.T) {
	// Six runs within ±2% and one 30% outlier: the outlier does not set it.
	xs := []float64{100, 101, 99, 102, 98, 100, 130}
	if got := RelSpread(xs); got < 0.01 || got > 0.02 {
		t.Errorf("RelSpread(%v) = %.3f, want about 0.015 (1.4826 × MAD 1 / 100)", xs, got)
	}
	if got := RelSpread([]float64{5}); got != 0 {
		t.Errorf("one value: %v", got)
	}
}

func TestTrendOf(t *testing.T) {
	// The runs of a batch that fell steadily (issue: 41,422 down to 33,461).
	fell := TrendOf([]float64{41422, 39310, 38698, 38314, 33461})
	if fell.S != -10 || fell.P > 0.02 || fell.Change > -0.1 {
		t.Errorf("falling series: %+v, want S -10, P 1/60, a fall of more than 10%%", fell)
	}
	// 2 of 120 orders of 5 distinct values are fully monotone: P = 2/120.
	if want := 2.0 / 120; math.Abs(fell.P-want) > 1e-12 {
		t.Errorf("P = %v, want %v", fell.P, want)
	}
	flat := TrendOf([]float64{76603, 76003, 73507, 74320, 76626})
	if flat.P < 0.2 {
		t.Errorf("no trend: %+v", flat)
	}
	// Exact and normal approximation agree roughly at n = 10/11.
	up := make([]float64, 11)
	for i := range up {
		up[i] = float64(i)
	}
	if tr := TrendOf(up); tr.S != 55 || tr.P > 1e-4 || math.Abs(tr.Change-10.0/5) > 1e-9 {
		t.Errorf("rising 0..10: %+v", tr)
	}
	if tr := TrendOf([]float64{1, 2, 3}); tr.P != 1 {
		t.Errorf("3 values: %+v, want P 1", tr)
	}
}

// TestPairedChangeInterval: two workloads 5% apart on a machine whose speed
// moves 30% from round to round. Paired, the rounds' shared speed cancels
// and the interval holds +5% tightly; unpaired it spans the drift.
func TestPairedChangeInterval(t *testing.T) {
	ratio := func(ma, mb float64) float64 { return mb/ma - 1 }
	speed := []float64{1.0, 1.3, 0.9, 1.2, 1.0, 0.8, 1.1}
	var a, b []float64
	for _, s := range speed {
		a, b = append(a, 100*s), append(b, 105*s)
	}
	lo, hi := PairedChangeInterval(a, b, ratio)
	if lo < 0.049 || hi > 0.051 {
		t.Errorf("paired interval [%.3f, %.3f], want +5%%", lo, hi)
	}
	if lo, hi := ChangeInterval(a, b, ratio); lo > 0 || hi < 0.1 {
		t.Errorf("unpaired interval [%.3f, %.3f]: want it to reach 0 and beyond +10%%", lo, hi)
	}
}
