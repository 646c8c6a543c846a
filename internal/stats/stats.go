// Package stats holds the summary statistics perfsleuth reports: medians
// now, confidence intervals with the experiments. Medians, not means,
// because runs on a shared machine have outliers in one direction.
package stats

import "slices"

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
