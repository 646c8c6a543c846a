package timeacct

import (
	"github.com/perfsleuth/perfsleuth/internal/delayacct"
	"github.com/perfsleuth/perfsleuth/internal/model"
)

// kernelWatch reads the kernel's accounting of the workload when the
// probe's window opens (begin) and when it closes (finish), for
// kernelAgreement, and the schedstat of the threads runnable then again
// right after each edge (opened, closed), until it moves: what moved in
// between is the kernel's uncertainty there. Its cost is a few file reads
// and one netlink round trip per thread at each end, and up to 50 ms at
// an edge where a thread was runnable (docs/probes.md).
type kernelWatch struct {
	roots      []int
	ts         *delayacct.Client
	cg         *workloadCgroup
	start, end *kernelSnapshot
}

func (w *kernelWatch) begin(roots []int) {
	w.roots = roots
	state := delayacct.State(delayacct.SysctlPath)
	if state == delayacct.StateOn && delayacct.TurnedOn() {
		state = delayTurnedOn
	}
	var err error
	if state != delayacct.StateOff && state != delayacct.StateUnavailable {
		w.ts, err = delayacct.Open()
	}
	var note string
	w.cg, note = ownCgroup("/proc", roots)
	w.start = readKernel(roots, w.ts, w.cg)
	w.start.delayState, w.start.psiNote = state, note
	if err != nil {
		w.start.delayErr = err
	}
}

// opened reads again, right after the window opened, the threads that
// were runnable at the start's read (edgeReadings).
func (w *kernelWatch) opened() {
	if w.start != nil {
		w.start.after = edgeReadings(w.start)
	}
}

// closed reads again, right after the window closed, the threads that were
// runnable at the end's read.
func (w *kernelWatch) closed() {
	if w.end != nil && w.end.after == nil {
		w.end.after = edgeReadings(w.end)
	}
}

func (w *kernelWatch) finish() {
	if w.start == nil || w.end != nil {
		return
	}
	w.end = readKernel(w.roots, w.ts, w.cg)
	w.end.delayState = delayacct.State(delayacct.SysctlPath)
	w.ts.Close()
	w.ts = nil
}

// agreement is the accounting ta against the kernel's, nil when the
// window never opened. An exited thread's schedstat is the one the probe
// read at its exit (threads), where its time in ta ends: read from /proc
// later, a zombie's counters also hold its exit's work (closing an
// unlinked 256 MiB file freed its blocks there, 20 ms more than here).
func (w *kernelWatch) agreement(ta *model.TimeAccounting, threads []Thread) *model.KernelAgreement {
	if w.start == nil || w.end == nil {
		return nil
	}
	for _, t := range threads {
		if !t.Exited || t.TID == 0 || t.ExitRuns == 0 {
			continue
		}
		r, ok := w.end.threads[t.TID]
		if !ok || r.pid != t.PID || !r.sched {
			continue
		}
		r.runNs, r.waitNs, r.runs = t.ExitRunNs, t.ExitWaitNs, t.ExitRuns
		w.end.threads[t.TID] = r
		delete(w.end.after, t.TID) // the exit's reading is exact
	}
	return kernelAgreement(ta, w.start, w.end)
}
