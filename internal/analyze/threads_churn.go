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

// churnActivity is the activity class (timeacct's, from the on-CPU
// samples) that holds making and ending threads: clone, exit, and the
// mmap, mprotect and munmap of their stacks are "other" syscalls.
const churnActivity = "other"

func threadsChurn(run *model.Run) *model.Finding {
	ta := run.TimeAccounting
	if ta == nil || ta.WindowSec <= 0 {
		return nil
	}
	rate := float64(ta.ThreadsCreated) / ta.WindowSec
	if rate < churnPerSecond {
		return nil
	}
	f := &model.Finding{
		Severity: "info",
		Summary:  fmt.Sprintf("%.0f threads created per second", rate),
		Evidence: []string{
			fmt.Sprintf("%d threads created and %d exited in %.2fs (%d processes created); at most %d alive at once", ta.ThreadsCreated, ta.ThreadsExited, ta.WindowSec, ta.ProcessesCreated, ta.PeakThreads),
		},
		Test: &model.FindingTest{Name: "threads created per second", Value: rate, Op: ">=", Threshold: churnPerSecond},
	}
	// What it costs: the busy threads' CPU time in the syscalls that make
	// and end threads, among the other "other" ones: at most what the
	// kernel's part costs (the cold caches of each new thread are not in
	// it). A warning when that is a material share of their time; without
	// the on-CPU samples that split the CPU time by activity the cost is
	// unknown, and the finding worth knowing, no more.
	if cpu, ok := busyCPUIn(ta, churnActivity); ok {
		s := cpu / busySeconds(ta)
		f.Share = &s
		f.Evidence = append(f.Evidence, fmt.Sprintf("on a CPU in clone, exit, mmap and the other syscalls of that class: %.3fs, %.1f%% of %.3fs busy-thread time",
			cpu, s*100, busySeconds(ta)))
		if s >= materialShare {
			f.Severity = "warning"
		}
	} else {
		f.Evidence = append(f.Evidence, "what making and ending them cost is not known: the cpu time is not split by activity here (no on-CPU samples)")
	}
	f.Evidence = append(f.Evidence, "a thread per unit of work: use a pool, or a timer that does not start a thread per call")
	return f
}

// busyCPUIn is the busy threads' cpu time in the given activities (the
// on-CPU samples' split, ThreadTime.CPUByActivity); ok is false when the
// record has no split or no busy time to weigh it against.
func busyCPUIn(ta *model.TimeAccounting, activities ...string) (sec float64, ok bool) {
	if ta.ActivityHz <= 0 || busySeconds(ta) <= 0 {
		return 0, false
	}
	for _, t := range ta.Threads {
		if t.Idle {
			continue
		}
		for _, a := range activities {
			sec += t.CPUByActivity[a]
		}
	}
	return sec, true
}
