// Package stats holds the summary statistics perfsleuth reports: medians
// now, confidence intervals with the experiments. Medians, not means,
// because runs on a shared machine have outliers in one direction.
package stats

import (
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/stat"
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

// PairedChangeInterval is ChangeInterval for paired samples: a[i] and b[i]
// ran together (one right after the other, in one round of an interleaved
// comparison), so a resample draws rounds, keeping each pair, and what the
// two runs of a round shared (the machine's state then) cancels out. a and
// b must have the same length.
func PairedChangeInterval(a, b []float64, change func(ma, mb float64) float64) (lo, hi float64) {
	n := min(len(a), len(b))
	if n == 0 {
		return 0, 0
	}
	rng := rand.New(rand.NewPCG(1, 2))
	ra, rb := make([]float64, n), make([]float64, n)
	draws := make([]float64, bootstrapResamples)
	for i := range draws {
		for j := range ra {
			k := rng.IntN(n)
			ra[j], rb[j] = a[k], b[k]
		}
		draws[i] = change(Median(ra), Median(rb))
	}
	slices.Sort(draws)
	return stat.Quantile(0.025, stat.Empirical, draws, nil), stat.Quantile(0.975, stat.Empirical, draws, nil)
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
	// series' span, over its median: -0.2 when it fell by a fifth.
	Change float64
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
		t.Change = Median(slopes) * float64(n-1) / math.Abs(m)
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
