package runner

import (
	"context"
	"fmt"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/probe/procfs"
)

// observers watch one process tree: the eBPF time accounting, when it can
// run here, and the /proc sampler. Every kind of target (built-in benchmark,
// command, pid) starts and finishes them the same way.
type observers struct {
	acct    *accountant
	sampler *procfs.Sampler
}

// startObservers attaches both to the tree below pid. Why eBPF could not
// run, if it could not, goes into run.Warnings; the sampler failing to start
// (the process already gone) is an error. ctx ends the sampler's periodic
// samples early; finish still takes the last one.
func startObservers(ctx context.Context, pid int, opts ObserveOptions, run *model.Run) (*observers, error) {
	acct, warn := startAccounting(pid, opts)
	if warn != "" {
		run.Warnings = append(run.Warnings, warn)
	}
	var disks []string
	if run.Host.Storage != nil {
		disks = run.Host.Storage.Disks
	}
	s := procfs.NewSampler(procfs.Config{RootPID: pid, IncludeRoot: true, Interval: opts.Interval, Disks: disks})
	if err := s.Start(ctx); err != nil {
		acct.close()
		return nil, fmt.Errorf("start /proc sampling of pid %d: %w", pid, err)
	}
	return &observers{acct: acct, sampler: s}, nil
}

// finish stops both and puts what they saw into run. The sampler first: its
// last sample must read the tree's counters while the processes are still
// there, and stopping it is quick; the probe's counts are already in its maps.
func (o *observers) finish(run *model.Run) {
	run.Observation = o.sampler.Stop()
	run.Warnings = append(run.Warnings, o.sampler.Warnings()...)
	o.acct.finish(run)
}

// close stops both without recording anything, for error paths. It is safe
// on nil and after finish.
func (o *observers) close() {
	if o == nil {
		return
	}
	o.sampler.Stop()
	o.acct.close()
}
