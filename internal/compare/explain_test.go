package compare

import (
	"math"
	"strings"
	"testing"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// walVsDelete is a hand-made pair like the issue's: A (WAL+NORMAL) does its
// 1,000 transactions in 0.1 s with 5 syncs; B (DELETE+FULL) takes 4 s and
// makes 4,000 fdatasync calls of 0.6 ms (2.4 s; 1.6 s of it blocked, the
// rest CPU time in the calls).
func walVsDelete() (a, b *model.Run) {
	a, b = sqliteRun(), sqliteRun()
	setTime(a, 0.1, map[string]float64{model.CatCPU: 0.09, model.CatStorageSync: 0.01})
	setSyncs(a, 5, 0.01)
	b.Target.SQLite.Journal, b.Target.SQLite.Sync = "delete", "full"
	setTime(b, 4, map[string]float64{model.CatCPU: 2.0, model.CatStorageSync: 1.6, model.CatCPUWait: 0.4})
	setSyncs(b, 4000, 2.4)
	return a, b
}

func TestExplain(t *testing.T) {
	cases := []struct {
		name     string
		pair     func() (a, b *model.Run)
		top      string // the first cause's id ("" no cause)
		accounts float64
		summary  []string // parts of the summary, in order
	}{
		{name: "sync settings: the sync count is the cause", pair: walVsDelete, top: "sync",
			// (2.4 s - 0.01 s) of the (4 - 0.1) s difference
			accounts: (2.4 - 0.01) / 3.9,
			summary: []string{"if the difference is real", "most likely cause is sync calls",
				"B made 4 fdatasync calls per transaction against A's 0.005", "of 600µs against 2.00ms on average",
				"the count moved more than the latency", "follows from the sync behaviour named first"}},
		{name: "B faster: the causes are what shrank", pair: func() (a, b *model.Run) { b, a = walVsDelete(); return a, b },
			top: "sync", accounts: (2.4 - 0.01) / 3.9, summary: []string{"most likely cause is sync calls"}},
		{name: "slower syncs, as many", pair: func() (a, b *model.Run) {
			a, b = sqliteRun(), sqliteRun()
			setTime(b, 4, map[string]float64{model.CatCPU: 1.5, model.CatStorageSync: 2.5})
			setSyncs(b, 1000, 2.5)
			return a, b
		}, top: "sync", accounts: 1, summary: []string{"of 2.50ms against 500µs on average", "the latency moved more than the count"}},
		{name: "a slower CPU", pair: func() (a, b *model.Run) {
			a, b = sqliteRun(), sqliteRun()
			b.Host.CPUs = []model.CPU{{ID: 0, Type: "Cortex-A53"}, {ID: 1, Type: "Cortex-A53"}}
			setTime(b, 3.5, map[string]float64{model.CatCPU: 3, model.CatStorageSync: 0.5})
			return a, b
		}, top: model.CatCPU, accounts: 1, summary: []string{"most likely cause is CPU time"}},
		{name: "cold cache reads", pair: func() (a, b *model.Run) {
			a, b = sqliteRun(), sqliteRun()
			b.Storage.Cache.HitRatio = 0.2
			setTime(b, 4, map[string]float64{model.CatCPU: 1.5, model.CatStorageSync: 0.5, model.CatStorageRead: 2})
			return a, b
		}, top: model.CatStorageRead, accounts: 1, summary: []string{"reads from storage", "follows from the cold cache in B named first"}},
		{name: "no significant difference: nothing to explain", pair: func() (a, b *model.Run) {
			a, b = walVsDelete()
			withRepeats(a, 0.3, 500, 600, 400)
			withRepeats(b, 0.3, 520, 610, 390)
			return a, b
		}, summary: []string{"no significant difference: nothing to explain"}},
		{name: "a small change between single runs", pair: func() (a, b *model.Run) {
			a, b = sqliteRun(), sqliteRun()
			setTime(b, 2.1, map[string]float64{model.CatCPU: 1.6, model.CatStorageSync: 0.5})
			return a, b
		}, summary: []string{"B is 5% slower, less than the 10% a single run can move by itself"}},
		{name: "no accounting in B", pair: func() (a, b *model.Run) {
			a, b = walVsDelete()
			b.TimeAccounting = nil
			return a, b
		}, summary: []string{"B is 40x slower, but B has no time accounting"}},
		// Without both runs' sync calls timed, both fall back to storage-sync,
		// and the CPU time inside the calls stays CPU time: here it then
		// outweighs the blocked part (2.0 s against 1.6 s).
		{name: "sync calls timed in one run only: both use storage-sync", pair: func() (a, b *model.Run) {
			a, b = walVsDelete()
			a.TimeAccounting.SyncNote = "not timed: no tracepoint"
			return a, b
		}, top: model.CatCPU, accounts: (2.0 - 0.09) / 3.9, summary: []string{"most likely cause is CPU time"}},
		{name: "different workloads", pair: func() (a, b *model.Run) { return sqliteRun(), fileioRun() },
			summary: []string{"no headline change to explain"}},
		{name: "a fixed-duration run: ranked by shares", pair: func() (a, b *model.Run) {
			a, b = commandRun(), commandRun()
			withRepeats(a, 0.01, 100, 101, 99)
			withRepeats(b, 0.01, 50, 51, 49)
			a.Experiments.Measure = model.Measure{Name: "score", Source: "metric", HigherIsBetter: true}
			b.Experiments.Measure = a.Experiments.Measure
			b.TimeAccounting.Total = map[string]float64{model.CatCPU: 0.5, model.CatLock: 1.5}
			return a, b
		}, top: model.CatLock, accounts: 0.75, summary: []string{"most likely cause is lock waits: 75% of B's busy time against 0% of A's"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, b := tc.pair()
			c := Compare(a, b)
			e := c.Explanation
			switch {
			case tc.top == "" && len(e.Causes) > 0:
				t.Errorf("causes %+v, want none", e.Causes)
			case tc.top != "" && len(e.Causes) == 0:
				t.Fatalf("no cause, want %s: %s", tc.top, e.Summary)
			case tc.top != "":
				x := e.Causes[0]
				if x.ID != tc.top || math.Abs(x.AccountsFor-tc.accounts) > 0.02 {
					t.Errorf("first cause %s accounting for %.3f, want %s accounting for %.3f", x.ID, x.AccountsFor, tc.top, tc.accounts)
				}
				if len(x.Evidence) == 0 {
					t.Errorf("cause %s without evidence", x.ID)
				}
				for i := 1; i < len(e.Causes); i++ {
					if e.Causes[i].AccountsFor > e.Causes[i-1].AccountsFor || e.Causes[i].AccountsFor < minCauseShare {
						t.Errorf("causes out of order or too small: %+v", e.Causes)
					}
				}
			}
			rest := e.Summary
			for _, part := range tc.summary {
				i := strings.Index(rest, part)
				if i < 0 {
					t.Fatalf("summary lacks %q (in order):\n%s", part, e.Summary)
				}
				rest = rest[i+len(part):]
			}
		})
	}
}

// The sync cause takes the CPU time spent inside the sync calls, so that it
// is not counted twice: the candidates then add up to about the difference.
func TestCausesAddUp(t *testing.T) {
	a, b := walVsDelete()
	c := Compare(a, b)
	sum := 0.0
	for _, id := range append([]string{"sync"}, candidates...) {
		sa, sb := shares(a, true, false)[id]*0.1, shares(b, true, false)[id]*4
		sum += sb - sa
	}
	if math.Abs(sum-c.Explanation.TimeDiffSec) > 0.05*c.Explanation.TimeDiffSec {
		t.Errorf("candidates add up to %.3fs, the difference is %.3fs", sum, c.Explanation.TimeDiffSec)
	}
	cpu := shares(b, true, false)[model.CatCPU] * 4
	if math.Abs(cpu-1.2) > 0.01 {
		t.Errorf("B's CPU outside sync calls %.3fs, want 2.0 - (2.4 - 1.6) = 1.2s", cpu)
	}
}

// With a critical path in both runs, causes are ranked by it, not by the
// busy threads' time: the rsync case, where the sender and generator
// sleep on pipes for the receiver, which syncs. Summed over the threads
// the difference reads as sleep; on the critical path it is the syncs.
func TestExplainRanksByCriticalPath(t *testing.T) {
	a, b := commandRun(), commandRun()
	setTime(a, 2, map[string]float64{model.CatCPU: 1.6, model.CatSleep: 2.2, model.CatStorageSync: 0.2})
	setTime(b, 4.6, map[string]float64{model.CatCPU: 2.0, model.CatSleep: 6.9, model.CatStorageSync: 1.8})
	a.TimeAccounting.CriticalPath = map[string]float64{model.CatCPU: 3.3, model.CatStorageSync: 0.5, model.CatSleep: 0.2}
	b.TimeAccounting.CriticalPath = map[string]float64{model.CatCPU: 5.5, model.CatStorageSync: 4.9, model.CatSleep: 0.3}
	a.TimeAccounting.Syncs, b.TimeAccounting.Syncs = nil, nil
	c := Compare(a, b)
	if len(c.Explanation.Causes) == 0 || c.Explanation.Causes[0].ID != "sync" {
		t.Fatalf("causes %+v, want sync first", c.Explanation.Causes)
	}
	for _, x := range c.Explanation.Causes {
		if x.ID == model.CatSleep {
			t.Errorf("sleep ranked as a cause (%+v): on the critical path it barely moved", x)
		}
	}
	// Without the critical path, the same runs rank the sleep.
	a.TimeAccounting.CriticalPath, b.TimeAccounting.CriticalPath = nil, nil
	c = Compare(a, b)
	if len(c.Explanation.Causes) == 0 || c.Explanation.Causes[0].ID != model.CatSleep {
		t.Errorf("without a critical path, causes %+v, want sleep first", c.Explanation.Causes)
	}
}

// The sync cause takes the time on a CPU and waiting for one inside the
// calls as measured (the sync calls' split, ext4), not the calls' time
// less the blocked time all taken from cpu: B's 0.2 s waiting for a CPU
// inside fdatasync was counted twice, under sync and under cpu-wait.
func TestSyncCauseUsesTheSplit(t *testing.T) {
	_, b := walVsDelete()
	b.TimeAccounting.Syncs[0].Split = map[string]float64{model.CatStorageSync: 1.6, model.CatCPU: 0.6, model.CatCPUWait: 0.2}
	b.TimeAccounting.Syncs[0].SplitCount, b.TimeAccounting.Syncs[0].SplitSec = 4000, 2.4
	s := shares(b, true, false)
	for id, want := range map[string]float64{"sync": 2.4, model.CatCPU: 1.4, model.CatCPUWait: 0.2} {
		if got := s[id] * 4; math.Abs(got-want) > 1e-9 {
			t.Errorf("%s %.3fs, want %.3fs", id, got, want)
		}
	}
	// The time by activity and state, when the record has it, says the
	// same per basis: on the critical path, its critical-path column.
	b.TimeAccounting.Matrix = []model.ActivityTime{
		{Activity: "sync", State: model.StateCPU, Seconds: 0.6, CriticalSec: 0.5},
		{Activity: "sync", State: model.StateCPUWait, Seconds: 0.2, CriticalSec: 0.1},
		{Activity: "sync", State: model.StateStorageSync, Seconds: 1.6, CriticalSec: 1.6},
		{Activity: "user", State: model.StateCPU, Seconds: 1.4, CriticalSec: 1.4},
		{Activity: "user", State: model.StateCPUWait, Seconds: 0.2, CriticalSec: 0.1},
	}
	b.TimeAccounting.Syncs[0].Split = nil
	b.TimeAccounting.CriticalPath = map[string]float64{model.CatCPU: 1.9, model.CatCPUWait: 0.2, model.CatStorageSync: 1.6}
	s = shares(b, true, true)
	for id, want := range map[string]float64{"sync": 2.2 / 3.7, model.CatCPU: 1.4 / 3.7, model.CatCPUWait: 0.1 / 3.7} {
		if math.Abs(s[id]-want) > 1e-9 {
			t.Errorf("on the critical path: %s %.3f, want %.3f", id, s[id], want)
		}
	}
}

// Ranked by shares on the critical path, a cause says so.
func TestExplainByShareOnTheCriticalPath(t *testing.T) {
	a, b := commandRun(), commandRun()
	withRepeats(a, 0.01, 100, 101, 99)
	withRepeats(b, 0.01, 50, 51, 49)
	a.Experiments.Measure = model.Measure{Name: "score", Source: "metric", HigherIsBetter: true}
	b.Experiments.Measure = a.Experiments.Measure
	b.TimeAccounting.Total = map[string]float64{model.CatCPU: 0.5, model.CatLock: 1.5}
	a.TimeAccounting.CriticalPath = map[string]float64{model.CatCPU: 1.5, model.CatStorageSync: 0.5}
	b.TimeAccounting.CriticalPath = map[string]float64{model.CatCPU: 0.5, model.CatLock: 1.5}
	e := Compare(a, b).Explanation
	if want := "most likely cause is lock waits: 75% of B's critical path against 0% of A's"; !strings.Contains(e.Summary, want) {
		t.Errorf("summary %q, want %q", e.Summary, want)
	}
	if !strings.Contains(e.Basis, "share of the critical path") {
		t.Errorf("basis %q", e.Basis)
	}
}
