// Package stats holds the summary statistics perfsleuth reports: medians
// now, confidence intervals with the experiments. Medians, not means,
// because runs on a shared machine have outliers in one direction.
package stats

import (
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// Median is the middle value of xs (the mean of the two middle values for
// an even count); 0 for none. xs is not modified.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// bootstrapResamples is how many resamples a bootstrap interval draws:
// 10,000 puts the 2.5th and 97.5th percentiles within a fraction of a
// percent of where more draws would (Efron & Tibshirani, ch. 19).
const bootstrapResamples = 10000

// ChangeInterval is the 95% percentile-bootstrap confidence interval of
// change(median(a'), median(b')) over resamples a' of a and b' of b (each
// drawn with replacement, independently). The seed is fixed, so the
// interval is the same every time the same numbers are analysed. It
// returns zeros when either sample is empty.
func ChangeInterval(a, b []float64, change func(ma, mb float64) float64) (lo, hi float64) {
	if len(a) == 0 || len(b) == 0 {
		return 0, 0
	}
	rng := rand.New(rand.NewPCG(1, 2))
	ra, rb := make([]float64, len(a)), make([]float64, len(b))
	draws := make([]float64, bootstrapResamples)
	for i := range draws {
		for j := range ra {
			ra[j] = a[rng.IntN(len(a))]
		}
		for j := range rb {
			rb[j] = b[rng.IntN(len(b))]
		}
		draws[i] = change(Median(ra), Median(rb))
	}
	slices.Sort(draws)
	return stat.Quantile(0.025, stat.Empirical, draws, nil), stat.Quantile(0.975, stat.Empirical, draws, nil)
}

// Paired is the change between paired runs: each run of b set against a
// run of a made at about the same time (diagnose runs every condition once
// a round; compare --run runs A and B back to back). What moved the machine
// then moved both and cancels: a machine that drifts over the batch, or
// state that builds up from run to run, is not in the change.
type Paired struct {
	// Rounds is how many rounds had a run of each (the shorter side).
	Rounds int
	// Change is the median of the runs' changes against their pair.
	Change float64
	// Interval is the percentile-bootstrap confidence interval of Change
	// over resamples of the pairs, 95% corrected for looks (Widened).
	Interval [2]float64
	// Spread is a robust standard deviation of the pairs' changes (Spread
	// of them): how much one pair's change moves by itself.
	Spread float64
}

// PairedRounds compares b with a round by round, a[i] with b[i] (the
// shorter decides how many rounds). See PairedInTime for the statistics.
func PairedRounds(a, b []float64, change func(a, b float64) float64, looks int) Paired {
	n := min(len(a), len(b))
	d := make([]float64, n)
	for i := range d {
		d[i] = change(a[i], b[i])
	}
	return pairedFrom(d, n, looks)
}

// PairedInTime is PairedRounds with the runs' places in the order all
// runs were made (1, 2, ...): a[i] and b[i] still ran in the same round,
// but not at the same place, and a[i] is moved to b[i]'s place along a's
// own drift, Sen's slope of a over its places (the median of the slopes
// between every two of its runs), before the two are compared. Pairing a
// round's runs alone leaves the drift of the runs between them: with six
// conditions a round a condition runs up to five places from its round's
// baseline run, and in a batch that falls 4% a run (as one did) that is a
// fifth, one way in some rounds and the other in others, which a median
// of a few rounds does not cancel. A drift that is straight over the
// batch then cancels whatever the places, and a machine whose speed jumps
// from round to round still has each round's jump taken out by the
// pairing (an interpolation between the runs of a around b[i] would mix
// two rounds' speeds instead). Without places (aAt or bAt not increasing,
// or of the wrong length: a record made before runs were numbered) it is
// PairedRounds.
//
// Statistics: Change is the median of the rounds' changes; Interval the
// 95% percentile-bootstrap interval of that median, 10,000 resamples of
// the rounds with a fixed seed, corrected for looks: the times the same,
// growing data has been tested (diagnose adds a round and tests again
// while a condition is inconclusive). Looked at k times, each look gets
// alpha 0.05/k (Bonferroni), so that the chance of a false call over all
// of them stays about 5% or under (see Widened). looks below 1 count as 1.
func PairedInTime(aAt []int, a []float64, bAt []int, b []float64, change func(a, b float64) float64, looks int) Paired {
	if !increasing(aAt, len(a)) || !increasing(bAt, len(b)) {
		return PairedRounds(a, b, change, looks)
	}
	slope := senSlope(aAt, a)
	n := min(len(a), len(b))
	d := make([]float64, n)
	for i := range d {
		d[i] = change(a[i]+slope*float64(bAt[i]-aAt[i]), b[i])
	}
	return pairedFrom(d, n, looks)
}

// senSlope is the median of the slopes between every two points of (ts,
// xs): Sen's slope, which one point out of line moves little; 0 for fewer
// than two.
func senSlope(ts []int, xs []float64) float64 {
	var slopes []float64
	for i := range xs {
		for j := i + 1; j < len(xs); j++ {
			slopes = append(slopes, (xs[j]-xs[i])/float64(ts[j]-ts[i]))
		}
	}
	return Median(slopes)
}

// increasing says whether ts holds n places in increasing order, from 1.
func increasing(ts []int, n int) bool {
	if len(ts) != n {
		return false
	}
	for i, t := range ts {
		if t < 1 || (i > 0 && t <= ts[i-1]) {
			return false
		}
	}
	return true
}

// pairedFrom is Paired from the pairs' changes d.
func pairedFrom(d []float64, rounds, looks int) Paired {
	if len(d) == 0 {
		return Paired{}
	}
	p := Paired{Rounds: rounds, Change: Median(d), Spread: Spread(d)}
	p.Interval = Widened(p.Change, medianDraws(d), looks)
	return p
}

// medianDraws is the bootstrap distribution of the median of xs, sorted:
// bootstrapResamples resamples with replacement, the seed fixed. A
// resample is drawn as how many times each value of xs (sorted) is drawn,
// so that its median is read off the counts instead of sorting it.
func medianDraws(xs []float64) []float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	rng := rand.New(rand.NewPCG(1, 2))
	counts := make([]int, n)
	draws := make([]float64, bootstrapResamples)
	// at is the value at place k of the sorted resample.
	at := func(k int) float64 {
		c := 0
		for i, m := range counts {
			if c += m; c > k {
				return s[i]
			}
		}
		return s[n-1]
	}
	for i := range draws {
		clear(counts)
		for range n {
			counts[rng.IntN(n)]++
		}
		if n%2 == 1 {
			draws[i] = at(n / 2)
		} else {
			draws[i] = (at(n/2-1) + at(n/2)) / 2
		}
	}
	slices.Sort(draws)
	return draws
}

// alpha is the false-call rate a 95% interval allows.
const alpha = 0.05

// Level is the confidence level of an interval looked at looks times with
// Bonferroni's split of alpha: 0.95, 0.975, 0.983, ...
func Level(looks int) float64 {
	return 1 - alpha/float64(max(looks, 1))
}

// Widened is the interval of est from its sorted bootstrap draws, corrected
// for looks: the percentile interval at Level(looks), or, when wider, the
// 95% percentile interval stretched about est by z(1-alpha/2k)/z(1-alpha/2)
// (the ratio a normal interval widens by: 1.14 for 2 looks, 1.27 for 4).
// The stretch is there because the bootstrap distribution of a median of a
// few rounds is a handful of values: with 5 rounds its 95% and its 99%
// interval are both the most extreme rounds, so a higher level alone would
// not widen it at all.
func Widened(est float64, draws []float64, looks int) [2]float64 {
	lo95 := stat.Quantile(alpha/2, stat.Empirical, draws, nil)
	hi95 := stat.Quantile(1-alpha/2, stat.Empirical, draws, nil)
	if looks <= 1 {
		return [2]float64{lo95, hi95}
	}
	a := alpha / float64(looks)
	lo := stat.Quantile(a/2, stat.Empirical, draws, nil)
	hi := stat.Quantile(1-a/2, stat.Empirical, draws, nil)
	r := distuv.UnitNormal.Quantile(1-a/2) / distuv.UnitNormal.Quantile(1-alpha/2)
	return [2]float64{math.Min(lo, est-r*(est-lo95)), math.Max(hi, est+r*(hi95-est))}
}

// madToSigma turns a median absolute deviation into the standard deviation
// of a normal sample with that MAD (Rousseeuw & Croux 1993): 1/Φ⁻¹(3/4).
const madToSigma = 1.4826

// Spread is a robust estimate of the standard deviation of xs: 1.4826 ×
// their median absolute deviation, the standard deviation a normal sample
// with that MAD would have. Unlike the largest deviation or the standard
// deviation, one outlier cannot set it (its breakdown point is 50%). 0 for
// fewer than two values.
func Spread(xs []float64) float64 {
	if len(xs) < 2 {
		return 0
	}
	m := Median(xs)
	dev := make([]float64, len(xs))
	for i, x := range xs {
		dev[i] = math.Abs(x - m)
	}
	return madToSigma * Median(dev)
}

// RelSpread is Spread relative to the median: how far one value of xs
// lands from their median, as a fraction of it. 0 for fewer than two
// values or a median of 0.
func RelSpread(xs []float64) float64 {
	m := Median(xs)
	if len(xs) < 2 || m == 0 {
		return 0
	}
	return Spread(xs) / math.Abs(m)
}

// DetrendedRelSpread is RelSpread of xs taken off the line they follow
// over their places at (the order the runs were made; Sen's slope): how
// far one run lands from where the series was at that moment, relative to
// its median. A drift over the series is not noise. Plain RelSpread when
// the places are not given in increasing order, and for fewer than
// minDetrend values.
func DetrendedRelSpread(at []int, xs []float64) float64 {
	m := Median(xs)
	if len(xs) < 2 || m == 0 {
		return 0
	}
	if len(xs) < minDetrend || !increasing(at, len(xs)) {
		return RelSpread(xs)
	}
	slope := senSlope(at, xs)
	r := make([]float64, len(xs))
	for i, x := range xs {
		r[i] = x - slope*float64(at[i]-at[0])
	}
	return Spread(r) / math.Abs(m)
}

// minDetrend: a line through fewer values leaves nothing to measure the
// spread with. Sen's slope of three values is the slope of two of them,
// so the line passes through both, two residuals of three are equal and
// their median absolute deviation is 0: every three-run baseline had
// "noise ±0%", one beside runs of 26,811, 16,440 and 22,923 tx/s (a
// quiet-machine test's guard on the noise never fired).
const minDetrend = 4

// Trend is a monotone trend found in a series of runs in the order they
// ran: each later run lower (or higher) than the earlier ones more often
// than chance allows (a Mann-Kendall test), and by how much the series
// moved from its start to its end along Sen's slope, relative to its
// median.
type Trend struct {
	// S is Mann-Kendall's statistic: the pairs (i<j) with x[j] > x[i]
	// minus those with x[j] < x[i]; P its two-sided p-value.
	S int
	P float64
	// Change is Sen's slope (the median of the pairwise slopes) times the
	// series' span, over its median: -0.2 when it fell by a fifth. Unlike
	// P it does not need every run in order: one run out of place moves
	// Sen's slope little (its breakdown point is 29%), so five runs that
	// fall with one out of order still show how far the batch drifted.
	Change float64
	// PerRun is Sen's slope over the median: the drift from one run to
	// the next (Change over the span in runs).
	PerRun float64
}

// TrendOf tests xs (in run order) for a monotone trend. The p-value is
// exact, from the distribution of S over every order of n distinct values
// (n ≤ 10; ties count as neither), and from the normal approximation with
// continuity correction above. Fewer than 4 values cannot show one (the
// smallest two-sided p with 3 is 0.33): P is then 1.
func TrendOf(xs []float64) Trend {
	n := len(xs)
	t := Trend{P: 1}
	if n < 2 {
		return t
	}
	var slopes []float64
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			switch {
			case xs[j] > xs[i]:
				t.S++
			case xs[j] < xs[i]:
				t.S--
			}
			slopes = append(slopes, (xs[j]-xs[i])/float64(j-i))
		}
	}
	if m := Median(xs); m != 0 {
		t.PerRun = Median(slopes) / math.Abs(m)
		t.Change = t.PerRun * float64(n-1)
	}
	if n >= 4 {
		t.P = mannKendallP(n, t.S)
	}
	return t
}

// mannKendallP is the two-sided p-value of Mann-Kendall's S for n values.
func mannKendallP(n, s int) float64 {
	abs := s
	if abs < 0 {
		abs = -abs
	}
	if n > 10 {
		v := float64(n*(n-1)*(2*n+5)) / 18
		z := (float64(abs) - 1) / math.Sqrt(v)
		return math.Min(1, math.Erfc(z/math.Sqrt2))
	}
	// The number of permutations of n values with each count of
	// inversions (Mahonian numbers); S = pairs - 2 × inversions.
	pairs := n * (n - 1) / 2
	counts := []float64{1}
	for k := 2; k <= n; k++ {
		next := make([]float64, len(counts)+k-1)
		for inv, c := range counts {
			for add := 0; add < k; add++ {
				next[inv+add] += c
			}
		}
		counts = next
	}
	var total, tail float64
	for inv, c := range counts {
		total += c
		sv := pairs - 2*inv
		if sv < 0 {
			sv = -sv
		}
		if sv >= abs {
			tail += c
		}
	}
	return tail / total
}

// MedianInterval is the 95% bootstrap percentile interval of the median
// of xs (the seed fixed); both ends are the value for one.
func MedianInterval(xs []float64) [2]float64 {
	if len(xs) == 0 {
		return [2]float64{}
	}
	return Widened(Median(xs), medianDraws(xs), 1)
}
