package agent

import "math"

// Latency histograms kept across windows: the run records' log2 buckets
// ([low, high] ns) added into fixed bounds, 2^10 ns (1 µs) to 2^35 ns
// (34 s), so that each window's buckets land in the same ones.
const (
	histFirstLog2 = 10
	histBounds    = 26
)

// histLe are the upper bounds in seconds.
var histLe = func() []float64 {
	le := make([]float64, histBounds)
	for i := range le {
		le[i] = math.Ldexp(1, histFirstLog2+i) / 1e9
	}
	return le
}()

// hist is one latency histogram: counts per bound (not cumulative), and
// the count and sum of everything added (past the last bound too).
type hist struct {
	counts [histBounds]uint64
	count  uint64
	sum    float64
}

// add adds n values of at most highNs.
func (h *hist) add(highNs, n int64) {
	if n <= 0 {
		return
	}
	h.count += uint64(n)
	for i := range histBounds {
		if float64(highNs) <= math.Ldexp(1, histFirstLog2+i) {
			h.counts[i] += uint64(n)
			return
		}
	}
}
