package timeacct

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/perfsleuth/perfsleuth/internal/delayacct"
	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/proctree"
)

// The kernel keeps its own per-thread accounting, which perfsleuth's must
// agree with (docs/figures.md, "Against the kernel"):
//
//   - /proc/PID/task/TID/schedstat: the time a thread ran and the time it
//     waited on a run queue, in ns (cpu and cpu-wait);
//   - delay accounting (taskstats, kernel_delay.go): the time it slept in
//     io_schedule, in ns (blocked IO), and its run-queue wait again;
//   - the pressure (PSI) of the workload's cgroup, when it has one of its
//     own (kernel_psi.go).
//
// All are read for the workload's threads when the window opens and when
// it closes (kernelSnapshot); their change over the window is set beside
// the accounting, thread by thread and summed (kernelAgreement), and
// analyze's perfsleuth.inconsistent says when a judged pair is more than
// 5% apart.

// Thresholds of the per-thread judgement. analyze holds a judged check to
// 5% of the larger figure, or 10 ms (perfsleuth_inconsistent.go:
// kernelAgreement, kernelAgreementMinSec); the thread furthest apart is
// chosen by the same rule, so that the check shown is the one that fails
// first.
const (
	agreeFrac  = 0.05
	agreeFloor = 0.010
	// minJudgedThreadSec: a thread is judged on its own when either
	// figure is at least 10 ms. The kernel's counters are read from user
	// space just before the probe's window opens and just before it
	// closes, while the window itself opens and closes in the kernel: a
	// thread's two windows differ by the time between those reads (µs for
	// a thread asleep, up to a scheduler tick for one running on another
	// CPU), which is a large share of a thread with little time, and
	// nothing in a busy one.
	minJudgedThreadSec = 0.010
)

// kernelReading is one thread's kernel counters at one end of the window.
type kernelReading struct {
	pid, tid      int
	runNs, waitNs uint64
	runs          uint64 // arrivals on a CPU (schedstat's third field)
	sched         bool   // runNs and waitNs were read
	// delay is its delay accounting; nil when not read.
	delay *delayacct.Task
}

// kernelSnapshot is the kernel's accounting of the workload at one end
// of the window.
type kernelSnapshot struct {
	threads map[int]kernelReading
	// delayState is kernel.task_delayacct ("on", "off", "unavailable",
	// "turned_on"); delayErr why delay accounting could not be read.
	delayState string
	delayErr   error
	// psi is the pressure of the workload's own cgroup (cgroup, its
	// path); psiNote says why there is none.
	psi     *psiReading
	cgroup  string
	psiNote string
}

// readKernel reads the kernel's accounting of every thread of the trees
// below roots: schedstat and, with ts, delay accounting, one right after
// the other for each thread, and the pressure of cg (nil: none).
func readKernel(roots []int, ts *delayacct.Client, cg *workloadCgroup) *kernelSnapshot {
	k := &kernelSnapshot{threads: map[int]kernelReading{}}
	for _, root := range roots {
		below, _ := proctree.Descendants("/proc", root)
		for _, pid := range append(below, root) {
			dir := filepath.Join("/proc", strconv.Itoa(pid), "task")
			tasks, err := os.ReadDir(dir)
			if err != nil {
				continue
			}
			for _, t := range tasks {
				tid, err := strconv.Atoi(t.Name())
				if err != nil {
					continue
				}
				r := kernelReading{pid: pid, tid: tid}
				if b, err := os.ReadFile(filepath.Join(dir, t.Name(), "schedstat")); err == nil {
					r.runNs, r.waitNs, r.runs, r.sched = parseSchedstat(string(b))
				}
				if ts != nil {
					if d, err := ts.Task(tid); err == nil {
						r.delay = &d
					} else if k.delayErr == nil && !os.IsNotExist(err) {
						k.delayErr = err
					}
				}
				if r.sched || r.delay != nil {
					k.threads[tid] = r
				}
			}
		}
	}
	if cg != nil {
		k.psi, k.cgroup = cg.read(), cg.path
	}
	return k
}

// parseSchedstat takes the run and run-queue times (ns) and the count of
// arrivals on a CPU of a schedstat line ("run wait timeslices").
func parseSchedstat(s string) (run, wait, runs uint64, ok bool) {
	f := strings.Fields(s)
	if len(f) < 3 {
		return 0, 0, 0, false
	}
	run, err1 := strconv.ParseUint(f[0], 10, 64)
	wait, err2 := strconv.ParseUint(f[1], 10, 64)
	runs, err3 := strconv.ParseUint(f[2], 10, 64)
	return run, wait, runs, err1 == nil && err2 == nil && err3 == nil
}

// pair is one thread's two figures for one check.
type pair struct {
	t         model.ThreadTime
	perf, krn float64
	runs      int64   // the thread's arrivals on a CPU in the window, by the kernel's count
	unch      float64 // of perf, what the kernel did not charge (ThreadTime.UnchargedSec)
}

// apart is how far apart a pair is, relative to the larger figure, and
// whether analyze would call it a disagreement.
func (p pair) apart() (rel float64, fails bool) {
	d := math.Abs(p.perf - p.unch - p.krn)
	m := max(p.perf-p.unch, p.krn)
	if m == 0 {
		return 0, false
	}
	return d / m, d > agreeFloor && d > agreeFrac*m && d > model.KernelSliceSec*float64(p.runs)
}

// judgeThreads makes the sum check and the per-thread check of pairs, the
// threads with at least minJudgedThreadSec by either figure judged one by
// one (nil when none is).
func judgeThreads(what, source string, pairs []pair) (sum model.KernelCheck, worst *model.KernelCheck) {
	sum = model.KernelCheck{What: what, Source: source, Judged: true}
	var w *pair
	var wRel float64
	var wFails bool
	judged := 0
	for i, p := range pairs {
		sum.Threads++
		sum.PerfsleuthSec += p.perf
		sum.KernelSec += p.krn
		sum.Runs += p.runs
		sum.UnchargedSec += p.unch
		if max(p.perf, p.krn) < minJudgedThreadSec {
			continue
		}
		judged++
		rel, fails := p.apart()
		if w == nil || fails && !wFails || fails == wFails && rel > wRel {
			w, wRel, wFails = &pairs[i], rel, fails
		}
	}
	if w == nil {
		return sum, nil
	}
	return sum, &model.KernelCheck{
		What:   fmt.Sprintf("%s, worst thread %d (%s)", what, w.t.TID, w.t.Comm),
		Source: source, Threads: judged, PerfsleuthSec: w.perf, KernelSec: w.krn, Judged: true,
		TID: w.t.TID, PID: w.t.PID, Comm: w.t.Comm, Runs: w.runs, UnchargedSec: w.unch,
	}
}

// kernelAgreement sets the accounting beside the kernel's own over the
// threads read at both ends of the window (an exited thread's last
// reading, a zombie leader's, is its final one).
func kernelAgreement(ta *model.TimeAccounting, start, end *kernelSnapshot) *model.KernelAgreement {
	k := &model.KernelAgreement{}
	if start == nil || end == nil {
		k.Notes = append(k.Notes, "the kernel's accounting was not read (the window never opened)")
		return k
	}
	k.Checks, k.Notes = schedstatChecks(ta, start, end)
	checks, notes, comparable := delayChecks(ta, start, end)
	k.Checks, k.Notes = append(k.Checks, checks...), append(k.Notes, notes...)
	k.DelayAcct = start.delayState
	checks, notes, k.Cgroup = psiChecks(ta, start, end, comparable)
	k.Checks, k.Notes = append(k.Checks, checks...), append(k.Notes, notes...)
	return k
}

// schedstatChecks: cpu and cpu-wait against schedstat.
func schedstatChecks(ta *model.TimeAccounting, start, end *kernelSnapshot) ([]model.KernelCheck, []string) {
	// The time on or queued for a CPU must agree. Its split need not: a
	// thread woken on an idle CPU waits for it to leave its idle state,
	// which perfsleuth counts as cpu-wait (from the wake-up to the switch
	// in) and schedstat mostly as run time (its run queue clock is not kept
	// up to date in idle): a sync loop read cpu 0.36s, cpu-wait 0.15s here
	// where schedstat had 0.51s and 0.007s, the same 0.51s in all.
	var both []pair
	cpu := model.KernelCheck{What: "cpu", Source: "schedstat"}
	wait := model.KernelCheck{What: "cpu-wait", Source: "schedstat"}
	for _, t := range ta.Threads {
		a, b, ok := readingsOf(t, start, end)
		if !ok || !a.sched || !b.sched || b.runNs < a.runNs || b.waitNs < a.waitNs {
			continue
		}
		run, rq := float64(b.runNs-a.runNs)/1e9, float64(b.waitNs-a.waitNs)/1e9
		cpu.Threads++
		wait.Threads++
		cpu.PerfsleuthSec += t.Seconds[model.CatCPU]
		cpu.UnchargedSec += t.UnchargedSec
		cpu.KernelSec += run
		wait.PerfsleuthSec += t.Seconds[model.CatCPUWait]
		wait.KernelSec += rq
		both = append(both, pair{t: t, perf: t.Seconds[model.CatCPU] + t.Seconds[model.CatCPUWait], krn: run + rq, runs: int64(b.runs - a.runs), unch: t.UnchargedSec})
	}
	if cpu.Threads == 0 {
		return nil, []string{"schedstat could not be read for any thread alive at both ends of the window (kernel without CONFIG_SCHED_INFO, or the threads exited): cpu and cpu-wait not compared with the kernel's"}
	}
	sum, worst := judgeThreads("cpu + cpu-wait", "schedstat", both)
	checks := []model.KernelCheck{sum}
	if worst != nil {
		checks = append(checks, *worst)
	}
	checks = append(checks, cpu, wait)
	return checks, []string{"cpu and cpu-wait are judged together, summed and thread by thread (threads with 10 ms or more): a thread woken on an idle CPU waits for it to leave its idle state, which perfsleuth counts as cpu-wait and schedstat mostly as run time"}
}

// readingsOf returns thread t's readings at both ends, when both are its
// own (a folded entry, TID 0, has none; a reused tid has another pid). A
// thread not read at the start was created after it: the kernel's
// counters of a new task start at 0 (schedstat's sum_exec_runtime and
// run_delay, and its delay record, zeroed at fork), so its start reading
// is zero.
func readingsOf(t model.ThreadTime, start, end *kernelSnapshot) (a, b kernelReading, ok bool) {
	if t.TID == 0 {
		return a, b, false
	}
	b, ok = end.threads[t.TID]
	if !ok || b.pid != t.PID {
		return a, b, false
	}
	a, ok = start.threads[t.TID]
	if !ok {
		a = kernelReading{pid: t.PID, tid: t.TID, sched: b.sched}
		if b.delay != nil {
			a.delay = &delayacct.Task{Version: b.delay.Version, HasMax: b.delay.HasMax}
		}
	}
	return a, b, a.pid == t.PID
}

// secs formats seconds for a note.
func secs(s float64) string {
	return strconv.FormatFloat(s, 'f', 3, 64) + "s"
}
