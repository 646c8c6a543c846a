package target

import (
	"context"
	"errors"
	"os"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/workload"
)

// NewInProcess returns a built-in benchmark run in this process: `bench`
// runs it unobserved this way, and tests observe the null benchmark this
// way without a child process. Probes that follow Pids would see all of
// perfsleuth, which is why observe runs benchmarks in a child (NewBuiltin).
func NewInProcess(t model.Target, hooks Hooks) Target {
	return &inProcess{t: t, hooks: hooks}
}

type inProcess struct {
	t         model.Target
	hooks     Hooks
	w         workload.Workload
	removeDir func()
}

func (p *inProcess) Model() model.Target { return p.t }
func (p *inProcess) Dir() string         { return DirOf(&p.t) }
func (p *inProcess) Pids() []int         { return []int{os.Getpid()} }

func (p *inProcess) Start(ctx context.Context) error {
	b, removeDir, err := setup(&p.t)
	if err != nil {
		return err
	}
	p.removeDir = removeDir
	w, err := b.New(p.t)
	if err != nil {
		return err
	}
	p.w = w
	p.hooks.phase("prepare")
	if err := p.w.Prepare(ctx); err != nil {
		cerr := p.cleanup()
		if ctx.Err() != nil {
			return errors.Join(ErrInterrupted, cerr)
		}
		return errors.Join(err, cerr)
	}
	return nil
}

// Wait runs the measured phase. A cancelled ctx stops it early: the run is
// then marked interrupted and still returned.
func (p *inProcess) Wait(ctx context.Context) (Outcome, error) {
	p.hooks.phase("run")
	res, err := p.w.Run(ctx, p.hooks.Progress)
	p.hooks.phase("cleanup")
	if err != nil {
		return Outcome{}, errors.Join(err, p.cleanup())
	}
	out := Outcome{Result: res, Interrupted: ctx.Err() != nil}
	if cerr := p.cleanup(); cerr != nil {
		out.Warnings = append(out.Warnings, "cleanup: "+cerr.Error())
	}
	return out, nil
}

func (p *inProcess) cleanup() error {
	if p.w == nil {
		return nil
	}
	w := p.w
	p.w = nil
	return w.Cleanup()
}

// Stop cleans up after a run that did not reach its end (its error, if
// any, is already the run's) and removes a directory it made.
func (p *inProcess) Stop() {
	p.cleanup()
	if p.removeDir != nil {
		p.removeDir()
		p.removeDir = nil
	}
}
