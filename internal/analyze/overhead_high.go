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
	if wl <= 0 || o.ObserverCPUSec/wl < overheadShare {
		return nil
	}
	return &model.Finding{
		Severity: "warning",
		Summary:  fmt.Sprintf("the observer used %.0f%% as much CPU as the workload: it may have changed the result", o.ObserverCPUSec/wl*100),
		Evidence: []string{
			fmt.Sprintf("observer %.3fs of CPU, workload %.3fs", o.ObserverCPUSec, wl),
			"raise --interval to sample less often",
		},
	}
}
