package analyze

import (
	"fmt"
	"math"
	"sort"
	"strings"
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
// between two ticks); the kernel's own accounting within
// model.KernelAgreeFrac (model.KernelCheck.Disagreement).
const (
	sumToleranceSec  = 0.001
	sumToleranceFrac = 0.001
	samplesSlack     = 0.10
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

// checks are the invariants perfsleuth holds its record to, in the order
// their disagreements are listed. Each says, in words, each pair of figures
// that disagree, and nothing when the record lacks the part it reads. One
// line per check (docs/figures.md lists them all).
var checks = []func(run *model.Run) []string{
	onAccounting(accountingSums),
	threadCounts,
	onAccounting(samplesVsCPU),
	onAccounting(kernelAgreementOf),
	onAccounting(waitSums),
	onAccounting(activitySums),
	onAccounting(syncSplits),
	blockSums,
	depthOneBusy,
	driverDrift,
	writtenBack,
	filesWithinAccounting,
	readServiceWithinCalls,
	findingsHold,
}

// onAccounting makes a check of the time accounting alone a check of the
// record.
func onAccounting(f func(*model.TimeAccounting) []string) func(*model.Run) []string {
	return func(run *model.Run) []string { return f(run.TimeAccounting) }
}

// Inconsistencies lists, in words, each pair of the record's figures that
// disagree: what perfsleuth.inconsistent reports. The probes' tests hold
// the parts of a record they make to it.
func Inconsistencies(run *model.Run) []string {
	var ev []string
	for _, c := range checks {
		ev = append(ev, c(run)...)
	}
	return ev
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

// threadCounts: the threads and processes the accounting counted cover the
// ones it lists, and the ones /proc saw run.
//
// What timeacct's programs guarantee (bpf/timeacct.bpf.c): every thread of
// a tracked process gets an entry when first seen (the seed at attach, its
// creation's wake-up, or any event), and the alive counter goes up by one
// then and down by one at its exit, which marks the entry exited (kept, or
// folded into its process's aggregate) and counts the exit. So, with
// nothing dropped:
//   - exact: the threads listed as exited (folded ones included) are the
//     exits counted;
//   - bounds: the threads listed alive at the end are at most the peak
//     alive at once (the counter ends at exactly them), and the peak is at
//     most the threads listed in all (each raised it once); every thread
//     created has an entry, so the threads created are at most the threads
//     listed in all (those there at attach are listed too); processes
//     created are among the threads created (the count includes them);
//   - a thread /proc saw run in its window (some CPU ticks or context
//     switches there: a zombie, which /proc still lists, does neither) was
//     alive inside the accounting's window, which holds /proc's (timeacct
//     attaches first and stops last), so its process lists at least as
//     many threads.
//
// The exact figures allow one per CPU: a program still running on a CPU
// when the probe stops can count a thread, or an exit, that the map read
// just before or after it does not show. When events were dropped (a full
// map) only the bounds that losing entries cannot break are held.
func threadCounts(run *model.Run) []string {
	ta := run.TimeAccounting
	if ta == nil || ta.Source != "ebpf" {
		return nil
	}
	var alive, exited int64
	perPID := map[int]int64{}
	for _, t := range ta.Threads {
		n := int64(1)
		switch {
		case t.Folded > 0:
			n = int64(t.Folded)
			exited += n
		case t.Exited:
			exited++
		default:
			alive++
		}
		perPID[t.PID] += n
	}
	listed := alive + exited
	slack := int64(max(run.Host.CPUsOnline, 1))
	var out []string
	if alive > int64(ta.PeakThreads) {
		out = append(out, fmt.Sprintf("%d threads are listed alive at the end, and the accounting counted at most %d alive at once", alive, ta.PeakThreads))
	}
	if ta.ProcessesCreated > ta.ThreadsCreated {
		out = append(out, fmt.Sprintf("%d processes created, more than the %d threads created, which count them", ta.ProcessesCreated, ta.ThreadsCreated))
	}
	if ta.Dropped > 0 {
		// Lost entries list fewer threads than were counted.
		if exited > ta.ThreadsExited+slack {
			out = append(out, fmt.Sprintf("%d threads are listed as exited, and the accounting counted %d exits", exited, ta.ThreadsExited))
		}
		return out
	}
	if d := exited - ta.ThreadsExited; d > slack || -d > slack {
		out = append(out, fmt.Sprintf("%d threads are listed as exited, and the accounting counted %d exits", exited, ta.ThreadsExited))
	}
	if int64(ta.PeakThreads) > listed+slack {
		out = append(out, fmt.Sprintf("the accounting counted %d threads alive at once, and lists %d threads in all", ta.PeakThreads, listed))
	}
	if ta.ThreadsCreated > listed+slack {
		out = append(out, fmt.Sprintf("the accounting counted %d threads created, and lists %d threads in all", ta.ThreadsCreated, listed))
	}
	if o := run.Observation; o != nil {
		ran := map[int]int64{}
		for _, u := range o.Totals.Threads {
			if u.UserSec+u.SystemSec > 0 || u.VolCtxSw+u.InvolCtxSw > 0 {
				ran[u.PID]++
			}
		}
		pids := make([]int, 0, len(ran))
		for pid := range ran {
			pids = append(pids, pid)
		}
		sort.Ints(pids)
		var short int64
		example := ""
		for _, pid := range pids {
			if d := ran[pid] - perPID[pid]; d > 0 {
				short += d
				if example == "" {
					example = fmt.Sprintf("/proc saw %d threads of pid %d run in its window, and the accounting lists %d", ran[pid], pid, perPID[pid])
				}
			}
		}
		if short > slack {
			out = append(out, fmt.Sprintf("%s (%d threads in all that /proc saw run are not in the accounting)", example, short))
		}
	}
	return out
}

// samplesVsCPU: the on-CPU samples, at their rate, are the CPU time of the
// threads they sample.
func samplesVsCPU(ta *model.TimeAccounting) []string {
	// The tick's samples are shares of the threads' cpu time, not a
	// measure of it (model.OnCPUTick).
	if ta == nil || ta.OnCPUHz <= 0 || ta.OnCPUSamples <= 0 || ta.OnCPUSource == model.OnCPUTick {
		return nil
	}
	var cpu, steal float64
	for _, t := range ta.Threads {
		cpu += t.Seconds[model.CatCPU]
		steal += t.StealSec
	}
	// A timer that expires while the host runs another guest on the
	// virtual CPU fires once when it is back: steal takes up to its own
	// time's samples away (zero when it was not measured).
	if !ta.StealMeasured {
		steal = 0
	}
	hz := float64(ta.OnCPUHz)
	hi, lo := cpu*hz, (cpu-steal)*hz
	got := float64(ta.OnCPUSamples + ta.OnCPUDropped)
	if got <= hi+3*math.Sqrt(hi)+samplesSlack*hi+2 && got >= lo-3*math.Sqrt(lo)-samplesSlack*lo-2 {
		return nil
	}
	stolen := ""
	if steal > 0 {
		stolen = fmt.Sprintf(" (%s of it steal)", units.FormatDuration(secDur(steal)))
	}
	return []string{fmt.Sprintf("%s on-CPU samples at %d Hz are %s of CPU, and the accounting has %s of CPU%s for the same threads",
		units.FormatCount(int64(got)), ta.OnCPUHz, units.FormatDuration(secDur(got/hz)), units.FormatDuration(secDur(cpu)), stolen)}
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
		// Each run on a CPU is cut a little differently by the two
		// (model.KernelSliceSec); records without the kernel's count of
		// runs are held to 5% alone.
		// Time the kernel did not charge (steal) is taken off
		// perfsleuth's side first (model.ThreadTime.UnchargedSec), and
		// the kernel's figure is known to within what its counters moved
		// while the window opened and closed (model.KernelCheck.Apart).
		d, rel, fails := c.Disagreement()
		if !fails {
			continue
		}
		runs := ""
		if c.Runs > 0 {
			runs = fmt.Sprintf(", %.1f µs per run on a CPU (%d runs)", d/float64(c.Runs)*1e6, c.Runs)
		}
		// What is taken off perfsleuth's side is said, so that the
		// figure printed follows from the one measured.
		var less []string
		if c.UnchargedSec > 0 {
			less = append(less, fmt.Sprintf("%.3fs the kernel did not charge: steal, interrupts", c.UnchargedSec))
		}
		if c.CutLagSec > 0 {
			less = append(less, fmt.Sprintf("%.3fs after the kernel had ended runs that blocked", c.CutLagSec))
		}
		unch := ""
		if len(less) > 0 {
			unch = fmt.Sprintf(" (%.3fs less %s)", c.PerfsleuthSec, strings.Join(less, ", and "))
		}
		edges := ""
		if c.KernelStaleSec > 0 {
			edges = fmt.Sprintf(" (of it %.3fs the threads' sleep, counted as run-queue wait from a stale record of their queueing)", c.KernelStaleSec)
		}
		if lo, hi := c.KernelRange(); hi-lo >= 0.0005 {
			edges += fmt.Sprintf(" (%.3f-%.3fs with what its counters moved while the window opened and closed)", lo, hi)
		}
		out = append(out, fmt.Sprintf("%s: perfsleuth %.3fs%s, the kernel's %s %.3fs%s, over %d threads (%.0f%% apart%s)",
			c.What, c.Charged(), unch, c.Source, c.KernelSec, edges, c.Threads, rel*100, runs))
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

// findingsHold: each finding's threshold holds for the figure it prints
// (its Test, which every rule gives), and a warning's cause costs a
// material share of the busy threads' time (its Share, which every warning
// and critical finding gives). Exempt: perfsleuth.* (the check's own
// finding) from both, and observer.* from the share: the observer's cost
// is the distortion of the workload's time, not a share of it.
func findingsHold(run *model.Run) []string {
	var out []string
	for _, f := range run.Findings {
		if strings.HasPrefix(f.ID, "perfsleuth.") {
			continue
		}
		switch t := f.Test; {
		case t == nil:
			out = append(out, fmt.Sprintf("%s fired without the figure and threshold it was tested on", f.ID))
		case !testHolds(*t):
			out = append(out, fmt.Sprintf("%s fired with %s %g, which is not %s %g", f.ID, t.Name, t.Value, t.Op, t.Threshold))
		}
		if f.Severity == "info" || strings.HasPrefix(f.ID, "observer.") {
			continue
		}
		switch {
		case f.Share == nil:
			out = append(out, fmt.Sprintf("%s is a %s without the share of the busy threads' time its cause costs", f.ID, f.Severity))
		case *f.Share < materialShare:
			out = append(out, fmt.Sprintf("%s is a %s, and its cause costs %.1f%% of the busy threads' time, under the %.0f%% that matters", f.ID, f.Severity, *f.Share*100, materialShare*100))
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
