package workload

import (
	"math"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// Latency histograms keep 3 significant digits (0.1% resolution) from 1 ns to
// 1 hour, what fio's and hyperfine's percentiles need and what HDR histograms
// give in a few tens of KiB per histogram.
const (
	latencyLowestNs  = 1
	latencyHighestNs = 3600 * 1e9
	latencySigFigs   = 3
)

// Recorder records latencies in nanoseconds. It is not safe for concurrent
// use: give each thread its own and Merge them at the end.
type Recorder struct {
	h *hdrhistogram.Histogram
}

// NewRecorder returns an empty latency recorder.
func NewRecorder() *Recorder {
	return &Recorder{h: hdrhistogram.New(latencyLowestNs, latencyHighestNs, latencySigFigs)}
}

// Record adds one latency. Values out of range are clamped so none is lost.
func (r *Recorder) Record(ns int64) {
	if ns < latencyLowestNs {
		ns = latencyLowestNs
	}
	if ns > latencyHighestNs {
		ns = latencyHighestNs
	}
	_ = r.h.RecordValue(ns)
}

// Merge adds other's values to r.
func (r *Recorder) Merge(other *Recorder) { r.h.Merge(other.h) }

// Count is the number of values recorded.
func (r *Recorder) Count() int64 { return r.h.TotalCount() }

// Summary returns the distribution as the run record stores it.
func (r *Recorder) Summary() model.Latency {
	h := r.h
	if h.TotalCount() == 0 {
		return model.Latency{}
	}
	l := model.Latency{
		Count:  h.TotalCount(),
		MinNs:  h.Min(),
		MeanNs: h.Mean(),
		StdNs:  h.StdDev(),
		P50Ns:  h.ValueAtQuantile(50),
		P90Ns:  h.ValueAtQuantile(90),
		P99Ns:  h.ValueAtQuantile(99),
		P999Ns: h.ValueAtQuantile(99.9),
		MaxNs:  h.Max(),
	}
	l.Buckets = coarseBuckets(h)
	return l
}

// bucketsPerOctave sets the resolution of the distribution kept in the run
// record: quarter octaves (each bucket 19% wider than the last) draw a
// latency histogram finely enough (biolatency draws whole octaves) in a few
// dozen buckets, where the HDR histogram's 3-digit buckets would be thousands.
// Percentiles are computed from the full-resolution histogram before this.
const bucketsPerOctave = 4

func coarseBuckets(h *hdrhistogram.Histogram) []model.Bucket {
	var out []model.Bucket
	for _, b := range h.Distribution() {
		if b.Count == 0 {
			continue
		}
		idx := int(math.Floor(math.Log2(float64(max(b.From, 1))) * bucketsPerOctave))
		low := int64(math.Ceil(math.Exp2(float64(idx) / bucketsPerOctave)))
		high := int64(math.Ceil(math.Exp2(float64(idx+1)/bucketsPerOctave))) - 1
		if n := len(out); n > 0 && out[n-1].LowNs == low {
			out[n-1].Count += b.Count
			continue
		}
		out = append(out, model.Bucket{LowNs: low, HighNs: max(high, low), Count: b.Count})
	}
	return out
}
