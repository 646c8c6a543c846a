package stats

import (
	"math"
	"math/rand/v2"
	"slices"
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

// TestDetrendedRelSpreadFewRuns: three runs are not detrended (a line
// through two of them left a spread of 0 for every three-run baseline):
// the failing run's baseline, 26,811, 16,440 and 22,923 tx/s, moves
// 1.4826 × 3,888 / 22,923 = 25%; four or more are taken off their line,
// so a steady drift is not noise.
func TestDetrendedRelSpreadFewRuns(t *testing.T) {
	if got := DetrendedRelSpread([]int{1, 4, 7}, []float64{26811, 16440, 22923}); math.Abs(got-0.2515) > 0.001 {
		t.Errorf("three runs: %.4f, want 0.2515", got)
	}
	if got := DetrendedRelSpread([]int{1, 2, 3, 4, 5}, []float64{100, 90, 80, 70, 60}); got > 1e-9 {
		t.Errorf("a straight drift over five runs: %.4f, want 0", got)
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

// A batch that falls with one run out of order: Mann-Kendall's p is 1/12
// (S = -8 of 10 pairs), short of 0.05, but Sen's slope still says it fell
// about 15% over the batch. Regression: the A batch, two runs
// swapped; a p-value alone would have called it steady.
func TestTrendOfOneOutOfOrder(t *testing.T) {
	tr := TrendOf([]float64{41422, 38698, 39310, 38314, 33461})
	if tr.S != -8 || math.Abs(tr.P-10.0/120) > 1e-12 {
		t.Errorf("S %d, P %v; want -8 and 10/120", tr.S, tr.P)
	}
	// Sen's slope: the median of the 10 pairwise slopes, the mean of
	// (33461-38698)/3 and (39310-41422)/2.
	if want := (-5237.0/3 - 1056) / 2 * 4 / 38698; math.Abs(tr.Change-want) > 1e-9 || math.Abs(tr.PerRun*4-tr.Change) > 1e-12 {
		t.Errorf("change %v (per run %v), want %v", tr.Change, tr.PerRun, want)
	}
}

func ratio(a, b float64) float64 { return b/a - 1 }

// TestPairedRoundsPairsTheSpeedOfEachRound: two workloads 5% apart on a
// machine whose speed moves 30% from round to round. Paired, the rounds'
// shared speed cancels and the interval holds +5% tightly; unpaired it
// spans the drift.
func TestPairedRoundsPairsTheSpeedOfEachRound(t *testing.T) {
	speed := []float64{1.0, 1.3, 0.9, 1.2, 1.0, 0.8, 1.1}
	var a, b []float64
	for _, s := range speed {
		a, b = append(a, 100*s), append(b, 105*s)
	}
	p := PairedRounds(a, b, ratio, 1)
	if p.Rounds != 7 || math.Abs(p.Change-0.05) > 1e-9 || p.Interval[0] < 0.049 || p.Interval[1] > 0.051 || p.Spread > 1e-9 {
		t.Errorf("paired: %+v, want +5%% with an interval and a spread of nothing", p)
	}
	if lo, hi := ChangeInterval(a, b, ratio); lo > 0 || hi < 0.1 {
		t.Errorf("unpaired interval [%.3f, %.3f]: want it to reach 0 and beyond +10%%", lo, hi)
	}
}

// TestPairedRoundsCancelsDrift: diagnose's schedule (each round runs every
// condition once, the order rotated) on a machine that slows by 2% a run,
// the same workload under both "conditions". Unpaired, the baseline's runs
// fall 22% over the batch and the interval leaves room for a large loss;
// paired with the baseline run of its own round, each run differs from it
// by the few runs between them, and the change is about nothing.
func TestPairedRoundsCancelsDrift(t *testing.T) {
	const conds, rounds = 2, 6
	var base, cond []float64
	for seq := 0; seq < conds*rounds; seq++ {
		r, i := seq/conds, seq%conds
		v := 1000 * (1 - 0.02*float64(seq))
		if (i+r)%conds == 0 { // schedule: round r starts r places further
			base = append(base, v)
		} else {
			cond = append(cond, v)
		}
	}
	p := PairedRounds(base, cond, ratio, 1)
	if math.Abs(p.Change) > 0.01 || p.Interval[0] < -0.05 || p.Interval[1] > 0.05 {
		t.Errorf("paired over drift: %+v, want about 0 with a narrow interval", p)
	}
	if lo, _ := ChangeInterval(base, cond, ratio); lo > -0.1 {
		t.Errorf("unpaired interval from %.3f: the drift should widen it past -10%%", lo)
	}
	if tr := TrendOf(base); tr.Change > -0.2 {
		t.Errorf("the baseline's own trend %+v, want a fall of more than 20%%", tr)
	}
}

// TestPairedRoundsLooks: looked at again and again, the interval widens:
// the same rounds that exclude zero at the first look do not at the
// fourth. The level is Bonferroni's.
func TestPairedRoundsLooks(t *testing.T) {
	a := []float64{100, 100, 100, 100, 100}
	b := []float64{88, 90, 85, 99, 87}
	one, four := PairedRounds(a, b, ratio, 1), PairedRounds(a, b, ratio, 4)
	if one.Interval[1] >= 0 {
		t.Errorf("one look: %+v, want an interval below zero", one)
	}
	if four.Interval[0] >= one.Interval[0] || four.Interval[1] <= one.Interval[1] || four.Interval[1] < 0 {
		t.Errorf("four looks: %v against one look's %v: want it wider on both sides, reaching zero", four.Interval, one.Interval)
	}
	if four.Change != one.Change {
		t.Errorf("the change moved with the looks: %v, %v", one.Change, four.Change)
	}
	for looks, want := range map[int]float64{0: 0.95, 1: 0.95, 2: 0.975, 4: 0.9875} {
		if got := Level(looks); math.Abs(got-want) > 1e-12 {
			t.Errorf("Level(%d) = %v, want %v", looks, got, want)
		}
	}
}

// TestOptionalStoppingCorrected: an unchanged workload (5% noise a run,
// no effect), looked at after 10 rounds and after each added round up to
// 16, stopping at the first interval that excludes zero, as diagnose adds
// rounds while a condition is inconclusive. Every look at 95% calls a
// change in far more than 5% of such experiments; corrected for the looks,
// about 5% or fewer. (100 experiments with fixed seeds: the fractions are
// the same on every run.)
func TestOptionalStoppingCorrected(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	const experiments, first, last = 100, 10, 16
	var naive, corrected int
	for range experiments {
		var a, b []float64
		for range last {
			a, b = append(a, 100*(1+0.05*rng.NormFloat64())), append(b, 100*(1+0.05*rng.NormFloat64()))
		}
		calls := func(corrected bool) bool {
			for n := first; n <= last; n++ {
				looks := 1
				if corrected {
					looks = n - first + 1
				}
				if iv := PairedRounds(a[:n], b[:n], ratio, looks).Interval; iv[0] > 0 || iv[1] < 0 {
					return true
				}
			}
			return false
		}
		if calls(false) {
			naive++
		}
		if calls(true) {
			corrected++
		}
	}
	if naive < 10 || corrected > 6 {
		t.Errorf("false calls in %d experiments of no change: %d uncorrected, %d corrected; want 10 or more, and 6 or fewer", experiments, naive, corrected)
	}
	t.Logf("false calls: %d%% uncorrected, %d%% corrected", naive, corrected)
}

func TestMedianDraws(t *testing.T) {
	for _, xs := range [][]float64{{3, 1, 2}, {4, 1, 3, 2}} {
		d := medianDraws(xs)
		if len(d) != bootstrapResamples || !slices.IsSorted(d) || d[0] < 1 || d[len(d)-1] > 4 {
			t.Errorf("%v: %d draws from %v to %v", xs, len(d), d[0], d[len(d)-1])
		}
		if m := Median(d); m != Median(xs) {
			t.Errorf("%v: the draws' median %v, want %v", xs, m, Median(xs))
		}
	}
}

// TestPairedInTimeCancelsDrift: six conditions a round, the order rotated
// each round, on a machine that slows by 1.5% of its first speed a run
// (over the 30 runs, by 44%). The condition that takes 30% away runs three
// places from its round's baseline run, before it in some rounds and after
// it in others: paired with that run alone, its change carries three runs'
// drift one way or the other, and the median of five rounds does not
// cancel it. Moved to the condition's place along the baseline's own
// drift, the baseline run of its round gives -30% in every round.
func TestPairedInTimeCancelsDrift(t *testing.T) {
	const conds, rounds = 6, 5
	var bt, ct []int
	var base, cond []float64
	for seq := 0; seq < conds*rounds; seq++ {
		r, i := seq/conds, seq%conds
		speed := 1 - 0.015*float64(seq)
		switch (i + r) % conds {
		case 0:
			bt, base = append(bt, seq+1), append(base, 1000*speed)
		case 3:
			ct, cond = append(ct, seq+1), append(cond, 700*speed)
		}
	}
	byRound := PairedRounds(base, cond, ratio, 1)
	inTime := PairedInTime(bt, base, ct, cond, ratio, 1)
	if math.Abs(byRound.Change+0.3) < 0.03 {
		t.Errorf("paired by round: %+v, expected the drift of the runs between them to show", byRound)
	}
	if math.Abs(inTime.Change+0.3) > 1e-9 || inTime.Interval[0] < -0.3-1e-9 || inTime.Interval[1] > -0.3+1e-9 || inTime.Rounds != rounds {
		t.Errorf("paired in time: %+v, want -30%% in each of %d rounds", inTime, rounds)
	}
	// Without the runs' places (an older record) it pairs by round.
	if p := PairedInTime(nil, base, nil, cond, ratio, 1); p != byRound {
		t.Errorf("without places: %+v, want %+v", p, byRound)
	}
	// A machine whose speed jumps from round to round and does not drift:
	// the pairing takes each round's jump out; Sen's slope of the jumps
	// is not quite zero, and moves the change by about a point.
	speed := []float64{1.0, 1.3, 0.9, 1.2, 1.0}
	bt, ct, base, cond = nil, nil, nil, nil
	for r, s := range speed {
		bt, ct = append(bt, 2*r+1+r%2), append(ct, 2*r+2-r%2)
		base, cond = append(base, 1000*s), append(cond, 900*s)
	}
	if p := PairedInTime(bt, base, ct, cond, ratio, 1); math.Abs(p.Change+0.1) > 0.015 || p.Interval[1] > -0.08 {
		t.Errorf("round-to-round jumps: %+v, want -10%% with a narrow interval", p)
	}
}

func TestSenSlopeAndPlaces(t *testing.T) {
	if got := senSlope([]int{1, 2, 4, 5, 9}, []float64{10, 12, 16, 18, 100}); got != 2 {
		t.Errorf("Sen's slope %v, want 2 (the point out of line outvoted)", got)
	}
	if increasing([]int{1, 3, 3}, 3) || increasing([]int{0, 1}, 2) || increasing([]int{1, 2}, 3) || !increasing([]int{1, 4, 9}, 3) {
		t.Error("increasing")
	}
}
