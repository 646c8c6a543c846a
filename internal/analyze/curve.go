package analyze

import (
	"fmt"
	"math"
	"slices"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/units"
)

// placeOnCurve places the workload on the device curve (diagnose
// --device-curve): its own requests per second on the curve's device, at
// the depth it issued them (the mean of its requests' depth in the driver
// at their issue), against what the device gave at that depth, and what
// the knee gives. The curve is 4 KiB random reads: a workload of other
// sizes or of writes is set against it as requests, and the words say so.
func placeOnCurve(run *model.Run) {
	c := run.Experiments.DeviceCurve
	c.Placement = ""
	st := run.Storage
	w := window(run)
	if len(c.Points) == 0 || st == nil || w <= 0 {
		return
	}
	var reqs, depthSum, depthN float64
	var reads, all int64
	for _, d := range st.Devices {
		if c.Device != "" && d.Name != c.Device && !slices.Contains(c.Disks, d.Name) {
			continue
		}
		for _, o := range d.Ops {
			if o.Op != "read" && o.Op != "write" {
				continue
			}
			reqs += float64(o.WorkloadRequests)
			all += o.WorkloadRequests
			if o.Op == "read" {
				reads += o.WorkloadRequests
			}
			for _, r := range o.WorkloadDepth {
				depthSum += float64(r.Low+r.High) / 2 * float64(r.Count)
				depthN += float64(r.Count)
			}
		}
	}
	if reqs == 0 || depthN == 0 {
		return
	}
	depth := depthSum / depthN
	iops := reqs / w
	at := curveAt(c.Points, depth)
	if at <= 0 {
		return
	}
	s := fmt.Sprintf("the workload's %s requests a second at a mean depth of %.1f are %.0f%% of the %s the device gave at that depth",
		units.FormatCount(int64(iops)), depth, 100*iops/at, units.FormatCount(int64(at)))
	if c.Knee > 0 {
		k := curveAt(c.Points, float64(c.Knee))
		if k > at*(1+curveWorth) {
			s += fmt.Sprintf("; at depth %d it gives %.1fx that", c.Knee, k/at)
		}
	} else if last := c.Points[len(c.Points)-1]; last.IOPS > at*(1+curveWorth) {
		s += fmt.Sprintf("; at depth %d it gives %.1fx that, and had not stopped growing", last.Depth, last.IOPS/at)
	}
	if reads < all {
		s += fmt.Sprintf(" (the curve is %s random reads; %.0f%% of the workload's requests were writes)", units.FormatSize(c.BS), 100*float64(all-reads)/float64(all))
	}
	c.Placement = s
}

// curveWorth: a deeper queue is worth naming when it gives a tenth more.
const curveWorth = 0.10

// curveAt is the curve's IOPS at depth, interpolated between its points in
// log2 of the depth; the first point's below it, the last's beyond.
func curveAt(ps []model.CurvePoint, depth float64) float64 {
	if depth <= float64(ps[0].Depth) {
		return ps[0].IOPS
	}
	for i := 1; i < len(ps); i++ {
		a, b := ps[i-1], ps[i]
		if depth <= float64(b.Depth) {
			la, lb := math.Log2(float64(a.Depth)), math.Log2(float64(b.Depth))
			f := (math.Log2(depth) - la) / (lb - la)
			return a.IOPS + f*(b.IOPS-a.IOPS)
		}
	}
	return ps[len(ps)-1].IOPS
}
