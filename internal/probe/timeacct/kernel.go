package timeacct

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

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
// 5% of the larger figure, or 10 ms (model.KernelCheck.Disagreement); the
// thread furthest apart is chosen by the same rule, so that the check
// shown is the one that fails first. agreeFloor is that 10 ms, for the
// storage waits' judgement (kernel_delay.go).
const (
	agreeFloor = model.KernelAgreeFloorSec
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
	// runnable: the thread was running or waiting for a CPU (state R in
	// /proc/TID/stat) at the read, when its counters lag (edgeReadings).
	runnable bool
	// delay is its delay accounting; nil when not read.
	delay *delayacct.Task
}

// kernelSnapshot is the kernel's accounting of the workload at one end
// of the window.
type kernelSnapshot struct {
	threads map[int]kernelReading
	// after is schedstat read again right after the probe's edge (the
	// window's open or close), nil when it was not: what a thread's
	// counters moved between the two reads is the kernel's uncertainty
	// at that edge (model.KernelCheck.OpenEdgeSec, CloseEdgeSec).
	after map[int]kernelReading
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
	// Each process once, the roots too: an agent's cgroup lists every
	// process in it as a root, and one root may be below another.
	for _, pid := range workloadPids("/proc", roots) {
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
			r.runNs, r.waitNs, r.runs, r.sched = readSchedstat(filepath.Join(dir, t.Name()))
			r.runnable = r.sched && runnable(filepath.Join(dir, t.Name(), "stat"))
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
	if cg != nil {
		k.psi, k.cgroup = cg.read(), cg.path
	}
	return k
}

// readSchedstat reads the schedstat of the task whose /proc directory is
// dir.
func readSchedstat(dir string) (run, wait, runs uint64, ok bool) {
	b, err := os.ReadFile(filepath.Join(dir, "schedstat"))
	if err != nil {
		return 0, 0, 0, false
	}
	return parseSchedstat(string(b))
}

// runnable says whether the task of a /proc/.../stat file is in state R.
func runnable(stat string) bool {
	b, err := os.ReadFile(stat)
	return err == nil && proctree.StatRunnable(b)
}

// A thread's schedstat lags at a read while it is runnable: the time it
// has run since the kernel last updated it (at a tick or a switch) is not
// in the run time yet, and the time it has waited on a run queue since it
// was queued is added to the wait only when it gets a CPU. At each edge of
// the window the kernel's counters of the threads runnable at the read
// are read again until they move (the lagging part folded in), for at
// most edgeSettleMax: what they moved bounds the kernel's figure for the
// window (model.KernelCheck.OpenEdgeSec, CloseEdgeSec). Measured on the
// README's tests beside two CPU burners: a Go runtime thread of
// perfsleuth's own, queued at the close, was 0.015 s here against 0.005 s
// by the kernel read at the close.
const (
	edgeSettleMax   = 50 * time.Millisecond
	edgeSettleEvery = time.Millisecond
)

// edgeReadings reads again, after the window's edge, the threads of k
// runnable at the read before it, each until its counters move (or
// edgeSettleMax has passed): the readings after the edge, by tid.
func edgeReadings(k *kernelSnapshot) map[int]kernelReading {
	after := map[int]kernelReading{}
	var pending []kernelReading
	for _, r := range k.threads {
		if r.runnable {
			pending = append(pending, r)
		}
	}
	deadline := time.Now().Add(edgeSettleMax)
	for len(pending) > 0 {
		last := !time.Now().Before(deadline)
		if !last {
			time.Sleep(edgeSettleEvery)
		}
		left := pending[:0]
		for _, r := range pending {
			a := r
			var ok bool
			a.runNs, a.waitNs, a.runs, ok = readSchedstat(filepath.Join("/proc", strconv.Itoa(r.pid), "task", strconv.Itoa(r.tid)))
			switch {
			case !ok:
				// It exited: its reading at the exit is the probe's.
			case a.runNs != r.runNs || a.waitNs != r.waitNs || a.runs != r.runs || last:
				after[r.tid] = a
			default:
				left = append(left, r)
			}
		}
		pending = left
		if last {
			break
		}
	}
	return after
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
	lag       float64 // of perf, what came after the kernel ended its runs (ThreadTime.CutLagSec)
	// open, close: what the thread's kernel counters moved while the
	// window opened and closed (model.KernelCheck.OpenEdgeSec).
	open, close float64
	// stale: of krn, the thread's sleep the kernel counted as run-queue
	// wait (model.ThreadTime.KernelStaleSec).
	stale float64
}

// check is the pair as a judged check.
func (p pair) check() model.KernelCheck {
	return model.KernelCheck{PerfsleuthSec: p.perf, KernelSec: p.krn, Runs: p.runs, UnchargedSec: p.unch, CutLagSec: p.lag,
		OpenEdgeSec: p.open, CloseEdgeSec: p.close, KernelStaleSec: p.stale, Judged: true}
}

// apart is how far apart a pair is, relative to the larger figure, and
// whether analyze would call it a disagreement.
func (p pair) apart() (rel float64, fails bool) {
	_, rel, fails = p.check().Disagreement()
	return rel, fails
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
		sum.CutLagSec += p.lag
		sum.OpenEdgeSec += p.open
		sum.CloseEdgeSec += p.close
		sum.KernelStaleSec += p.stale
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
		TID: w.t.TID, PID: w.t.PID, Comm: w.t.Comm, Runs: w.runs, UnchargedSec: w.unch, CutLagSec: w.lag,
		OpenEdgeSec: w.open, CloseEdgeSec: w.close, KernelStaleSec: w.stale,
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
		cpu.CutLagSec += t.CutLagSec
		cpu.KernelSec += run
		wait.PerfsleuthSec += t.Seconds[model.CatCPUWait]
		wait.KernelSec += rq
		both = append(both, pair{t: t, perf: t.Seconds[model.CatCPU] + t.Seconds[model.CatCPUWait], krn: run + rq, runs: int64(b.runs - a.runs), unch: t.UnchargedSec, lag: t.CutLagSec,
			open: edgeSec(start, t, a), close: edgeSec(end, t, b), stale: t.KernelStaleSec})
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
	return checks, []string{"cpu and cpu-wait are judged together, summed and thread by thread (threads with 10 ms or more), as time moves between the two figures: a thread woken on an idle CPU waits for it to leave its idle state, which perfsleuth counts as cpu-wait and schedstat mostly as run time, and after a wake-up that preempted the running thread the kernel skips its clock's update at the switch that follows (docs/figures.md)"}
}

// edgeSec is what thread t's schedstat (run + wait) moved between its
// reading r at one end of the window and the read right after the probe's
// edge there (k.after): 0 when it was not read again (an exited thread's
// end is its exit's exact reading).
func edgeSec(k *kernelSnapshot, t model.ThreadTime, r kernelReading) float64 {
	a, ok := k.after[t.TID]
	if !ok || a.pid != t.PID || !a.sched || !r.sched || a.runNs+a.waitNs < r.runNs+r.waitNs {
		return 0
	}
	return float64(a.runNs+a.waitNs-r.runNs-r.waitNs) / 1e9
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
