package analyze

import (
	"fmt"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// Time stolen by the hypervisor. A thread on a virtual CPU counts as on
// CPU from its switch-in to its switch-out, while the host may run
// something else on that virtual CPU (steal): the thread's cpu seconds
// then hold time it did not run, which the kernel does not charge to it
// (ThreadTime.StealSec, read from its run queue's clocks). cpuStealInfo:
// 5% of the busy threads' on-CPU time stolen makes their cpu figures,
// and any comparison with a run on another host or at another time, 5%
// off what the workload itself needed; cpuStealWarning: 10% of their
// whole time is the material share.
const (
	cpuStealInfo    = 0.05
	cpuStealWarning = materialShare
)

func cpuSteal(run *model.Run) *model.Finding {
	ta := run.TimeAccounting
	if ta == nil {
		return nil
	}
	steal, cpu := ta.Steal()
	if cpu <= 0 || steal/cpu < cpuStealInfo {
		return nil
	}
	frac := steal / cpu
	s := 0.0
	if b := busySeconds(ta); b > 0 {
		s = steal / b
	}
	sev := "info"
	if s >= cpuStealWarning {
		sev = "warning"
	}
	return &model.Finding{
		Severity: sev,
		Summary:  fmt.Sprintf("the hypervisor took %.0f%% of the workload's time on a CPU: its virtual CPUs did not run (steal)", frac*100),
		Evidence: []string{
			fmt.Sprintf("steal %.3fs of cpu %.3fs (%.0f%% of the threads' whole time), counted as on CPU here and left out of the kernel's run time", steal, cpu, s*100),
			"the host is overcommitted or a neighbour is busy: its cpu figures, and a comparison with a run on another host or at another time, hold time the workload did not run; rerun where the virtual CPUs are dedicated, or compare runs with the same steal",
		},
		Test:  &model.FindingTest{Name: "share of on-CPU time stolen", Value: frac, Op: ">=", Threshold: cpuStealInfo},
		Share: &s,
	}
}
