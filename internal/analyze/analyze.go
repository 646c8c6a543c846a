// Package analyze turns a run record's measurements into conclusions: it
// totals the time accounting over the busy threads, names the bottleneck
// (the verdict) and applies the finding rules. It reads and writes only the
// model.Run, never the kernel, so it runs the same on a saved record.
package analyze

import (
	"sort"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// idleCPUShare: a thread that ran (or waited to run) for less than this share
// of its wall time, and never waited on storage, is waiting for work: a
// pool's parked worker, a parent waiting for its children. 1% leaves room for
// a parked thread's periodic wake-ups (Go's sysmon, a 10 ms housekeeping
// timer: 10 wake-ups/s of 10 µs is 0.01%) while a thread that takes turns on
// a contended lock runs far more than that.
const idleCPUShare = 0.01

// Run analyses a run record: the pipeline's analysis step, after the
// runner made the record and before it is rendered, the same for observe,
// diagnose, report and compare (a saved record is analysed again, with the
// rules of this perfsleuth). It builds the time accounting /proc allows when
// eBPF made none (FromObservation), then Analyze. Idempotent.
func Run(run *model.Run) {
	FromObservation(run)
	Analyze(run)
}

// Analyze fills run.TimeAccounting's totals, run.Verdict and run.Findings.
// It is idempotent: analysing a loaded record again gives the same result.
func Analyze(run *model.Run) {
	if ta := run.TimeAccounting; ta != nil {
		titles(run)
		assignRoles(run)
		summarize(ta)
		c := timeCells(ta, run.Storage)
		criticalPath(ta, c)
		fillMatrix(ta, c)
		busyStacks(ta)
		run.Verdict = verdict(ta, c)
	}
	if run.Experiments != nil {
		experiments(run)
		if run.Experiments.DeviceCurve != nil {
			placeOnCurve(run)
		}
	}
	run.Findings = nil
	for _, r := range rules {
		if f := r.check(run); f != nil {
			f.ID = r.id
			run.Findings = append(run.Findings, *f)
		}
	}
	// Last: perfsleuth's check of its own figures holds the findings too.
	if f := perfsleuthInconsistent(run); f != nil {
		f.ID = "perfsleuth.inconsistent"
		run.Findings = append(run.Findings, *f)
	}
	sort.SliceStable(run.Findings, func(i, j int) bool {
		return severityRank[run.Findings[i].Severity] > severityRank[run.Findings[j].Severity]
	})
}

// busyStacks drops the off-CPU stacks of idle threads and of a built-in
// benchmark's runtime threads: like their time, their sleeps are not the
// workload's.
func busyStacks(ta *model.TimeAccounting) {
	if ta.OffCPU == nil {
		return
	}
	skip := map[int]bool{}
	for _, t := range ta.Threads {
		if t.TID != 0 && (t.Idle || t.Role == "runtime") {
			skip[t.TID] = true
		}
	}
	kept := ta.OffCPU[:0]
	for _, o := range ta.OffCPU {
		if skip[o.TID] {
			ta.OffCPUIdleSec += o.Seconds
			continue
		}
		kept = append(kept, o)
	}
	ta.OffCPU = kept
}

var severityRank = map[string]int{"critical": 3, "warning": 2, "info": 1}

// titles gives the accounting's threads their process's title, which the
// /proc sampler read (eBPF sees only the 15-byte comm).
func titles(run *model.Run) {
	o := run.Observation
	if o == nil {
		return
	}
	byPID := map[int]string{}
	for _, th := range o.Totals.Threads {
		if th.Title != "" {
			byPID[th.PID] = th.Title
		}
	}
	for i := range run.TimeAccounting.Threads {
		t := &run.TimeAccounting.Threads[i]
		if t.Title == "" {
			t.Title = byPID[t.PID]
		}
	}
}

// assignRoles marks a built-in benchmark's threads as its workers or as Go
// runtime threads, from the worker thread ids the benchmark reported. The
// runtime's threads park in FUTEX_WAIT like a thread waiting for a mutex, so
// without this their parking would read as lock contention.
func assignRoles(run *model.Run) {
	if run.Result == nil || len(run.Result.WorkerTIDs) == 0 {
		return
	}
	workers := map[int]bool{}
	for _, tid := range run.Result.WorkerTIDs {
		workers[tid] = true
	}
	for i := range run.TimeAccounting.Threads {
		t := &run.TimeAccounting.Threads[i]
		t.Role = "runtime"
		if workers[t.TID] {
			t.Role = "worker"
		}
	}
}

// summarize marks idle threads and totals the busy ones.
func summarize(ta *model.TimeAccounting) {
	ta.Total = map[string]float64{}
	ta.UserSec, ta.SystemSec = 0, 0
	busy := 0
	for i := range ta.Threads {
		t := &ta.Threads[i]
		t.Idle = t.Role == "runtime" || isIdle(t)
		if !t.Idle {
			busy++
		}
	}
	if busy == 0 {
		judgeAllIdle(ta)
	}
	for i := range ta.Threads {
		t := &ta.Threads[i]
		if t.Idle {
			continue
		}
		for c, s := range t.Seconds {
			ta.Total[c] += s
		}
		ta.UserSec += t.UserSec
		ta.SystemSec += t.SystemSec
	}
}

// judgeAllIdle picks the threads to judge when every thread is idle.
// Idle means waiting for work while other threads do it: when every
// thread waits (a loop asleep on a 2 ms timer 99% of the time, a server
// with no client), the waiting is what the workload does, and a threshold
// must never make the workload's own time vanish from the totals and the
// verdict. The threads judged are those woken in the window, leaving out
// the ones parked the whole window (as much of their time off the CPU in
// a wait not ended as makes a poller, pollerTimerShare) and, when there
// are others, a built-in benchmark's runtime threads. Threads that all
// stayed parked did nothing in the window: they stay idle (a parked pool
// must not read as lock contention), and the verdict says the workload
// was idle (idleVerdict).
func judgeAllIdle(ta *model.TimeAccounting) {
	unended := map[int]float64{}
	for _, w := range ta.Waits {
		if w.Waker == model.WakerNone && w.Category != model.CatCPUWait {
			unended[w.TID] += w.Seconds
		}
	}
	parked := func(t model.ThreadTime) bool {
		off := t.WallSec - t.Seconds[model.CatCPU] - t.Seconds[model.CatCPUWait]
		return t.TID != 0 && off > 0 && unended[t.TID] >= pollerTimerShare*off
	}
	for _, pick := range []func(model.ThreadTime) bool{
		func(t model.ThreadTime) bool { return t.Role != "runtime" && !parked(t) },
		func(t model.ThreadTime) bool { return !parked(t) },
	} {
		n := 0
		for i := range ta.Threads {
			if t := &ta.Threads[i]; t.WallSec > 0 && pick(*t) {
				t.Idle = false
				n++
			}
		}
		if n > 0 {
			return
		}
	}
}

// idleWaitShare is the least share of its time off the CPU's run queue an
// idle thread spends waiting in lock or sleep; idleRunQueueShare the most
// of its wall time it may spend waiting for a CPU: a thread that waits for
// a CPU most of the time wants to run, and is not idle. A thread woken
// often on a loaded machine waits for a CPU after each wake-up, about a
// scheduler slice however little it then runs, which is the machine's
// load, not its work. Regressions: under load, a FIFO writer woken every
// 20 ms waited for a CPU 4% of its time, fell short of 95% in sleep and
// outvoted the thread doing the work; beside two CPU burners the same
// writer waited 8-10% of its time for 2-3 ms of CPU (6 runs), and the
// runs past 10% (the bound was 10%) called the program timer-bound,
// quiet ones "other".
const (
	idleWaitShare     = 0.95
	idleRunQueueShare = 0.5
)

func isIdle(t *model.ThreadTime) bool {
	if t.WallSec <= 0 {
		return true
	}
	s := t.Seconds
	if _, known := s[model.CatUnknown]; known && s[model.CatUnknown] > 0 {
		// The /proc fallback cannot see why a thread was off the CPU, so
		// it cannot call it idle on that evidence alone.
		return s[model.CatCPU] == 0
	}
	// Waiting for work happens on condition variables, futexes, timers and
	// polls (lock, sleep), nearly all the time the thread is neither running
	// nor queued to run; a thread that spent more than a sliver of it on
	// storage or elsewhere is not idle, however little it ran. (A sliver:
	// a parked thread's start-up faults in a page.) Its wake-ups' waits for
	// a CPU are the machine's load, not its work, up to idleRunQueueShare.
	off := t.WallSec - s[model.CatCPU] - s[model.CatCPUWait]
	return s[model.CatCPU]/t.WallSec < idleCPUShare && s[model.CatCPUWait]/t.WallSec < idleRunQueueShare &&
		off > 0 && (s[model.CatLock]+s[model.CatSleep])/off >= idleWaitShare
}

// busySeconds is the busy threads' total time.
func busySeconds(ta *model.TimeAccounting) float64 {
	sum := 0.0
	for _, s := range ta.Total {
		sum += s
	}
	return sum
}

// share is a category's share of the busy threads' time.
func share(ta *model.TimeAccounting, cat string) float64 {
	if b := busySeconds(ta); b > 0 {
		return ta.Total[cat] / b
	}
	return 0
}
