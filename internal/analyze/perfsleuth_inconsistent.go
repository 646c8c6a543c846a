package analyze

import (
	"fmt"
	"math"
	"time"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/units"
)

// perfsleuth.inconsistent: perfsleuth checks its own record. Each figure it
// prints must agree with the others that describe the same thing, and with
// the kernel's own accounting where the record holds both; a disagreement
// is a finding about perfsleuth, naming the two figures, never silent. A
// number that contradicts another costs the user's trust in all of them.
//
// Tolerances: a thread's categories add up to its wall time within 1 ms or
// 0.1% (sumTolerance: intervals are closed at the same clock reads, and
// rounding to seconds is all that separates them); shares to 100% within
// half a point; on-CPU samples match the CPU time at their rate within
// three standard deviations of a Poisson count plus 10%
// (samplesSlack: sampling runs on a timer, and a short burst can fall
// between two ticks); the kernel's own accounting within kernelAgreement.
const (
	sumToleranceSec  = 0.001
	sumToleranceFrac = 0.001
	samplesSlack     = 0.10
	// kernelAgreement: the bar for perfsleuth's accounting against
	// the kernel's own (schedstat's run and run-queue time): 5%.
	kernelAgreement = 0.05
	// kernelAgreementMinSec: below 10 ms a difference is a few
	// scheduler ticks of the kernel's figures, not a disagreement.
	kernelAgreementMinSec = 0.010
	// materialShare: a warning's cause must cost a tenth of the busy
	// threads' time (materialChange: the change that makes a bottleneck).
	materialShare = materialChange
)

func perfsleuthInconsistent(run *model.Run) *model.Finding {
	ev := Inconsistencies(run)
	if len(ev) == 0 {
		return nil
	}
	return &model.Finding{
		Severity: "warning",
		Summary:  fmt.Sprintf("perfsleuth's own figures disagree (%d %s): the figures named below cannot all be right", len(ev), plural(len(ev), "case", "cases")),
		Evidence: append(ev, "this is perfsleuth's fault, not the workload's: please report it with the run record (--json)"),
	}
}

// Inconsistencies lists, in words, each pair of the record's figures that
// disagree: what perfsleuth.inconsistent reports. The probes' tests hold
// the parts of a record they make to it.
func Inconsistencies(run *model.Run) []string {
	var ev []string
	ev = append(ev, accountingSums(run.TimeAccounting)...)
	ev = append(ev, threadCounts(run.TimeAccounting)...)
	ev = append(ev, samplesVsCPU(run.TimeAccounting)...)
	ev = append(ev, kernelAgreementOf(run.TimeAccounting)...)
	ev = append(ev, waitSums(run.TimeAccounting)...)
	ev = append(ev, activitySums(run.TimeAccounting)...)
	if run.Storage != nil {
		ev = append(ev, blockSums(run.Storage.Devices, window(run))...)
		ev = append(ev, writtenBack(run.Storage)...)
	}
	return append(ev, findingsHold(run.Findings)...)
}

// accountingSums: each thread's categories add up to its wall time, and
// the busy threads' shares to 100%.
func accountingSums(ta *model.TimeAccounting) []string {
	if ta == nil {
		return nil
	}
	var out []string
	bad := 0
	for _, t := range ta.Threads {
		var sum float64
		for _, s := range t.Seconds {
			sum += s
		}
		if d := math.Abs(sum - t.WallSec); d > max(sumToleranceSec, sumToleranceFrac*t.WallSec) {
			if bad < 3 {
				out = append(out, fmt.Sprintf("thread %s (tid %d): its categories add up to %.3fs, its wall time is %.3fs", t.Comm, t.TID, sum, t.WallSec))
			}
			bad++
		}
	}
	if bad > 3 {
		out = append(out, fmt.Sprintf("and %d more threads whose categories do not add up to their wall time", bad-3))
	}
	if busy := busySeconds(ta); busy > 0 {
		var shares float64
		for _, c := range model.Categories {
			shares += share(ta, c)
		}
		if math.Abs(shares-1) > 0.005 {
			out = append(out, fmt.Sprintf("the busy threads' shares add up to %.1f%%, not 100%%", shares*100))
		}
	}
	return out
}

// threadCounts: the threads the accounting counted alive at once cover the
// ones it lists alive, and its exits the ones it lists exited.
func threadCounts(ta *model.TimeAccounting) []string {
	if ta == nil || ta.Source != "ebpf" {
		return nil
	}
	var alive, exited int64
	for _, t := range ta.Threads {
		switch {
		case t.Folded > 0:
			exited += int64(t.Folded)
		case t.Exited:
			exited++
		default:
			alive++
		}
	}
	var out []string
	if alive > int64(ta.PeakThreads) {
		out = append(out, fmt.Sprintf("%d threads are listed alive at the end, and the accounting counted at most %d alive at once", alive, ta.PeakThreads))
	}
	if exited > ta.ThreadsExited {
		out = append(out, fmt.Sprintf("%d threads are listed as exited, and the accounting counted %d exits", exited, ta.ThreadsExited))
	}
	return out
}

// samplesVsCPU: the on-CPU samples, at their rate, are the CPU time of the
// threads they sample.
func samplesVsCPU(ta *model.TimeAccounting) []string {
	if ta == nil || ta.OnCPUHz <= 0 || ta.OnCPUSamples <= 0 {
		return nil
	}
	var cpu float64
	for _, t := range ta.Threads {
		cpu += t.Seconds[model.CatCPU]
	}
	want := cpu * float64(ta.OnCPUHz)
	got := float64(ta.OnCPUSamples + ta.OnCPUDropped)
	if math.Abs(got-want) <= 3*math.Sqrt(want)+samplesSlack*want+2 {
		return nil
	}
	return []string{fmt.Sprintf("%s on-CPU samples at %d Hz are %s of CPU, and the accounting has %s of CPU for the same threads",
		units.FormatCount(int64(got)), ta.OnCPUHz, units.FormatDuration(secDur(got/float64(ta.OnCPUHz))), units.FormatDuration(secDur(cpu)))}
}

// kernelAgreementOf: the accounting's cpu and cpu-wait against the
// kernel's own per-thread figures (schedstat) over the same threads, and
// not its storage waits, which delay accounting counts otherwise
// (timeacct's kernel.go says how).
func kernelAgreementOf(ta *model.TimeAccounting) []string {
	if ta == nil || ta.Kernel == nil {
		return nil
	}
	var out []string
	for _, c := range ta.Kernel.Checks {
		if !c.Judged {
			continue
		}
		d := math.Abs(c.PerfsleuthSec - c.KernelSec)
		if d <= kernelAgreementMinSec || d <= kernelAgreement*max(c.KernelSec, c.PerfsleuthSec) {
			continue
		}
		out = append(out, fmt.Sprintf("%s: perfsleuth %.3fs, the kernel's %s %.3fs, over %d threads (%.0f%% apart)",
			c.What, c.PerfsleuthSec, c.Source, c.KernelSec, c.Threads, d/max(c.KernelSec, c.PerfsleuthSec)*100))
	}
	return out
}

// blockSums: every histogram of a block op holds each of its requests once
// (the depth histogram each one issued), and a request's time in the
// driver is within its whole time.
func blockSums(devs []model.BlockDevice, w float64) []string {
	var out []string
	for _, d := range devs {
		if b := d.DriverBusySec; b != nil && w > 0 && *b > w*(1+sumToleranceFrac)+sumToleranceSec {
			out = append(out, fmt.Sprintf("%s: busy in the driver %s, longer than the window, %s", devName(d),
				units.FormatNs(*b*1e9), units.FormatNs(w*1e9)))
		}
		for _, o := range d.Ops {
			for _, h := range []struct {
				name string
				rs   []model.Range
				want int64
			}{{"size", o.Size, o.Requests}, {"queue", o.Queue, o.Requests}, {"service", o.Service, o.Requests}, {"depth", o.Depth, o.Issued}} {
				// Records made before requests issued were counted
				// (v0.x) have none: their depth has nothing to hold to.
				if h.name == "depth" && o.Issued == 0 {
					continue
				}
				if got := histTotal(h.rs); got != h.want {
					out = append(out, fmt.Sprintf("%s %s: %s requests, and its %s histogram holds %s", devName(d), o.Op,
						units.FormatCount(h.want), h.name, units.FormatCount(got)))
				}
			}
			if o.WorkloadLatencyMeanSec > 0 && o.WorkloadServiceMeanSec > o.WorkloadLatencyMeanSec*1.0001 {
				out = append(out, fmt.Sprintf("%s %s: the workload's requests spent %s in the driver on average, more than their whole time, %s",
					devName(d), o.Op, units.FormatNs(o.WorkloadServiceMeanSec*1e9), units.FormatNs(o.WorkloadLatencyMeanSec*1e9)))
			}
		}
	}
	return out
}

// waitSums: each thread's waits (the wait-for graph) add up to its time
// off the CPU, category by category; the exited threads folded into their
// process's entry are summed there.
func waitSums(ta *model.TimeAccounting) []string {
	if ta == nil || ta.Waits == nil {
		return nil
	}
	type key struct {
		pid, tid int
	}
	listed := map[key]bool{}
	for _, t := range ta.Threads {
		listed[key{t.PID, t.TID}] = true
	}
	sums := map[key]map[string]float64{}
	for _, w := range ta.Waits {
		k := key{w.PID, w.TID}
		if !listed[k] {
			k.tid = 0
		}
		if sums[k] == nil {
			sums[k] = map[string]float64{}
		}
		sums[k][w.Category] += w.Seconds
	}
	var out []string
	for _, t := range ta.Threads {
		got := sums[key{t.PID, t.TID}]
		for _, c := range model.Categories {
			if c == model.CatCPU || c == model.CatUnknown {
				continue
			}
			want := t.Seconds[c]
			if d := math.Abs(got[c] - want); d > sumToleranceSec && d > sumToleranceFrac*want {
				out = append(out, fmt.Sprintf("thread %d (%s): %s %s in the accounting, %s in its waits", t.TID, t.Comm, c,
					units.FormatNs(want*1e9), units.FormatNs(got[c]*1e9)))
			}
		}
	}
	return out
}

// writtenBack: the page cache's "written to disk for its files" is the
// block table's write bytes of the workload and of writeback on its
// behalf, the same requests.
func writtenBack(st *model.StorageIO) []string {
	if st.Cache == nil {
		return nil
	}
	var sum int64
	for _, d := range st.Devices {
		for _, o := range d.Ops {
			if o.Op == "write" {
				sum += o.WorkloadBytes + o.WritebackBytes
			}
		}
	}
	if st.Cache.WrittenBackBytes == sum {
		return nil
	}
	return []string{fmt.Sprintf("the page cache says %s written to disk for the workload's files, the block table's writes of the workload and its writeback %s",
		units.FormatSize(st.Cache.WrittenBackBytes), units.FormatSize(sum))}
}

// findingsHold: each finding's threshold holds for the figure it prints,
// and a warning's cause costs a material share of the time.
func findingsHold(fs []model.Finding) []string {
	var out []string
	for _, f := range fs {
		if t := f.Test; t != nil && !testHolds(*t) {
			out = append(out, fmt.Sprintf("%s fired with %s %g, which is not %s %g", f.ID, t.Name, t.Value, t.Op, t.Threshold))
		}
		if f.Severity == "warning" && f.Share != nil && *f.Share < materialShare {
			out = append(out, fmt.Sprintf("%s is a warning, and its cause costs %.1f%% of the busy threads' time, under the %.0f%% that matters", f.ID, *f.Share*100, materialShare*100))
		}
	}
	return out
}

func secDur(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// testHolds says whether a finding's test passes.
func testHolds(t model.FindingTest) bool {
	switch t.Op {
	case ">=":
		return t.Value >= t.Threshold
	case ">":
		return t.Value > t.Threshold
	case "<":
		return t.Value < t.Threshold
	case "<=":
		return t.Value <= t.Threshold
	}
	return false
}
