// Package analyze turns a run record's measurements into conclusions: it
// totals the time accounting over the busy threads, names the bottleneck
// (the verdict) and applies the finding rules. It reads and writes only the
// model.Run, never the kernel, so it runs the same on a saved record.
package analyze

import (
	"fmt"
	"sort"
	"strings"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/units"
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
		assignRoles(run)
		summarize(ta)
		criticalPath(ta)
		busyStacks(ta)
		run.Verdict = verdict(ta)
	}
	if run.Experiments != nil {
		experiments(run)
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
	for i := range ta.Threads {
		t := &ta.Threads[i]
		t.Idle = t.Role == "runtime" || isIdle(t)
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

// idleWaitShare is the least share of its time off the CPU's run queue an
// idle thread spends waiting in lock or sleep; idleRunQueueShare the most
// of its wall time it may spend waiting for a CPU (a thread woken every 20
// ms on a loaded machine waits a few percent for a CPU after each wake-up;
// a thread that waits for a CPU most of the time wants to run, and is not
// idle). Regression: under load, a FIFO writer woken every 20 ms waited
// for a CPU 4% of its time, fell short of 95% in sleep and outvoted the
// thread doing the work.
const (
	idleWaitShare     = 0.95
	idleRunQueueShare = 0.10
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

var verdictText = map[string]string{
	model.CatCPU:          "CPU-bound: the busy threads spent %.0f%% of their time running on a CPU",
	model.CatCPUWait:      "CPU-starved: the busy threads spent %.0f%% of their time runnable but waiting for a CPU",
	model.CatStorageRead:  "storage-read-bound: %.0f%% of the busy threads' time was blocked reading from storage",
	model.CatStorageWrite: "storage-write-bound: %.0f%% of the busy threads' time was blocked writing to storage (direct writes, dirty-page throttling, writeback)",
	model.CatStorageSync:  "sync-bound: %.0f%% of the busy threads' time was blocked flushing to storage (fsync, fdatasync, O_SYNC writes)",
	model.CatLock:         "lock-bound: %.0f%% of the busy threads' time was spent waiting for other threads (futexes, kernel locks)",
	model.CatSleep:        "mostly waiting on timers, pipes, sockets or children (%.0f%% of the busy threads' time): the work happens elsewhere",
	model.CatOther:        "%.0f%% of the busy threads' time was off the CPU for other reasons",
	model.CatUnknown:      "where %.0f%% of the time went is unknown to the /proc observer: run as root for eBPF time accounting",
}

// verdict names the category with the largest share of the critical
// path's time (critical.go), or of the busy threads' when the record has
// no wait-for graph.
func verdict(ta *model.TimeAccounting) *model.Verdict {
	totals, basis := ta.Total, "busy threads"
	if ta.CriticalPath != nil && criticalSeconds(ta) > 0 {
		totals, basis = ta.CriticalPath, "critical path"
	}
	sum := 0.0
	for _, s := range totals {
		sum += s
	}
	if sum == 0 {
		return &model.Verdict{Primary: "", Summary: "no busy thread was seen in the window"}
	}
	best, second := "", ""
	for _, c := range model.Categories {
		switch {
		case best == "" || totals[c] > totals[best]:
			best, second = c, best
		case second == "" || totals[c] > totals[second]:
			second = c
		}
	}
	text := verdictText[best]
	if basis == "critical path" {
		text = strings.NewReplacer("the busy threads spent", "the critical path spent", "of their time", "of its time",
			"the busy threads' time", "the critical path's time").Replace(text)
		if best == model.CatSleep {
			text = sleepVerdict(ta)
		}
	}
	v := &model.Verdict{Primary: best, Basis: basis, Summary: fmt.Sprintf(text, totals[best]/sum*100)}
	if second != "" && totals[second] > 0 && totals[second] >= closeSecond*totals[best] {
		v.Secondary = second
		v.Summary += fmt.Sprintf("; nearly as much went to %s (%.0f%%): both are on the path, an experiment tells which one limits", second, totals[second]/sum*100)
	}
	if n := pollers(ta); len(n) > 0 {
		v.Summary += fmt.Sprintf("; left out: %s, which slept on timers or waited the whole window while the others worked", strings.Join(n, ", "))
	}
	return v
}

// pollers names the threads criticalPath left out as pollers.
func pollers(ta *model.TimeAccounting) []string {
	var out []string
	for _, t := range ta.Threads {
		if t.Poller {
			out = append(out, fmt.Sprintf("%s (%d)", t.Comm, t.TID))
		}
	}
	return out
}

// sleepVerdict says what a critical path that sleeps waits for: timers
// (the workload paces itself), something outside it, or nothing that ended
// in the window. Its one %.0f is the sleep's share.
func sleepVerdict(ta *model.TimeAccounting) string {
	by := map[string]float64{}
	acts := map[string]float64{}
	count := map[string]int64{}
	skip := map[int]bool{}
	for _, t := range ta.Threads {
		if t.Idle || t.Poller {
			skip[t.TID] = true
		}
	}
	for _, w := range ta.Waits {
		if w.Category != model.CatSleep || skip[w.TID] {
			continue
		}
		by[w.Waker] += w.Seconds
		if w.Waker == model.WakerTimer {
			acts[w.Activity] += w.Seconds
			count[w.Activity] += w.Count
		}
	}
	top := ""
	for _, k := range []string{model.WakerTimer, model.WakerOutside, model.WakerSoftirq, model.WakerKthread, model.WakerIRQ, model.WakerNone, model.WakerPeer} {
		if top == "" || by[k] > by[top] {
			top = k
		}
	}
	switch top {
	case model.WakerTimer:
		act := ""
		for a, s := range acts {
			if act == "" || s > acts[act] || s == acts[act] && a < act {
				act = a
			}
		}
		rate := ""
		if ta.WindowSec > 0 {
			rate = fmt.Sprintf(", %s a second", units.FormatCount(int64(float64(count[act])/ta.WindowSec)))
		}
		return "timer-bound: %.0f%% of the critical path's time was asleep until a timer (" + activityWords[act] + rate +
			"): the workload paces itself, and runs no faster than its timers fire"
	case model.WakerOutside, model.WakerSoftirq, model.WakerIRQ, model.WakerKthread:
		return "waiting for something outside the workload (%.0f%% of the critical path's time asleep until " + wakerWords[top] + "): the work happens elsewhere"
	}
	return verdictText[model.CatSleep]
}

// activityWords say what a thread was doing, by Wait.Activity.
var activityWords = map[string]string{
	"user": "user code", "fault": "page faults", "read": "read calls", "write": "write calls", "sync": "sync calls",
	"open": "open, stat and other metadata calls", "futex": "futex waits", "poll": "poll, select or epoll with a timeout",
	"sleep": "nanosleep or clock_nanosleep", "child": "waiting for children", "net": "socket calls",
	"aio": "asynchronous IO waits", "other": "other syscalls",
}

// wakerWords say what ended a wait, by Wait.Waker.
var wakerWords = map[string]string{
	model.WakerOutside: "a process outside the workload woke it", model.WakerSoftirq: "the network or another softirq woke it",
	model.WakerIRQ: "an interrupt woke it", model.WakerKthread: "a kernel thread woke it",
}

// closeSecond: a second category with at least 80% of the first's time is
// reported beside it. Accounting alone cannot rank two causes that close
// (CPU time spent inside fdatasync, for one, is CPU time caused by syncing).
const closeSecond = 0.8
