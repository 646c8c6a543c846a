package rows

import (
	"math"
	"strings"
	"testing"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// The critical path's sum and each thread's part of it are computed here
// once, for the terminal and the page.
func TestThreadsOnThePath(t *testing.T) {
	ta := &model.TimeAccounting{
		CriticalPath: map[string]float64{"cpu": 1.5, "storage-sync": 2.5},
		Threads: []model.ThreadTime{
			{PID: 1, TID: 1, Comm: "main", WallSec: 2, Seconds: map[string]float64{"sleep": 2}, Poller: true},
			{PID: 1, TID: 2, Comm: "worker", WallSec: 2, Seconds: map[string]float64{"cpu": 1.5, "storage-sync": 0.5}, CriticalSec: 3},
			{PID: 1, TID: 0, Comm: "worker", Folded: 3, WallSec: 2, Seconds: map[string]float64{"storage-sync": 2}, CriticalSec: 1},
			{PID: 1, TID: 4, Comm: "idle", WallSec: 2, Seconds: map[string]float64{"lock": 2}, Idle: true},
		}}
	if got := CriticalPathSec(ta); got != 4 {
		t.Errorf("critical path %.3f s, want 4", got)
	}
	l := BusyThreads(ta, 10)
	want := map[string]struct {
		share  float64
		poller bool
	}{"main": {0, true}, "worker": {0.75, false}, "3× worker": {0.25, false}}
	if len(l.Rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(l.Rows), len(want))
	}
	for _, r := range l.Rows {
		w := want[r.Name]
		if !r.OnPath || r.Poller != w.poller || math.Abs(r.PathShare-w.share) > 1e-9 {
			t.Errorf("%s: on path %v, share %.3f, poller %v; want %.3f, %v", r.Name, r.OnPath, r.PathShare, r.Poller, w.share, w.poller)
		}
	}
	ta.CriticalPath = nil
	if r := BusyThreads(ta, 10).Rows[0]; r.OnPath || r.PathShare != 0 {
		t.Errorf("without a critical path: %+v", r)
	}
}

// The matrix's rows are the record's activities with their states and
// their part of the critical path, the states that have time in model
// order.
func TestMatrixOf(t *testing.T) {
	ta := &model.TimeAccounting{Matrix: []model.ActivityTime{
		{Activity: "sync", State: "storage-sync", Seconds: 0.82, CriticalSec: 0.82},
		{Activity: "sync", State: "cpu", Seconds: 0.62, CriticalSec: 0.62},
		{Activity: "user", State: "cpu", Seconds: 0.28, CriticalSec: 0.28},
		{Activity: "sleep", State: "timer", Seconds: 0.28},
	}}
	m := MatrixOf(ta)
	if len(m.Rows) != 3 || m.Rows[0].Activity != "sync" || math.Abs(m.Rows[0].TotalSec-1.44) > 1e-9 || math.Abs(m.Rows[0].CriticalSec-1.44) > 1e-9 {
		t.Errorf("rows %+v", m.Rows)
	}
	if got := len(m.States); got != 3 || m.States[0] != "cpu" || m.States[1] != "storage-sync" || m.States[2] != "timer" {
		t.Errorf("states %v, want cpu, storage-sync, timer", m.States)
	}
	if math.Abs(m.TotalSec-2) > 1e-9 || math.Abs(m.PathSec-1.72) > 1e-9 || m.Unsampled {
		t.Errorf("total %.3f, path %.3f, unsampled %v", m.TotalSec, m.PathSec, m.Unsampled)
	}
	if m := MatrixOf(&model.TimeAccounting{}); len(m.Rows) != 0 {
		t.Errorf("a matrix from a record without one: %+v", m)
	}
}

// The unseen switches line speaks only of the workload's, and says how
// many were timed and how many not.
func TestUnseenSwitchesLine(t *testing.T) {
	if s := UnseenSwitches(nil); s != "" {
		t.Errorf("none: %q", s)
	}
	if s := UnseenSwitches(&model.UnseenSwitches{Switches: 40}); s != "" {
		t.Errorf("only other processes' unseen: %q, want nothing", s)
	}
	all := UnseenSwitches(&model.UnseenSwitches{Switches: 41, Ins: 2, InsTimed: 2, Outs: 1, OutsTimed: 1})
	if !strings.Contains(all, "3 of the workload's context switches") || !strings.Contains(all, "41 on the whole machine") || !strings.Contains(all, "each timed") {
		t.Errorf("all timed: %q", all)
	}
	part := UnseenSwitches(&model.UnseenSwitches{Switches: 5, Ins: 3, InsTimed: 1})
	if !strings.Contains(part, "1 timed") || !strings.Contains(part, "2 not") {
		t.Errorf("one of three timed: %q", part)
	}
}
