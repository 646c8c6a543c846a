package analyze

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"

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
	ev = append(ev, namedLocks(ta, 3)...)
	if by := endedBy(ta, model.CatLock, 3); len(by) > 0 {
		ev = append(ev, "the lock waits were ended (the lock handed over) "+strings.Join(by, ", "))
	}
	if ta.LocksNote != "" {
		ev = append(ev, ta.LocksNote)
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

// busyLocks are the locks the busy threads waited on, with their busy
// threads' time (Seconds) and waits (Count), most time first: a parked
// worker's or a runtime thread's futex is not the contention.
func busyLocks(ta *model.TimeAccounting) []model.LockWait {
	idle := map[int]bool{}
	for _, t := range ta.Threads {
		if t.Idle || t.Poller {
			idle[t.TID] = true
		}
	}
	var out []model.LockWait
	for _, l := range ta.Locks {
		b := l
		b.Seconds, b.Count = 0, 0
		for _, th := range l.Threads {
			if !idle[th.TID] {
				b.Seconds += th.Seconds
				b.Count += th.Count
			}
		}
		if len(l.Threads) == 0 { // no per-thread split: all of it
			b.Seconds, b.Count = l.Seconds, l.Count
		}
		if b.Seconds > 0 {
			out = append(out, b)
		}
	}
	slices.SortStableFunc(out, func(a, b model.LockWait) int { return cmp.Compare(b.Seconds, a.Seconds) })
	return out
}

// namedLocks says which locks the busy threads' waits were on, most time
// first, at most n, each 5% of those waits or more: "95% of the lock
// waits on the inode lock (i_rwsem, taken in ext4_buffered_write_iter) of
// /data/f, in write calls (41,234 waits, 2.1s); the holder let go in
// ext4_buffered_write_iter".
func namedLocks(ta *model.TimeAccounting, n int) []string {
	locks := busyLocks(ta)
	total := 0.0
	for _, l := range locks {
		total += l.Seconds
	}
	if total <= 0 {
		return nil
	}
	var out []string
	for _, l := range locks {
		if len(out) == n || l.Seconds < 0.05*total {
			break
		}
		line := fmt.Sprintf("%.0f%% of the lock waits on %s, in %s calls (%d waits, %.3fs)", l.Seconds/total*100, l.Lock, l.Activity, l.Count, l.Seconds)
		if len(l.User) > 0 {
			line += "; the waiters in " + strings.Join(l.User[:min(2, len(l.User))], " <- ")
		}
		if len(l.Holder) > 0 {
			line += "; the holder let go in " + strings.Join(l.Holder[:min(2, len(l.Holder))], " <- ")
		}
		out = append(out, line)
	}
	return out
}

// topLock is the lock most of the busy threads' waits were on, and its
// share of them; "" when none is named.
func topLock(ta *model.TimeAccounting) (string, float64) {
	locks := busyLocks(ta)
	total := 0.0
	for _, l := range locks {
		total += l.Seconds
	}
	if total <= 0 {
		return "", 0
	}
	return locks[0].Lock, locks[0].Seconds / total
}
