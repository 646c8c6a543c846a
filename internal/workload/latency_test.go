package workload

import "testing"

func TestRecorderPercentilesAndBuckets(t *testing.T) {
	r := NewRecorder()
	// 1..100000 ns, once each: p50 is 50000 within HDR's 0.1%.
	for v := int64(1); v <= 100000; v++ {
		r.Record(v)
	}
	r.Record(0) // clamped to 1, not lost
	s := r.Summary()
	if s.Count != 100001 {
		t.Fatalf("count %d, want 100001", s.Count)
	}
	within := func(name string, got, want int64) {
		if d := float64(got-want) / float64(want); d > 0.001 || d < -0.001 {
			t.Errorf("%s = %d, want %d within 0.1%%", name, got, want)
		}
	}
	within("p50", s.P50Ns, 50000)
	within("p90", s.P90Ns, 90000)
	within("p99", s.P99Ns, 99000)
	within("p99.9", s.P999Ns, 99900)
	within("max", s.MaxNs, 100000)
	if s.MinNs != 1 {
		t.Errorf("min %d, want 1", s.MinNs)
	}
	var sum int64
	for i, b := range s.Buckets {
		sum += b.Count
		if b.HighNs < b.LowNs {
			t.Errorf("bucket %d: high %d < low %d", i, b.HighNs, b.LowNs)
		}
		if i > 0 && b.LowNs <= s.Buckets[i-1].HighNs {
			t.Errorf("bucket %d [%d,%d] overlaps the one before [%d,%d]", i, b.LowNs, b.HighNs, s.Buckets[i-1].LowNs, s.Buckets[i-1].HighNs)
		}
	}
	if sum != s.Count {
		t.Errorf("buckets hold %d values, want %d", sum, s.Count)
	}
	// 17 octaves at 4 buckets each, at most.
	if len(s.Buckets) > 17*bucketsPerOctave+1 {
		t.Errorf("%d buckets: the record should stay small", len(s.Buckets))
	}
	other := NewRecorder()
	other.Record(5)
	r.Merge(other)
	if r.Count() != 100002 {
		t.Errorf("merge: count %d", r.Count())
	}
	if e := NewRecorder().Summary(); e.Count != 0 || len(e.Buckets) != 0 {
		t.Errorf("empty recorder summarises as %+v", e)
	}
}
