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
	b, run, removeDir, err := setupBuiltin(t)
	if err != nil {
		return nil, err
	}
	defer removeDir()
	t = run.Target

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

// setupBuiltin validates a built-in target, gives it its directory and
// starts its run record with the host's facts. removeDir removes a directory
// it created (unless --keep); the caller defers it.
func setupBuiltin(t model.Target) (b *Builtin, run *model.Run, removeDir func(), err error) {
	if b, err = Lookup(t.Kind); err != nil {
		return nil, nil, nil, err
	}
	if err = b.Validate(&t); err != nil {
		return nil, nil, nil, err
	}
	if removeDir, err = b.resolveDir(&t); err != nil {
		return nil, nil, nil, err
	}
	run = newRun(t)
	run.Host, run.Warnings = sysinfo.Collect(DirOf(&t))
	return b, run, removeDir, nil
}

// ErrInterrupted is returned when the user stopped a run before anything was measured.
var ErrInterrupted = errors.New("interrupted before the measured phase began: nothing was measured")

// DirOf is the working directory of a target ("" when it has none).
func DirOf(t *model.Target) string {
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
