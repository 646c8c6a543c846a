package stats

import "testing"

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
