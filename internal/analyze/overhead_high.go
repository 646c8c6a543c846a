package analyze

import (
	"fmt"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// overheadShare: an observer that uses 5% of the CPU the workload used may
// have changed the result measurably on a machine with few cores (it
// competes for them); the benchmarks' targets are 3% slowdown.
const overheadShare = 0.05

func overheadHigh(run *model.Run) *model.Finding {
	o := run.Observation
	if o == nil {
		return nil
	}
	wl := o.Totals.Process.UserSec + o.Totals.Process.SystemSec
	probe := 0.0
	if ta := run.TimeAccounting; ta != nil {
		probe = ta.ProbeCPUSec
	}
	cost := o.ObserverCPUSec + probe
	if wl <= 0 || cost/wl < overheadShare {
		return nil
	}
	return &model.Finding{
		Severity: "warning",
		Summary:  fmt.Sprintf("observing cost %.0f%% as much CPU as the workload used: it may have changed the result", cost/wl*100),
		Evidence: []string{
			fmt.Sprintf("/proc sampling %.3fs and eBPF programs %.3fs of CPU, workload %.3fs", o.ObserverCPUSec, probe, wl),
			"the eBPF cost grows with context switches (about 1 µs each for the workload's threads); raise --interval to sample /proc less often, or --no-ebpf",
		},
	}
}
