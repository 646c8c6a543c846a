package analyze

import (
	"fmt"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// cpuWaitShareWarning: runnable threads waiting for a CPU 10% of the time
// means there are more runnable threads than CPUs for a noticeable part of
// the run (on an idle machine run-queue waits are microseconds, well under 1%).
const cpuWaitShareWarning = 0.10

func cpuSaturated(run *model.Run) *model.Finding {
	ta := run.TimeAccounting
	if ta == nil || ta.WindowSec <= 0 {
		return nil
	}
	s := share(ta, model.CatCPUWait)
	demand := (ta.Total[model.CatCPU] + ta.Total[model.CatCPUWait]) / ta.WindowSec
	cpus := run.Host.CPUsOnline
	if s < cpuWaitShareWarning && (cpus == 0 || demand <= float64(cpus)) {
		return nil
	}
	return &model.Finding{
		Severity: "warning",
		Summary:  fmt.Sprintf("more runnable threads than CPUs: threads waited for a CPU %.0f%% of their time", s*100),
		Evidence: []string{
			fmt.Sprintf("on average %.2f threads were running or runnable, on %d CPUs", demand, cpus),
			fmt.Sprintf("cpu-wait %.3fs, cpu %.3fs", ta.Total[model.CatCPUWait], ta.Total[model.CatCPU]),
		},
	}
}
