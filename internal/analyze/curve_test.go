package analyze

import (
	"strings"
	"testing"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// TestPlaceOnCurve: a reader at depth 1 gets what the device gives at
// depth 1, and the knee's gain is named; a writer is told the curve is of
// reads; a curve of another device places nothing.
func TestPlaceOnCurve(t *testing.T) {
	curve := func() *model.DeviceCurve {
		return &model.DeviceCurve{Device: "vda", Engine: "io_uring", BS: 4096, Knee: 4, Points: []model.CurvePoint{
			{Depth: 1, IOPS: 18000}, {Depth: 2, IOPS: 34000}, {Depth: 4, IOPS: 60000}, {Depth: 8, IOPS: 64000}, {Depth: 16, IOPS: 65000}}}
	}
	run := func(dev, op string, reqs int64, depth int64) *model.Run {
		return &model.Run{
			Storage: &model.StorageIO{WindowSec: 2, Devices: []model.BlockDevice{{Name: dev, Ops: []model.BlockOp{{Op: op, Requests: reqs, WorkloadRequests: reqs,
				WorkloadDepth: []model.Range{{Low: depth, High: depth, Count: reqs}}}}}}},
			Experiments: &model.Experiments{DeviceCurve: curve()},
		}
	}
	r := run("vda", "read", 36000, 1)
	placeOnCurve(r)
	if want := "the workload's 18,000 requests a second at a mean depth of 1.0 are 100% of the 18,000 the device gave at that depth; at depth 4 it gives 3.3x that"; r.Experiments.DeviceCurve.Placement != want {
		t.Errorf("reader at depth 1:\n got %q\nwant %q", r.Experiments.DeviceCurve.Placement, want)
	}
	// Depth 3 lies between 2 and 4 in log2: 34,000 + 0.585 x 26,000.
	if got := curveAt(curve().Points, 3); got < 49000 || got > 49400 {
		t.Errorf("the curve at depth 3: %.0f, want about 49,200", got)
	}
	r = run("vda", "write", 20000, 8)
	placeOnCurve(r)
	if p := r.Experiments.DeviceCurve.Placement; !strings.Contains(p, "at a mean depth of 8.0 are 16%") || !strings.Contains(p, "100% of the workload's requests were writes") || strings.Contains(p, "gives") {
		t.Errorf("writer at depth 8: %q", p)
	}
	r = run("sdb", "read", 36000, 1)
	placeOnCurve(r)
	if p := r.Experiments.DeviceCurve.Placement; p != "" {
		t.Errorf("another device's requests placed: %q", p)
	}
}
