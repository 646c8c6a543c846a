package analyze

import (
	"fmt"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// churnPerSecond: creating 100 threads a second costs ~1-2% of a CPU in
// clone/exit alone (10-20 µs each) and, more, a cold stack and scheduler
// state per unit of work: the "one thread per message" pattern of a timer
// that spawns a thread per call. Thread pools create a handful per run.
const churnPerSecond = 100

func threadsChurn(run *model.Run) *model.Finding {
	ta := run.TimeAccounting
	if ta == nil || ta.WindowSec <= 0 {
		return nil
	}
	rate := float64(ta.ThreadsCreated) / ta.WindowSec
	if rate < churnPerSecond {
		return nil
	}
	return &model.Finding{
		Severity: "warning",
		Summary:  fmt.Sprintf("%.0f threads created per second", rate),
		Evidence: []string{
			fmt.Sprintf("%d threads created and %d exited in %.2fs (%d processes created); at most %d alive at once", ta.ThreadsCreated, ta.ThreadsExited, ta.WindowSec, ta.ProcessesCreated, ta.PeakThreads),
			"a thread per unit of work: use a pool, or a timer that does not start a thread per call",
		},
		Test: &model.FindingTest{Name: "threads created per second", Value: rate, Op: ">=", Threshold: churnPerSecond},
	}
}
