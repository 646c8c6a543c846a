package analyze

import (
	"strings"
	"testing"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// thread builds a thread whose seconds are given as category:seconds pairs;
// its wall time is their sum, as the accounting guarantees.
func thread(tid int, secs map[string]float64) model.ThreadTime {
	wall := 0.0
	for _, s := range secs {
		wall += s
	}
	return model.ThreadTime{PID: 1, TID: tid, Comm: "t", WallSec: wall, Seconds: secs, UserSec: secs[model.CatCPU]}
}

// runWith is a run whose accounting is consistent with its threads: the
// probe counted as many alive at once and as many exits as it lists.
func runWith(cpus int, window float64, threads ...model.ThreadTime) *model.Run {
	ta := &model.TimeAccounting{Source: "ebpf", WindowSec: window, Threads: threads}
	for _, t := range threads {
		switch {
		case t.Folded > 0:
			ta.ThreadsExited += int64(t.Folded)
		case t.Exited:
			ta.ThreadsExited++
		default:
			ta.PeakThreads++
		}
	}
	return &model.Run{Host: model.Host{CPUsOnline: cpus}, TimeAccounting: ta}
}

// stealRun is a thread 9 s on a CPU and 1 s asleep, steal seconds of its
// cpu stolen, measured.
func stealRun(steal float64) *model.Run {
	th := thread(1, map[string]float64{"cpu": 9, "sleep": 1})
	th.StealSec, th.UnchargedSec = steal, steal
	r := runWith(2, 10, th)
	r.TimeAccounting.StealMeasured = true
	return r
}

func ids(fs []model.Finding) string {
	var out []string
	for _, f := range fs {
		out = append(out, f.ID+":"+f.Severity)
	}
	return strings.Join(out, ",")
}

func TestVerdictAndFindings(t *testing.T) {
	cases := []struct {
		name     string
		run      *model.Run
		primary  string
		findings string
	}{
		{
			name:    "cpu-bound single thread",
			run:     runWith(2, 10, thread(1, map[string]float64{"cpu": 9.5, "cpu-wait": 0.1, "sleep": 0.4})),
			primary: "cpu",
		},
		{
			name: "sync-bound sqlite (DELETE+FULL shape)",
			run: runWith(2, 10, thread(1, map[string]float64{"cpu": 1, "storage-sync": 8.5, "storage-write": 0.5}),
				// a parked helper thread: idle, not a bottleneck
				thread(2, map[string]float64{"sleep": 10})),
			primary:  "storage-sync",
			findings: "sync.dominant:critical",
		},
		{
			name:     "sync share between the thresholds",
			run:      runWith(2, 10, thread(1, map[string]float64{"cpu": 6.5, "storage-sync": 3.5})),
			primary:  "cpu",
			findings: "sync.dominant:warning",
		},
		{
			name: "threads taking turns on a lock",
			run: runWith(4, 10,
				thread(1, map[string]float64{"cpu": 4, "lock": 6}),
				thread(2, map[string]float64{"cpu": 4, "lock": 6})),
			primary:  "lock",
			findings: "lock.contention:warning",
		},
		{
			name: "an idle pool beside a busy worker is not lock contention",
			run: runWith(2, 10,
				thread(1, map[string]float64{"cpu": 9.9, "cpu-wait": 0.1}),
				thread(2, map[string]float64{"lock": 9.99, "cpu": 0.01}),
				thread(3, map[string]float64{"lock": 9.99, "cpu": 0.01}),
				thread(4, map[string]float64{"sleep": 10})),
			primary: "cpu",
		},
		{
			name: "more runnable threads than CPUs",
			run: runWith(2, 10,
				thread(1, map[string]float64{"cpu": 6, "cpu-wait": 4}),
				thread(2, map[string]float64{"cpu": 6, "cpu-wait": 4}),
				thread(3, map[string]float64{"cpu": 6, "cpu-wait": 4})),
			primary:  "cpu",
			findings: "cpu.saturated:warning",
		},
		{
			name:     "a busy thread on a host that takes 20% of its CPU time",
			run:      stealRun(1.8),
			primary:  "cpu",
			findings: "cpu.steal:warning",
		},
		{
			name:    "steal under 5% of the time on a CPU is not a finding",
			run:     stealRun(0.4),
			primary: "cpu",
		},
		{
			name: "thread per message",
			run: func() *model.Run {
				// The main thread makes 499 short-lived threads, folded
				// into one entry as they exit; 17% of the busy time is
				// on a CPU in clone, exit and the like ("other").
				main := thread(1, map[string]float64{"cpu": 1, "sleep": 1})
				main.CPUByActivity = map[string]float64{"user": 0.8, "other": 0.2}
				exited := thread(0, map[string]float64{"cpu": 0.8, "sleep": 0.2})
				exited.Exited, exited.Folded = true, 499
				exited.CPUByActivity = map[string]float64{"user": 0.5, "other": 0.3}
				r := runWith(2, 2, main, exited)
				r.TimeAccounting.ThreadsCreated, r.TimeAccounting.ActivityHz = 499, 499
				return r
			}(),
			primary:  "cpu",
			findings: "threads.churn:warning",
		},
		{
			name: "tiny writes seen by /proc",
			run: func() *model.Run {
				// 20% of the busy time on a CPU inside write calls.
				tt := thread(1, map[string]float64{"cpu": 10})
				tt.CPUByActivity = map[string]float64{"user": 8, "write": 2}
				r := runWith(2, 10, tt)
				r.TimeAccounting.ActivityHz = 499
				r.Observation = &model.Observation{DurationSec: 10, Totals: model.Totals{Process: model.ProcessUse{SyscW: 200000, WChar: 200000 * 64, UserSec: 5, SystemSec: 5}}}
				return r
			}(),
			primary:  "cpu",
			findings: "syscall.tiny_io:warning",
		},
		{
			name: "4 KiB writes are not tiny",
			run: func() *model.Run {
				r := runWith(2, 10, thread(1, map[string]float64{"cpu": 10}))
				r.Observation = &model.Observation{DurationSec: 10, Totals: model.Totals{Process: model.ProcessUse{SyscW: 200000, WChar: 200000 * 4096, UserSec: 5, SystemSec: 5}}}
				return r
			}(),
			primary: "cpu",
		},
		{
			name: "an observer that costs the workload 6% of its time",
			run: func() *model.Run {
				r := runWith(2, 10, thread(1, map[string]float64{"cpu": 1, "sleep": 9}))
				r.TimeAccounting.Programs = []model.ProgramCost{{Name: "sched_switch", Runs: 2e6, TrackedRuns: 1e6, TrackedNs: 600, UntrackedNs: 60}}
				r.Observation = &model.Observation{DurationSec: 10, ObserverCPUSec: 0.2, Totals: model.Totals{Process: model.ProcessUse{UserSec: 1}}}
				return r
			}(),
			primary:  "sleep",
			findings: "observer.overhead_high:warning",
		},
		{
			name:    "/proc fallback: time it cannot attribute",
			run:     runWith(2, 10, thread(1, map[string]float64{"cpu": 2, "unknown": 8})),
			primary: "unknown",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			Analyze(c.run)
			if c.run.Verdict == nil || c.run.Verdict.Primary != c.primary {
				t.Errorf("verdict %+v, want primary %q", c.run.Verdict, c.primary)
			}
			if got := ids(c.run.Findings); got != c.findings {
				t.Errorf("findings %q, want %q", got, c.findings)
			}
			for _, f := range c.run.Findings {
				if f.Summary == "" || len(f.Evidence) == 0 {
					t.Errorf("finding %s without summary or evidence", f.ID)
				}
			}
			// Analysing again (a loaded record) changes nothing.
			before := ids(c.run.Findings)
			Analyze(c.run)
			if ids(c.run.Findings) != before {
				t.Errorf("second Analyze changed the findings")
			}
		})
	}
}

func TestIdleThreadsAreListedButNotTotalled(t *testing.T) {
	r := runWith(2, 10,
		thread(1, map[string]float64{"cpu": 9, "storage-sync": 1}),
		thread(2, map[string]float64{"lock": 10}))
	Analyze(r)
	ta := r.TimeAccounting
	if ta.Threads[0].Idle || !ta.Threads[1].Idle {
		t.Fatalf("idle flags: %v %v, want busy then idle", ta.Threads[0].Idle, ta.Threads[1].Idle)
	}
	if ta.Total["lock"] != 0 || ta.Total["cpu"] != 9 || ta.Total["storage-sync"] != 1 {
		t.Errorf("totals %v: the idle thread's lock time must not count", ta.Total)
	}
}

func TestEveryFindingIsDocumented(t *testing.T) {
	doc := readDoc(t)
	for _, r := range rules {
		if !strings.Contains(doc, "## `"+r.id+"`") {
			t.Errorf("docs/findings.md has no section for %s", r.id)
		}
	}
}

func TestFromObservation(t *testing.T) {
	r := &model.Run{Observation: &model.Observation{DurationSec: 4, Totals: model.Totals{Threads: []model.ThreadUse{
		{PID: 1, TID: 1, Comm: "main", UserSec: 1, SystemSec: 2},
		{PID: 1, TID: 2, Comm: "worker", UserSec: 0, SystemSec: 0},
	}}}}
	FromObservation(r)
	Analyze(r)
	ta := r.TimeAccounting
	if ta == nil || ta.Source != "procfs" || len(ta.Threads) != 2 {
		t.Fatalf("accounting %+v", ta)
	}
	main := ta.Threads[0]
	if main.Seconds["cpu"] != 3 || main.Seconds["unknown"] != 1 || main.Idle {
		t.Errorf("main thread %+v", main)
	}
	if !ta.Threads[1].Idle {
		t.Errorf("a thread that never ran should be idle")
	}
	if r.Verdict.Primary != "cpu" {
		t.Errorf("verdict %+v", r.Verdict)
	}
	// An existing (eBPF) accounting is left alone.
	before := r.TimeAccounting
	FromObservation(r)
	if r.TimeAccounting != before {
		t.Error("FromObservation replaced an existing accounting")
	}
}

func TestBuiltinRuntimeThreadsAreNotCounted(t *testing.T) {
	// A Go benchmark: the worker syncs; two runtime threads park in futexes
	// (read as lock) but run a little, so the 1% rule alone would keep them.
	r := runWith(2, 10,
		thread(11, map[string]float64{"cpu": 2, "storage-sync": 8}),
		thread(12, map[string]float64{"cpu": 0.5, "lock": 9.5}),
		thread(13, map[string]float64{"cpu": 0.5, "lock": 9.5}))
	r.Result = &model.Result{WorkerTIDs: []int{11}}
	Analyze(r)
	if r.Verdict.Primary != "storage-sync" {
		t.Errorf("verdict %+v, want storage-sync", r.Verdict)
	}
	if got := ids(r.Findings); got != "sync.dominant:critical" {
		t.Errorf("findings %q: runtime threads must not make lock.contention", got)
	}
	roles := []string{r.TimeAccounting.Threads[0].Role, r.TimeAccounting.Threads[1].Role}
	if roles[0] != "worker" || roles[1] != "runtime" {
		t.Errorf("roles %v", roles)
	}
}

func TestBlockedElsewhereIsNotIdle(t *testing.T) {
	// Blocked opening a FIFO: off the CPU, but not waiting for work.
	r := runWith(2, 10, thread(1, map[string]float64{"cpu": 0.01, "other": 9.99}))
	Analyze(r)
	if r.TimeAccounting.Threads[0].Idle || r.Verdict.Primary != "other" {
		t.Errorf("idle %v, verdict %+v", r.TimeAccounting.Threads[0].Idle, r.Verdict)
	}
}

func TestCloseSecondIsNamed(t *testing.T) {
	// SQLite DELETE+FULL on a fast virtual disk: the kernel's flush path
	// runs on the CPU about as long as the thread waits for the flush.
	r := runWith(2, 1, thread(1, map[string]float64{"cpu": 0.46, "storage-sync": 0.41, "other": 0.09, "cpu-wait": 0.04}))
	Analyze(r)
	if r.Verdict.Primary != "cpu" || r.Verdict.Secondary != "storage-sync" || !strings.Contains(r.Verdict.Summary, "storage-sync") {
		t.Errorf("verdict %+v: want cpu with storage-sync named beside it", r.Verdict)
	}
	r = runWith(2, 1, thread(1, map[string]float64{"cpu": 0.9, "sleep": 0.1}))
	Analyze(r)
	if r.Verdict.Secondary != "" {
		t.Errorf("verdict %+v: no close second here", r.Verdict)
	}
}

// TestOverheadIsTheWorkloadsDistortion: the observer's effect is the
// probes' time on the workload's own events against its busy time, not
// the probes' CPU against the workload's CPU. Regression: an IO-bound run
// (little CPU of its own) read "observing cost 16% as much CPU as the
// workload used" on nearly every run, whatever the probes did to it.
func TestOverheadIsTheWorkloadsDistortion(t *testing.T) {
	ioBound := runWith(2, 10, thread(1, map[string]float64{"cpu": 0.5, "storage-sync": 9.5}))
	ioBound.TimeAccounting.ProbeCPUSec = 0.08
	ioBound.TimeAccounting.Programs = []model.ProgramCost{{Name: "sched_switch", Runs: 1e6, TrackedRuns: 50000, TrackedNs: 300, UntrackedNs: 60}}
	ioBound.Observation = &model.Observation{DurationSec: 10, ObserverCPUSec: 0.01, Totals: model.Totals{Process: model.ProcessUse{UserSec: 0.5}}}
	Analyze(ioBound)
	if strings.Contains(ids(ioBound.Findings), "observer.overhead_high") {
		t.Errorf("0.15%% of an IO-bound workload's time in its probes is reported: %q", ids(ioBound.Findings))
	}
	pingpong := runWith(2, 10, thread(1, map[string]float64{"cpu": 5, "sleep": 5}))
	pingpong.TimeAccounting.Programs = []model.ProgramCost{{Name: "sched_switch", Runs: 3e6, TrackedRuns: 2e6, TrackedNs: 300}}
	Analyze(pingpong)
	if !strings.Contains(ids(pingpong.Findings), "observer.overhead_high") {
		t.Errorf("6%% of the workload's time in its probes is not reported: %q", ids(pingpong.Findings))
	}
}

// TestIdleUnderLoad: a thread woken by a timer every 20 ms waits a few
// percent for a CPU after each wake-up on a loaded machine; it is still
// waiting for work, and must not outvote the thread doing it. Regression:
// the "other" scenario read "sleep 50%, other 45%" under a parallel build.
// A thread that waits for a CPU most of the time wants to run: not idle.
func TestIdleUnderLoad(t *testing.T) {
	worker := thread(1, map[string]float64{model.CatOther: 1.45, model.CatCPU: 0.05})
	timer := thread(2, map[string]float64{model.CatSleep: 1.437, model.CatCPU: 0.003, model.CatCPUWait: 0.06})
	run := runWith(2, 1.5, worker, timer)
	Analyze(run)
	if run.Verdict.Primary != model.CatOther {
		t.Errorf("verdict %q (%s), want other: the timer thread is idle", run.Verdict.Primary, run.Verdict.Summary)
	}
	starved := thread(3, map[string]float64{model.CatSleep: 0.7, model.CatCPU: 0.005, model.CatCPUWait: 0.795})
	if isIdle(&starved) {
		t.Error("a thread waiting for a CPU half its time was called idle")
	}
}
