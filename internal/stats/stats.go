// Package stats holds the summary statistics perfsleuth reports: medians
// now, confidence intervals with the experiments. Medians, not means,
// because runs on a shared machine have outliers in one direction.
package stats

import (
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
