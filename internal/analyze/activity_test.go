package analyze

import (
	"math"
	"strings"
	"testing"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// in is a wait of thread tid while doing activity, ended by waker (a peer:
// wakerTID).
func in(tid int, activity, cat, waker string, wakerTID int, sec float64, count int64) model.Wait {
	return model.Wait{PID: 1, TID: tid, Activity: activity, Category: cat, Waker: waker, WakerTID: wakerTID, WakerPID: 1, Seconds: sec, Count: count}
}

// sampled is a thread whose cpu seconds divide as byAct (the on-CPU
// samples' split); its other categories are secs.
func sampled(tid int, byAct, secs map[string]float64) model.ThreadTime {
	all := map[string]float64{}
	for c, s := range secs {
		all[c] = s
	}
	for _, s := range byAct {
		all[model.CatCPU] += s
	}
	t := thread(tid, all)
	t.CPUByActivity = byAct
	return t
}

// androbench is the AndroBench shape of the field report: one thread
// whose fdatasync calls take 72% of its time, 41 points blocked on the
// device and 31 on a CPU in the kernel's flush path.
func androbench() *model.Run {
	r := withWaits(runWith(4, 2,
		sampled(1, map[string]float64{"sync": 0.62, "user": 0.28}, map[string]float64{"storage-sync": 0.82, "sleep": 0.28})),
		in(1, "sync", "storage-sync", "kthread", 0, 0.82, 1000), in(1, "sleep", "sleep", "timer", 0, 0.28, 50))
	r.TimeAccounting.ActivityHz = 499
	r.TimeAccounting.Syncs = []model.SyncCalls{{Kind: "fdatasync", Count: 1000, TotalSec: 1.44}}
	return r
}

// libaio is fio with ioengine=libaio: the main process checks on its
// worker every 10 ms; the worker spends half its time on a CPU submitting
// and reaping and 38% waiting for the device inside io_getevents.
func libaio() *model.Run {
	r := withWaits(runWith(2, 3.3,
		sampled(1, map[string]float64{"user": 0.16}, map[string]float64{"sleep": 3.14}),
		sampled(2, map[string]float64{"aio": 1.65, "user": 0.198}, map[string]float64{"storage-read": 1.254, "cpu-wait": 0.198})),
		in(1, "sleep", "sleep", "timer", 0, 3.14, 314),
		in(2, "aio", "storage-read", "device", 0, 1.254, 300000), in(2, "aio", "cpu-wait", "none", 0, 0.198, 300000))
	r.TimeAccounting.ActivityHz = 499
	return r
}

func TestVerdictByActivity(t *testing.T) {
	cases := []struct {
		name     string
		run      *model.Run
		primary  string
		activity string
		split    map[string]float64 // the verdict's, within 0.005
		says     []string           // in the summary, in order
		not      string             // not in the summary
	}{
		{
			name: "fdatasync on a CPU and blocked (AndroBench)", run: androbench(), primary: "storage-sync", activity: "sync",
			split: map[string]float64{"storage-sync": 0.41, "cpu": 0.31},
			says:  []string{"sync-bound: 72% of the critical path's time was inside sync calls (fdatasync): 41% blocked on the device or the journal, 31% on a CPU in the kernel's sync path"},
		},
		{
			// A record made before the on-CPU samples: the sync probe's
			// split (ext4) says the cpu time inside the calls.
			name: "the same without samples: the sync calls' split", primary: "storage-sync", activity: "sync",
			run: func() *model.Run {
				r := androbench()
				th := &r.TimeAccounting.Threads[0]
				th.CPUByActivity = nil
				r.TimeAccounting.ActivityHz = 0
				r.TimeAccounting.Syncs[0].Split = map[string]float64{"storage-sync": 0.82, "cpu": 0.62}
				r.TimeAccounting.Syncs[0].SplitCount, r.TimeAccounting.Syncs[0].SplitSec = 1000, 1.44
				return r
			}(),
			split: map[string]float64{"storage-sync": 0.41, "cpu": 0.31},
			says:  []string{"72% of the critical path's time was inside sync calls (fdatasync): 41% blocked", "31% on a CPU in the kernel's sync path"},
		},
		{
			// Older still: no wait-for graph either.
			name: "without waits: the busy threads and the sync calls' split", primary: "storage-sync", activity: "sync",
			run: func() *model.Run {
				r := runWith(4, 2, thread(1, map[string]float64{"cpu": 0.9, "storage-sync": 0.82, "sleep": 0.28}))
				r.TimeAccounting.Syncs = []model.SyncCalls{{Kind: "fdatasync", Count: 1000, TotalSec: 1.44, SplitCount: 1000, SplitSec: 1.44,
					Split: map[string]float64{"storage-sync": 0.82, "cpu": 0.62}}}
				return r
			}(),
			split: map[string]float64{"storage-sync": 0.41, "cpu": 0.31},
			says:  []string{"sync-bound: 72% of the busy threads' time was inside sync calls (fdatasync): 41% blocked on the device or the journal, 31% on a CPU"},
		},
		{
			name: "fio libaio with its main process polling", run: libaio(), primary: "storage-read", activity: "aio",
			// Its 6% waiting for a CPU inside the calls stays cpu-wait.
			split: map[string]float64{"storage-read": 0.38, "cpu": 0.50},
			says: []string{"storage-read-bound: 88% of the critical path's time was inside asynchronous IO calls (io_submit, io_getevents, io_pgetevents, io_uring_enter): 38% waiting for the device, 50% on a CPU submitting and reaping;",
				"left out: t (1)"},
		},
		{
			// io_uring with completions polled: the worker never sleeps on
			// the device, and the device served the workload's reads.
			name: "asynchronous IO that never blocks, beside the device's reads", primary: "storage-read", activity: "aio",
			run: func() *model.Run {
				r := withWaits(runWith(2, 2, sampled(1, map[string]float64{"aio": 1.5, "user": 0.3}, map[string]float64{"cpu-wait": 0.2})),
					in(1, "aio", "cpu-wait", "none", 0, 0.2, 1000))
				op := func(name string, n int64) model.BlockOp {
					h := []model.Range{{Low: 0, High: 1, Count: n}}
					return model.BlockOp{Op: name, Requests: n, WorkloadRequests: n, Size: h, Queue: h, Service: h}
				}
				r.Storage = devices(model.BlockDevice{Name: "vda", Ops: []model.BlockOp{op("read", 9000), op("write", 1000)}})
				return r
			}(),
			split: map[string]float64{"cpu": 0.675},
			says:  []string{"storage-read-bound: 68% of the critical path's time was inside asynchronous IO calls", "68% on a CPU submitting and reaping"},
		},
		{
			name: "asynchronous IO calls with no storage behind them", primary: "cpu",
			run: withWaits(runWith(2, 2, sampled(1, map[string]float64{"aio": 1.5, "user": 0.3}, map[string]float64{"cpu-wait": 0.2})),
				in(1, "aio", "cpu-wait", "none", 0, 0.2, 1000)),
			says: []string{"CPU-bound"}, not: "inside",
		},
		{
			// Buffered writes copy into the page cache on a CPU: a rare
			// dirty-page throttle does not make them storage.
			name: "buffered writes that never wait on the device", primary: "cpu",
			run: withWaits(runWith(2, 2, sampled(1, map[string]float64{"write": 1.5, "user": 0.3}, map[string]float64{"storage-write": 0.01, "sleep": 0.19})),
				in(1, "write", "storage-write", "device", 0, 0.01, 3), in(1, "sleep", "sleep", "timer", 0, 0.19, 20)),
			says: []string{"CPU-bound: the critical path spent 90% of its time running on a CPU"}, not: "inside",
		},
		{
			// rsync -a --fsync: the sender and generator wait on pipes for
			// the receiver, which copies and syncs every file.
			name: "a pipeline whose last stage syncs, with its cpu in the syncs", primary: "storage-sync", activity: "sync",
			run: func() *model.Run {
				r := withWaits(runWith(2, 2,
					sampled(1, map[string]float64{"user": 0.3, "read": 0.1}, map[string]float64{"sleep": 1.6}),
					sampled(2, map[string]float64{"user": 0.3}, map[string]float64{"sleep": 1.7}),
					sampled(3, map[string]float64{"user": 0.4, "write": 0.3, "sync": 0.6}, map[string]float64{"storage-sync": 0.62, "cpu-wait": 0.08})),
					in(1, "write", "sleep", "peer", 2, 1.6, 1000), in(2, "read", "sleep", "peer", 3, 1.7, 1000),
					in(3, "sync", "storage-sync", "kthread", 0, 0.62, 20000), in(3, "sync", "cpu-wait", "none", 0, 0.08, 20000))
				r.TimeAccounting.Syncs = []model.SyncCalls{{Kind: "fsync", Count: 20000, TotalSec: 1.3}}
				return r
			}(),
			says: []string{"sync-bound: ", "of the critical path's time was inside sync calls (fsync): ", "blocked on the device or the journal, ", "on a CPU in the kernel's sync path"},
		},
		{
			// A loop asleep on a 2 ms timer 99% of its time beside a helper
			// parked the whole window: every thread is idle by the idle
			// rule, and the workload still gets its verdict.
			name: "a timer loop that is 99% asleep", primary: "sleep",
			run: withWaits(runWith(2, 2,
				sampled(1, map[string]float64{"user": 0.012}, map[string]float64{"sleep": 1.98, "cpu-wait": 0.008}),
				sampled(2, map[string]float64{"user": 0.0002}, map[string]float64{"lock": 1.9998})),
				in(1, "sleep", "sleep", "timer", 0, 1.98, 1000), in(1, "sleep", "cpu-wait", "none", 0, 0.008, 1000),
				in(2, "futex", "lock", "none", 0, 1.9998, 1)),
			says: []string{"timer-bound: 99% of the critical path's time was asleep until a timer (nanosleep or clock_nanosleep, 500 a second)"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			Analyze(tc.run)
			v := tc.run.Verdict
			t.Log(v.Summary)
			if v.Primary != tc.primary || v.Activity != tc.activity {
				t.Errorf("verdict %s, activity %q; want %s, %q: %s", v.Primary, v.Activity, tc.primary, tc.activity, v.Summary)
			}
			rest := v.Summary
			for _, part := range tc.says {
				i := strings.Index(rest, part)
				if i < 0 {
					t.Fatalf("summary lacks %q (in order):\n%s", part, v.Summary)
				}
				rest = rest[i+len(part):]
			}
			if tc.not != "" && strings.Contains(v.Summary, tc.not) {
				t.Errorf("summary %q says %q", v.Summary, tc.not)
			}
			for st, want := range tc.split {
				if math.Abs(v.Split[st]-want) > 0.005 {
					t.Errorf("split %v: %s %.3f, want %.3f", v.Split, st, v.Split[st], want)
				}
			}
			checkMatrix(t, tc.run)
			for _, f := range tc.run.Findings {
				if f.ID == "perfsleuth.inconsistent" {
					t.Errorf("inconsistent: %v", f.Evidence)
				}
			}
			// Analysing again (a loaded record) gives the same verdict.
			before := *v
			Analyze(tc.run)
			if tc.run.Verdict.Summary != before.Summary {
				t.Errorf("second Analyze: %q, first %q", tc.run.Verdict.Summary, before.Summary)
			}
		})
	}
}

// checkMatrix holds the time by activity and state to the accounting: its
// cells add up to the busy threads' total, state by state (cpu to cpu,
// the blocked states to their categories, peer, timer and other to sleep
// and other), and its critical-path column to the critical path.
func checkMatrix(t *testing.T, r *model.Run) {
	t.Helper()
	ta := r.TimeAccounting
	if ta.Waits == nil {
		if ta.Matrix != nil {
			t.Errorf("a matrix without waits: %+v", ta.Matrix)
		}
		return
	}
	byState, crit, all := map[string]float64{}, 0.0, 0.0
	for _, m := range ta.Matrix {
		byState[m.State] += m.Seconds
		crit += m.CriticalSec
		all += m.Seconds
	}
	want := map[string]float64{}
	for c, s := range ta.Total {
		switch c {
		case model.CatSleep, model.CatOther:
			want["peer+timer+other"] += s
		default:
			want[c] += s
		}
	}
	byState["peer+timer+other"] = byState[model.StatePeer] + byState[model.StateTimer] + byState[model.StateOther]
	for st, s := range want {
		if math.Abs(byState[st]-s) > 1e-9 {
			t.Errorf("matrix %s %.6f s, the busy threads' %.6f s", st, byState[st], s)
		}
	}
	if b := busySeconds(ta); math.Abs(all-b) > 1e-9 {
		t.Errorf("matrix %.6f s, the busy threads' %.6f s", all, b)
	}
	if cp := criticalSeconds(ta); math.Abs(crit-cp) > 1e-9 {
		t.Errorf("matrix critical column %.6f s, the critical path %.6f s", crit, cp)
	}
}

// A record made before the on-CPU samples keeps its cpu time, under
// "unsampled", and the rest of the matrix from its waits.
func TestMatrixWithoutSamples(t *testing.T) {
	r := withWaits(runWith(2, 2, thread(1, map[string]float64{"cpu": 1.2, "storage-read": 0.6, "sleep": 0.2})),
		in(1, "read", "storage-read", "device", 0, 0.6, 100), in(1, "poll", "sleep", "timer", 0, 0.2, 20))
	Analyze(r)
	got := map[[2]string]float64{}
	for _, m := range r.TimeAccounting.Matrix {
		got[[2]string{m.Activity, m.State}] = m.Seconds
	}
	want := map[[2]string]float64{{"unsampled", "cpu"}: 1.2, {"read", "storage-read"}: 0.6, {"poll", "timer"}: 0.2}
	if len(got) != len(want) {
		t.Errorf("matrix %v, want %v", got, want)
	}
	for k, s := range want {
		if math.Abs(got[k]-s) > 1e-9 {
			t.Errorf("matrix %v: %v %.3f, want %.3f", got, k, got[k], s)
		}
	}
	if r.TimeAccounting.Matrix[0].Activity != "unsampled" {
		t.Errorf("rows not most time first: %+v", r.TimeAccounting.Matrix)
	}
	checkMatrix(t, r)
	// Its cpu time is not inside the reads, as far as it knows.
	if v := r.Verdict; v.Primary != model.CatCPU || v.Activity != "" {
		t.Errorf("verdict %+v, want cpu without an activity", v)
	}
}

// A thread's waits that do not cover a category's time leave it in the
// matrix (under "unsampled"), and a thread whose cpu by activity does not
// add up to its cpu time is a finding about perfsleuth.
func TestMatrixKeepsEveryThreadsTime(t *testing.T) {
	r := withWaits(runWith(2, 2, sampled(1, map[string]float64{"user": 1.0}, map[string]float64{"lock": 0.5, "sleep": 0.5})),
		in(1, "futex", "lock", "peer", 1, 0.5, 10))
	Analyze(r)
	checkMatrix(t, r)
	found := false
	for _, m := range r.TimeAccounting.Matrix {
		if m.Activity == "unsampled" && m.State == model.StateOther && math.Abs(m.Seconds-0.5) < 1e-9 {
			found = true
		}
	}
	if !found {
		t.Errorf("the sleep no wait covers is not under unsampled: %+v", r.TimeAccounting.Matrix)
	}
	r.TimeAccounting.Threads[0].CPUByActivity = map[string]float64{"user": 0.7}
	if ev := strings.Join(activitySums(r.TimeAccounting), "; "); !strings.Contains(ev, "its cpu by activity adds up to 700ms, its cpu is 1.00s") {
		t.Errorf("activitySums: %q", ev)
	}
	r.TimeAccounting.Matrix = r.TimeAccounting.Matrix[1:]
	if ev := strings.Join(activitySums(r.TimeAccounting), "; "); !strings.Contains(ev, "the time by activity and state adds up to") {
		t.Errorf("a matrix short of a cell: %q", ev)
	}
}

// The experiments set against a sync verdict with its CPU share named:
// the AndroBench case. Fewer cores cut the score, IO pressure barely
// moved it, and the CPU time inside fdatasync is what limits it.
func TestConclusionNamesTheCPUInsideTheCalls(t *testing.T) {
	run := androbench()
	run.Experiments = &model.Experiments{Measure: model.Measure{HigherIsBetter: true}, Conditions: []model.Condition{
		cond("baseline", "", 1000, 1010, 990),
		cond("cpu-half", "cpu", 520, 480, 640),
		cond("io-pressure", "io", 930, 925, 940),
	}}
	Analyze(run)
	v := run.Verdict
	if v.Primary != model.CatStorageSync || v.Bottleneck != "cpu" {
		t.Fatalf("primary %s, bottleneck %s: %s", v.Primary, v.Bottleneck, v.Conclusion)
	}
	want := "CPU-bound: the CPU limits it, inside the sync calls the accounting named: 31% of the critical path's time was on a CPU in the kernel's sync path, of the 72% inside them; cpu-half changed the result -48%"
	if !strings.Contains(v.Conclusion, want) || !strings.Contains(v.Conclusion, "while io-pressure changed the result -7%") {
		t.Errorf("conclusion %q, want %q and io-pressure's -7%%", v.Conclusion, want)
	}
}

// Threads that all waited the whole window for something that did not
// come did nothing to judge: the verdict says the workload was idle, and
// a parked pool does not read as lock contention. Only a record without a
// thread has no verdict.
func TestIdleWorkload(t *testing.T) {
	r := withWaits(runWith(2, 2,
		sampled(1, map[string]float64{"user": 0.001}, map[string]float64{"lock": 1.999}),
		sampled(2, map[string]float64{"user": 0.001}, map[string]float64{"sleep": 1.999})),
		in(1, "futex", "lock", "none", 0, 1.999, 1), in(2, "poll", "sleep", "none", 0, 1.999, 1))
	Analyze(r)
	v := r.Verdict
	want := "idle: the workload's 2 threads waited the whole window for something that did not come in it (lock 50%, sleep 50%)"
	if v.Primary != model.CatLock || v.Basis != "idle threads" || !strings.HasPrefix(v.Summary, want) {
		t.Errorf("verdict %+v, want lock, idle threads, %q", v, want)
	}
	if ids(r.Findings) != "" {
		t.Errorf("findings %s for a workload that did nothing", ids(r.Findings))
	}
	r = runWith(2, 2)
	Analyze(r)
	if r.Verdict.Primary != "" || r.Verdict.Summary != "no thread of the workload was seen in the window" {
		t.Errorf("no thread: verdict %+v", r.Verdict)
	}
}
