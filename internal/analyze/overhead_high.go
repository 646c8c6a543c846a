package analyze

import (
	"fmt"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// Observer effect. What distorts a workload's own time is the probes'
// time spent on its own events, in its threads' path: the programs' runs
// about its threads (each run's calibrated or self-timed cost, the
// "tracked" runs of the record's probe_programs), against the wall time of
// its busy threads. (The runs about other tasks and the /proc sampler cost
// the machine, not the workload's path: on a busy machine they compete for
// CPUs, which the evidence says.) overheadShare: 5% of the workload's own
// time, where the benchmarks' targets (docs/benchmarks.md: 3% slowdown on
// buffered writes and SQLite, 10% on a pipe ping-pong) are exceeded with
// room. Regression: it judged the probes' CPU time against the workload's
// CPU time, and fired on nearly every IO-bound run, whose CPU time is small
// whatever the probes do.
const overheadShare = 0.05

// probeInPath is the probes' time on the workload's own events, in seconds.
func probeInPath(ta *model.TimeAccounting) float64 {
	var ns float64
	for _, p := range ta.Programs {
		ns += float64(p.TrackedRuns) * p.TrackedNs
	}
	return ns / 1e9
}

func overheadHigh(run *model.Run) *model.Finding {
	ta := run.TimeAccounting
	if ta == nil || ta.Source != "ebpf" {
		return nil
	}
	busy := busySeconds(ta)
	if busy <= 0 {
		return nil
	}
	inPath := probeInPath(ta)
	d := inPath / busy
	if d < overheadShare {
		return nil
	}
	sampler := 0.0
	if o := run.Observation; o != nil {
		sampler = o.ObserverCPUSec
	}
	return &model.Finding{
		Severity: "warning",
		Summary:  fmt.Sprintf("observing it cost %.1f%% of the workload's own time: it may have changed the result", d*100),
		Evidence: []string{
			fmt.Sprintf("the eBPF programs spent %.3fs on the workload's own events (context switches, wake-ups, its calls) in %.3fs of its busy threads' time", inPath, busy),
			fmt.Sprintf("in all, the programs took %.3fs of CPU on the machine's events and the /proc sampler %.3fs", ta.ProbeCPUSec, sampler),
			"the cost grows with the workload's context switches (and, with --syscalls or --storage, its calls): drop those options, or measure the slowdown itself by running it unobserved (bench, or --no-ebpf)",
		},
		// No Share: this warning is about the measurement, not a cause of
		// the workload's time, and a smaller distortion than the material
		// 10% already spoils a comparison of a few percent.
		Test: &model.FindingTest{Name: "probe time on the workload's events / its busy time", Value: d, Op: ">=", Threshold: overheadShare},
	}
}
