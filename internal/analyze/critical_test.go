package analyze

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// wait is one wait of thread tid, ended by waker (peer: wakerTID).
func wait(tid int, cat, waker string, wakerTID int, sec float64, count int64) model.Wait {
	return model.Wait{PID: 1, TID: tid, Activity: "read", Category: cat, Waker: waker, WakerTID: wakerTID, WakerPID: 1, Seconds: sec, Count: count}
}

func withWaits(r *model.Run, ws ...model.Wait) *model.Run {
	r.TimeAccounting.Waits = append([]model.Wait{}, ws...)
	return r
}

func TestCriticalPath(t *testing.T) {
	cases := []struct {
		name    string
		run     *model.Run
		primary string
		says    string // in the verdict
		pollers int
	}{
		{
			// fio psync: the main thread polls its worker every 10 ms.
			name: "a poller beside its worker",
			run: withWaits(runWith(2, 3.3,
				thread(1, map[string]float64{"cpu": 0.16, "sleep": 3.14}),
				thread(2, map[string]float64{"cpu": 0.71, "cpu-wait": 0.34, "storage-read": 1.95, "sleep": 0.1})),
				wait(1, "sleep", "timer", 0, 3.14, 314), wait(2, "storage-read", "device", 0, 1.95, 30000),
				wait(2, "cpu-wait", "none", 0, 0.34, 30000), wait(2, "sleep", "peer", 1, 0.1, 1)),
			primary: "storage-read", says: "left out: t (1)", pollers: 1,
		},
		{
			// An io_uring completion thread parked the whole window beside
			// the thread that works; alone, the same wait is the verdict.
			name: "a thread parked the whole window beside a worker",
			run: withWaits(runWith(2, 2,
				thread(1, map[string]float64{"cpu": 0.01, "other": 1.99}),
				thread(2, map[string]float64{"cpu": 1.2, "storage-sync": 0.8})),
				wait(1, "other", "none", 0, 1.99, 1), wait(2, "storage-sync", "device", 0, 0.8, 100)),
			primary: "cpu", says: "left out", pollers: 1,
		},
		{
			name: "alone, blocked opening a FIFO",
			run: withWaits(runWith(2, 2, thread(1, map[string]float64{"cpu": 0.01, "other": 1.99})),
				wait(1, "other", "none", 0, 1.99, 1)),
			primary: "other",
		},
		{
			name: "a parent waiting for its child, which syncs",
			run: withWaits(runWith(2, 2,
				thread(1, map[string]float64{"cpu": 0.01, "sleep": 1.99}),
				thread(2, map[string]float64{"cpu": 0.6, "storage-sync": 1.4})),
				wait(1, "sleep", "peer", 2, 1.99, 1), wait(2, "storage-sync", "device", 0, 1.4, 500)),
			primary: "storage-sync",
		},
		{
			// Three stages on pipes; the last one syncs.
			name: "a pipeline whose last stage syncs",
			run: withWaits(runWith(2, 2,
				thread(1, map[string]float64{"cpu": 0.4, "sleep": 1.6}),
				thread(2, map[string]float64{"cpu": 0.3, "sleep": 1.7}),
				thread(3, map[string]float64{"cpu": 0.5, "storage-sync": 1.5})),
				wait(1, "sleep", "peer", 2, 1.6, 1000), wait(2, "sleep", "peer", 3, 1.7, 1000), wait(3, "storage-sync", "device", 0, 1.5, 1000)),
			primary: "storage-sync",
		},
		{
			// Two threads that each wait for the other's CPU.
			name: "ping-pong",
			run: withWaits(runWith(2, 2,
				thread(1, map[string]float64{"cpu": 0.6, "sleep": 1.4}),
				thread(2, map[string]float64{"cpu": 0.6, "sleep": 1.4})),
				wait(1, "sleep", "peer", 2, 1.4, 10000), wait(2, "sleep", "peer", 1, 1.4, 10000)),
			primary: "cpu",
		},
		{
			name: "a 2 ms timer loop",
			run: withWaits(runWith(2, 2, thread(1, map[string]float64{"cpu": 0.05, "sleep": 1.95})),
				wait(1, "sleep", "timer", 0, 1.95, 1000)),
			primary: "sleep", says: "timer-bound: 98% of the critical path's time was asleep until a timer",
		},
		{
			// A rate-limited worker and its poller both sleep on timers:
			// nothing works, nobody is left out.
			name: "a rate-limited job",
			run: withWaits(runWith(2, 2,
				thread(1, map[string]float64{"cpu": 0.02, "sleep": 1.98}),
				thread(2, map[string]float64{"cpu": 0.2, "storage-read": 0.2, "sleep": 1.6})),
				wait(1, "sleep", "timer", 0, 1.98, 200), wait(2, "sleep", "timer", 0, 1.6, 8000), wait(2, "storage-read", "device", 0, 0.2, 8000)),
			primary: "sleep", says: "timer-bound",
		},
		{
			name: "a server waiting for clients outside the workload",
			run: withWaits(runWith(2, 2, thread(1, map[string]float64{"cpu": 0.2, "sleep": 1.8})),
				model.Wait{PID: 1, TID: 1, Activity: "net", Category: "sleep", Waker: "softirq", Softirq: "net_rx", Seconds: 1.8, Count: 900}),
			primary: "sleep", says: "waiting for something outside the workload",
		},
		{
			// pgbench observed alone: its waits end on the server's
			// backend, which the verdict names (issue 18).
			name: "a client waiting on a server outside the workload",
			run: withWaits(runWith(2, 2, thread(1, map[string]float64{"cpu": 0.2, "sleep": 1.8})),
				model.Wait{PID: 1, TID: 1, Activity: "net", Category: "sleep", Waker: "outside", WakerPID: 4242, WakerTID: 4242, WakerComm: "postgres", Seconds: 1.5, Count: 900},
				model.Wait{PID: 1, TID: 1, Activity: "net", Category: "sleep", Waker: "outside", WakerPID: 4343, WakerTID: 4343, WakerComm: "other", Seconds: 0.3, Count: 10}),
			primary: "sleep", says: "waiting for postgres (pid 4242), outside the workload (90% of the critical path's time asleep until it woke it): observe it with the workload, -p 4242",
		},
		{
			// pgbench's connections each end on a backend of their own:
			// none woke most of it, the name did.
			name: "a client waiting on a server's backends outside the workload",
			run: withWaits(runWith(2, 2, thread(1, map[string]float64{"cpu": 0.2, "sleep": 1.8})),
				model.Wait{PID: 1, TID: 1, Activity: "net", Category: "sleep", Waker: "outside", WakerPID: 4242, WakerTID: 4242, WakerPPID: 4200, WakerComm: "postgres", Seconds: 0.5, Count: 300},
				model.Wait{PID: 1, TID: 1, Activity: "net", Category: "sleep", Waker: "outside", WakerPID: 4243, WakerTID: 4243, WakerPPID: 4200, WakerComm: "postgres", Seconds: 0.4, Count: 300},
				model.Wait{PID: 1, TID: 1, Activity: "net", Category: "sleep", Waker: "outside", WakerPID: 4244, WakerTID: 4244, WakerPPID: 4200, WakerComm: "postgres", Seconds: 0.4, Count: 300},
				model.Wait{PID: 1, TID: 1, Activity: "net", Category: "sleep", Waker: "outside", WakerPID: 4245, WakerTID: 4245, WakerPPID: 4200, WakerComm: "postgres", Seconds: 0.3, Count: 300},
				model.Wait{PID: 1, TID: 1, Activity: "net", Category: "sleep", Waker: "outside", WakerPID: 4246, WakerTID: 4246, WakerPPID: 4200, WakerComm: "postgres", Seconds: 0.08, Count: 300},
				model.Wait{PID: 1, TID: 1, Activity: "net", Category: "sleep", Waker: "outside", WakerPID: 99, WakerTID: 99, WakerPPID: 1, WakerComm: "sshd", Seconds: 0.1, Count: 10},
				model.Wait{PID: 1, TID: 1, Activity: "net", Category: "sleep", Waker: "outside", WakerPID: 7, WakerTID: 7, WakerComm: "perfsleuth", Seconds: 0.01, Count: 1},
				model.Wait{PID: 1, TID: 1, Activity: "net", Category: "sleep", Waker: "outside", WakerPID: 98, WakerTID: 98, WakerPPID: 1, WakerComm: "sshd", Seconds: 0.01, Count: 1}),
			primary: "sleep", says: "waiting for processes outside the workload (90% of the critical path's time asleep until one woke it): " +
				"postgres (pids 4242, 4243, 4244, 4245 and 1 more, children of pid 4200) woke it for 93%, sshd (pids 99, 98) 6% of that: " +
				"observe them with the workload, -p 4200 -p 99 -p 98 beside the command",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			Analyze(tc.run)
			ta := tc.run.TimeAccounting
			v := tc.run.Verdict
			if v.Primary != tc.primary || v.Basis != "critical path" || !strings.Contains(v.Summary, tc.says) {
				t.Errorf("verdict %q (%s, basis %s), want %s and %q", v.Summary, v.Primary, v.Basis, tc.primary, tc.says)
			}
			n, sum, carried := 0, 0.0, 0.0
			for _, th := range ta.Threads {
				if th.Poller {
					n++
				} else if !th.Idle {
					sum += th.WallSec
				}
				carried += th.CriticalSec
			}
			if n != tc.pollers {
				t.Errorf("%d pollers, want %d", n, tc.pollers)
			}
			// The critical path holds the time of the threads it covers,
			// and each second is carried by one thread.
			if cp := criticalSeconds(ta); math.Abs(cp-sum) > 1e-6 || math.Abs(carried-sum) > 1e-6 {
				t.Errorf("critical path %.6f s, carried %.6f s: want the threads' %.6f s", cp, carried, sum)
			}
			for _, f := range tc.run.Findings {
				if f.ID == "perfsleuth.inconsistent" {
					t.Errorf("inconsistent: %v", f.Evidence)
				}
			}
		})
	}
}

// TestEndedBy: what ended a category's waits, most time first; workload
// threads that each ended under 10% read as one; idle threads left out.
func TestEndedBy(t *testing.T) {
	ta := &model.TimeAccounting{Threads: []model.ThreadTime{{TID: 1}, {TID: 2}, {TID: 9, Idle: true}}}
	add := func(tid int, cat, waker string, wtid int, comm string, sec float64) {
		ta.Waits = append(ta.Waits, model.Wait{TID: tid, Category: cat, Waker: waker, WakerTID: wtid, WakerComm: comm, Seconds: sec})
	}
	add(1, model.CatStorageSync, model.WakerKthread, 219, "jbd2/vda1-8", 0.80)
	add(2, model.CatStorageSync, model.WakerDevice, 0, "", 0.15)
	ta.Waits[len(ta.Waits)-1].Op = "write"
	add(2, model.CatStorageSync, model.WakerTimer, 0, "", 0.04) // under 5%: left out
	add(9, model.CatStorageSync, model.WakerKthread, 5, "kworker/0:1", 5)
	add(1, model.CatLock, model.WakerPeer, 2, "app", 1) // another category
	got := endedBy(ta, model.CatStorageSync, 3)
	want := []string{"81% by kernel thread jbd2/vda1-8 219", "15% by the disk (write)"}
	if !slices.Equal(got, want) {
		t.Errorf("storage-sync: got %q, want %q", got, want)
	}
	ta.Waits = nil
	for i := range 16 {
		add(1, model.CatLock, model.WakerPeer, 100+i, "app", 0.06)
	}
	add(1, model.CatLock, model.WakerPeer, 200, "app", 0.5)
	got = endedBy(ta, model.CatLock, 2)
	want = []string{"66% by 16 threads of the workload, each under 10%", "34% by app 200"}
	if !slices.Equal(got, want) {
		t.Errorf("lock: got %q, want %q", got, want)
	}
	if got := endedBy(&model.TimeAccounting{}, model.CatLock, 2); got != nil {
		t.Errorf("without waits: %q, want nil", got)
	}
}

// Issue 18: a server and its client on 2 CPUs (-p PID -- CMD): the verdict
// says how the CPU time divides between them, by program (the backends'
// titles name theirs).
func TestVerdictCPUByProgram(t *testing.T) {
	run := runWith(2, 2,
		model.ThreadTime{PID: 10, TID: 10, Comm: "pgbench", WallSec: 2, Seconds: map[string]float64{"cpu": 0.5, "cpu-wait": 1.5}},
		model.ThreadTime{PID: 20, TID: 20, Comm: "postgres", Title: "postgres: bench bench [local] UPDATE", WallSec: 2, Seconds: map[string]float64{"cpu": 0.6, "cpu-wait": 1.4}},
		model.ThreadTime{PID: 21, TID: 21, Comm: "postgres", Title: "postgres: bench bench [local] SELECT", WallSec: 2, Seconds: map[string]float64{"cpu": 0.4, "cpu-wait": 1.6}})
	Analyze(run)
	if v := run.Verdict; v.Primary != model.CatCPUWait || !strings.HasSuffix(v.Summary, "; the CPU time went to postgres 67%, pgbench 33%") {
		t.Errorf("verdict %q (%s)", v.Summary, v.Primary)
	}
	// One program: nothing to divide.
	one := runWith(2, 2, thread(1, map[string]float64{"cpu": 1.9, "sleep": 0.1}), thread(2, map[string]float64{"cpu": 1.9, "sleep": 0.1}))
	Analyze(one)
	if strings.Contains(one.Verdict.Summary, "went to") {
		t.Errorf("one program: %q", one.Verdict.Summary)
	}
}

// Issue 18: pgbench observed alone on 2 CPUs its server's backends share
// is CPU-starved; its waits for a CPU end with the backends holding them,
// which the verdict names, with their parent to observe them by.
func TestVerdictNamesCPUTakers(t *testing.T) {
	run := withWaits(runWith(2, 2, thread(1, map[string]float64{"cpu": 0.4, "cpu-wait": 1.4, "sleep": 0.2})),
		model.Wait{PID: 1, TID: 1, Activity: "user", Category: "cpu-wait", Waker: "outside", WakerPID: 4242, WakerTID: 4242, WakerPPID: 4200, WakerComm: "postgres", Seconds: 0.6, Count: 300},
		model.Wait{PID: 1, TID: 1, Activity: "user", Category: "cpu-wait", Waker: "outside", WakerPID: 4243, WakerTID: 4243, WakerPPID: 4200, WakerComm: "postgres", Seconds: 0.5, Count: 300},
		model.Wait{PID: 1, TID: 1, Activity: "user", Category: "cpu-wait", Waker: "kthread", WakerTID: 12, WakerComm: "kworker/0:1", Seconds: 0.2, Count: 30},
		model.Wait{PID: 1, TID: 1, Activity: "user", Category: "cpu-wait", Waker: "none", Seconds: 0.1, Count: 30},
		model.Wait{PID: 1, TID: 1, Activity: "net", Category: "sleep", Waker: "outside", WakerPID: 4242, WakerTID: 4242, WakerPPID: 4200, WakerComm: "postgres", Seconds: 0.2, Count: 300})
	Analyze(run)
	want := "; the CPUs it waited for went to processes outside the workload (79% of that wait): postgres (pids 4242, 4243, children of pid 4200) had them for 100% of that: observe them with the workload, -p 4200 beside the command"
	if v := run.Verdict; v.Primary != model.CatCPUWait || !strings.HasSuffix(v.Summary, want) {
		t.Errorf("verdict %q (%s), want cpu-wait ending in %q", v.Summary, v.Primary, want)
	}
	// Two servers of one name (another PostgreSQL cluster beside the
	// test's, issue 14): each is named with its own parent to observe it
	// by, and a postmaster that held a CPU joins its backends, not a -p
	// of its own.
	two := withWaits(runWith(2, 2, thread(1, map[string]float64{"cpu": 0.4, "cpu-wait": 1.4, "sleep": 0.2})),
		model.Wait{PID: 1, TID: 1, Activity: "user", Category: "cpu-wait", Waker: "outside", WakerPID: 4242, WakerTID: 4242, WakerPPID: 4200, WakerComm: "postgres", Seconds: 0.6, Count: 300},
		model.Wait{PID: 1, TID: 1, Activity: "user", Category: "cpu-wait", Waker: "outside", WakerPID: 4243, WakerTID: 4243, WakerPPID: 4200, WakerComm: "postgres", Seconds: 0.3, Count: 300},
		model.Wait{PID: 1, TID: 1, Activity: "user", Category: "cpu-wait", Waker: "outside", WakerPID: 4200, WakerTID: 4200, WakerPPID: 1, WakerComm: "postgres", Seconds: 0.1, Count: 3},
		model.Wait{PID: 1, TID: 1, Activity: "user", Category: "cpu-wait", Waker: "outside", WakerPID: 2301, WakerTID: 2301, WakerPPID: 2225, WakerComm: "postgres", Seconds: 0.2, Count: 30},
		model.Wait{PID: 1, TID: 1, Activity: "user", Category: "cpu-wait", Waker: "outside", WakerPID: 2302, WakerTID: 2302, WakerPPID: 2225, WakerComm: "postgres", Seconds: 0.2, Count: 30})
	Analyze(two)
	want = "postgres (pids 4242, 4243, 4200, children of pid 4200) had them for 71%, postgres (pids 2301, 2302, children of pid 2225) 29% of that: observe them with the workload, -p 4200 -p 2225 beside the command"
	if v := two.Verdict; !strings.HasSuffix(v.Summary, want) {
		t.Errorf("two servers: verdict %q, want it ending in %q", v.Summary, want)
	}
	// Waits for a CPU that other threads of the workload held: nothing
	// outside to name.
	inside := withWaits(runWith(2, 2, thread(1, map[string]float64{"cpu": 0.4, "cpu-wait": 1.4, "sleep": 0.2})),
		model.Wait{PID: 1, TID: 1, Activity: "user", Category: "cpu-wait", Waker: "peer", WakerPID: 1, WakerTID: 2, WakerComm: "t", Seconds: 1.4, Count: 300})
	Analyze(inside)
	if strings.Contains(inside.Verdict.Summary, "went to processes outside") {
		t.Errorf("verdict %q names outsiders", inside.Verdict.Summary)
	}
}
