package runner

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/sysinfo"
	"github.com/perfsleuth/perfsleuth/internal/workload"
)

// Hooks let the caller (the CLI) show what is going on; the runner never prints.
type Hooks struct {
	// Phase is called when a phase starts: "prepare", "run", "cleanup".
	Phase func(name string)
	// Progress reports the measured phase's progress as a fraction.
	Progress workload.Progress
}

func (h Hooks) phase(name string) {
	if h.Phase != nil {
		h.Phase(name)
	}
}

// Version is the perfsleuth version recorded in every run.
var Version = "dev"

func newRun(t model.Target) *model.Run {
	return &model.Run{
		SchemaVersion: model.SchemaVersion,
		Tool:          model.Tool{Name: "perfsleuth", Version: Version, Args: os.Args[1:]},
		StartedAt:     time.Now(),
		Target:        t,
	}
}

// Bench runs a built-in benchmark in this process, unobserved. A cancelled
// ctx stops it early: the run is then marked interrupted and still returned.
func Bench(ctx context.Context, t model.Target, hooks Hooks) (*model.Run, error) {
	b, err := Lookup(t.Kind)
	if err != nil {
		return nil, err
	}
	if err := b.Validate(&t); err != nil {
		return nil, err
	}
	removeDir, err := b.resolveDir(&t)
	if err != nil {
		return nil, err
	}
	defer removeDir()
	run := newRun(t)
	host, warnings := sysinfo.Collect(dirOf(&t))
	run.Host, run.Warnings = host, warnings

	w, err := b.New(t)
	if err != nil {
		return nil, err
	}
	hooks.phase("prepare")
	if err := w.Prepare(ctx); err != nil {
		cerr := w.Cleanup()
		if ctx.Err() != nil {
			return nil, errors.Join(ErrInterrupted, cerr)
		}
		return nil, errors.Join(err, cerr)
	}
	hooks.phase("run")
	res, err := w.Run(ctx, hooks.Progress)
	hooks.phase("cleanup")
	cerr := w.Cleanup()
	if err != nil {
		return nil, errors.Join(err, cerr)
	}
	if cerr != nil {
		run.Warnings = append(run.Warnings, "cleanup: "+cerr.Error())
	}
	run.Result = res
	run.Interrupted = ctx.Err() != nil
	run.EndedAt = time.Now()
	return run, nil
}

// ErrInterrupted is returned when the user stopped a run before anything was measured.
var ErrInterrupted = errors.New("interrupted before the measured phase began: nothing was measured")

// dirOf is the working directory of a built-in target ("" for others).
func dirOf(t *model.Target) string {
	switch {
	case t.FileIO != nil:
		return t.FileIO.Dir
	case t.SQLite != nil:
		return t.SQLite.Dir
	case t.Command != nil:
		return t.Command.Dir
	}
	return ""
}
