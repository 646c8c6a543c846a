package analyze

import (
	"fmt"
	"sort"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// lockShareWarning: 10% of the busy threads' time spent waiting for each
// other is where contention starts to cap scaling (Amdahl: a 10% serial part
// caps the speed-up at 10x whatever the core count; with tens of cores that
// bites). Idle threads (parked workers) are already excluded.
const lockShareWarning = 0.10

func lockContention(run *model.Run) *model.Finding {
	ta := run.TimeAccounting
	if ta == nil {
		return nil
	}
	s := share(ta, model.CatLock)
	busy := busyThreads(ta)
	if s < lockShareWarning || len(busy) < 2 {
		return nil
	}
	sort.SliceStable(busy, func(i, j int) bool { return busy[i].Seconds[model.CatLock] > busy[j].Seconds[model.CatLock] })
	ev := []string{fmt.Sprintf("lock %.3fs of %.3fs busy-thread time over %d busy threads", ta.Total[model.CatLock], busySeconds(ta), len(busy))}
	for i, t := range busy {
		if i == 3 {
			break
		}
		ev = append(ev, fmt.Sprintf("thread %d (%s) waited %.3fs of its %.3fs on locks", t.TID, t.Comm, t.Seconds[model.CatLock], t.WallSec))
	}
	return &model.Finding{
		Severity: "warning",
		Summary:  fmt.Sprintf("threads wait for each other %.0f%% of their time", s*100),
		Evidence: ev,
		Test:     &model.FindingTest{Name: "lock share", Value: s, Op: ">=", Threshold: lockShareWarning},
		Share:    &s,
	}
}

func busyThreads(ta *model.TimeAccounting) []model.ThreadTime {
	var out []model.ThreadTime
	for _, t := range ta.Threads {
		if !t.Idle {
			out = append(out, t)
		}
	}
	return out
}
