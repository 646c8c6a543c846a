// Package target is what perfsleuth observes, behind one contract: a
// built-in benchmark it runs in a child process, a command it starts, or
// processes already running. The runner observes any Target the same way:
//
//	Start   start the workload, or attach to it, up to where the measured
//	        phase would begin (a benchmark has prepared its files, a
//	        command waits at its gate), so that probes attach first
//	Pids    the roots of the process trees the probes follow
//	Wait    let the measured phase run and wait for its end; the
//	        processes stay readable (a command is not yet reaped)
//	Stop    end whatever Start began: children stopped and reaped, files
//	        removed; safe at any point, more than once
//
// Every exit path is the target's to clean up: a child process, a command
// and its descendants, a benchmark's directory.
package target

import (
	"context"
	"errors"
	"time"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// Target is one workload to observe.
type Target interface {
	// Start starts or attaches to the workload and returns once it is ready
	// to be observed. A cancelled ctx makes it give up with ErrInterrupted.
	// Stop must be called whatever Start returns.
	Start(ctx context.Context) error
	// Model describes the target for the run record, with every setting
	// resolved at Start (a benchmark's directory).
	Model() model.Target
	// Dir is where the workload's files are (the storage the run record's
	// host facts describe); "" when unknown.
	Dir() string
	// Pids are the roots of the process trees to observe (after Start).
	Pids() []int
	// Wait lets the measured phase begin and waits for it to end: the
	// workload finished, its duration passed, or ctx ended (the workload
	// is then stopped and what it measured is still returned, marked
	// interrupted). The processes stay readable until Stop.
	Wait(ctx context.Context) (Outcome, error)
	// Stop ends what Start began. Safe at any point and more than once.
	Stop()
}

// Outcome is how the measured phase ended.
type Outcome struct {
	Result      *model.Result
	Interrupted bool
	// Warnings are for the run record: things the user can act on.
	Warnings []string
}

// Hooks let the caller show what a target is doing; any may be nil. The
// target never prints.
type Hooks struct {
	// Phase is called when a phase starts: "prepare", "run", "cleanup".
	Phase func(name string)
	// Progress reports the measured phase's progress as a fraction.
	Progress func(fraction float64)
}

func (h Hooks) phase(name string) {
	if h.Phase != nil {
		h.Phase(name)
	}
}

// ErrInterrupted is returned when the user stopped a run before anything
// was measured.
var ErrInterrupted = errors.New("interrupted before the measured phase began: nothing was measured")

// signalLag is how long a signal to the whole process group (a terminal's
// Ctrl-C) may take to cancel perfsleuth's context after it has already
// killed the workload's process, which perfsleuth then sees gone first.
const signalLag = 200 * time.Millisecond

// Interrupted says whether ctx ends within signalLag: called when the
// workload's process has gone unexpectedly, it tells a Ctrl-C that reached
// the process first from a failure.
func Interrupted(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return true
	case <-time.After(signalLag):
		return false
	}
}
