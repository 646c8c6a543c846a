package rows

import (
	"fmt"
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

// Issue 18: PostgreSQL's processes group by role, its backends as one,
// and a server and its client each get their share of the CPU time.
func TestRoles(t *testing.T) {
	thread := func(pid, tid int, comm, title string, cpu, sleep float64) model.ThreadTime {
		return model.ThreadTime{PID: pid, TID: tid, Comm: comm, Title: title, WallSec: cpu + sleep,
			Seconds: map[string]float64{model.CatCPU: cpu, model.CatSleep: sleep}}
	}
	ta := &model.TimeAccounting{Threads: []model.ThreadTime{
		thread(10, 10, "pgbench", "", 1, 1),
		thread(10, 11, "pgbench", "", 1, 1),
		thread(20, 20, "postgres", "postgres: bench bench [local] UPDATE", 1.5, 0.5),
		thread(21, 21, "postgres", "postgres: bench bench [local] idle", 1.5, 0.5),
		thread(22, 22, "postgres", "postgres: walwriter", 1, 1),
		thread(30, 30, "mysqld", "", 0, 2),
		thread(30, 31, "ib_io_wr-1", "", 0, 2),
		thread(30, 32, "ib_io_wr-2", "", 0, 2),
	}}
	roles, programs := Roles(ta)
	var got []string
	for _, r := range roles {
		got = append(got, fmt.Sprintf("%s %d %.1f", r.Name, r.Threads, r.WallSec))
	}
	want := []string{"pgbench 2 4.0", "postgres: backend 2 4.0", "mysqld/ib_io_wr-N 2 4.0", "postgres: walwriter 1 2.0", "mysqld 1 2.0"}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("roles: got %q, want %q", got, want)
	}
	if roles[1].Largest[0].Name != model.CatCPU || math.Abs(roles[1].Largest[0].Share-0.75) > 1e-9 {
		t.Errorf("backends' largest share: %+v, want cpu 75%%", roles[1].Largest)
	}
	got = nil
	for _, p := range programs {
		got = append(got, fmt.Sprintf("%s %d/%d %.0f%%", p.Name, p.Processes, p.Threads, p.CPUShare*100))
	}
	want = []string{"postgres 3/3 67%", "pgbench 1/2 33%", "mysqld 1/3 0%"}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("programs: got %q, want %q", got, want)
	}
}

// TestDroppedOf: the warning says what was dropped when the record splits
// it, and stays whole for records made before it did.
func TestDroppedOf(t *testing.T) {
	got := DroppedOf(&model.TimeAccounting{Dropped: 53370, DroppedBy: map[string]int64{model.DroppedWaits: 53000, model.DroppedThreads: 370}})
	want := "53,370 events were dropped: the accounting is incomplete (370 of threads or processes the probe's maps could not hold (their time is missing); 53,000 waits the wait-for graph could not hold (their time is in the categories, not in the waits))"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if got := DroppedOf(&model.TimeAccounting{Dropped: 12}); got != "12 events were dropped: the accounting is incomplete" {
		t.Errorf("an older record: %q", got)
	}
}
