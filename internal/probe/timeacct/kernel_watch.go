package timeacct

import (
	"github.com/perfsleuth/perfsleuth/internal/delayacct"
	"github.com/perfsleuth/perfsleuth/internal/model"
)

// kernelWatch reads the kernel's accounting of the workload when the
// probe's window opens (begin) and when it closes (finish), for
// kernelAgreement. Its cost is a few file reads and one netlink round trip
// per thread at each end (docs/probes.md).
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
// window never opened.
func (w *kernelWatch) agreement(ta *model.TimeAccounting) *model.KernelAgreement {
	if w.start == nil || w.end == nil {
		return nil
	}
	return kernelAgreement(ta, w.start, w.end)
}
