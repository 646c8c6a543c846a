package procfs

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/probe"
	"github.com/perfsleuth/perfsleuth/internal/sysinfo"
)

// New returns the /proc sampler as a probe.Probe. It runs on every
// observation, eBPF or not, and is required: it failing to start means the
// workload is already gone.
func New() probe.Probe { return &observer{} }

type observer struct {
	s   *Sampler
	obs *model.Observation
}

func (o *observer) Info() probe.Info { return probe.Info{Name: "procfs", Required: true} }

func (o *observer) Wanted(probe.Options) bool { return true }

// Calibrate does nothing: the sampler measures its own CPU time.
func (o *observer) Calibrate(probe.Options) {}

// Start takes the window's first sample. ctx does not end the sampling
// (Stop does), so that a workload stopping on Ctrl-C is sampled to its end.
func (o *observer) Start(ctx context.Context, s *probe.Session) error {
	if len(s.Roots) == 0 {
		return errors.New("the /proc sampler was given no process to follow")
	}
	pid := s.Roots[0]
	sm := NewSampler(Config{RootPID: pid, OtherRoots: s.Roots[1:], IncludeRoot: true, Interval: s.Interval, Disks: s.Disks})
	if err := sm.Start(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("start /proc sampling of pid %d: %w", pid, err)
	}
	o.s = sm
	return nil
}

// Stop takes the last sample, which must read the tree's counters while
// its processes are still there: the runner stops this probe first.
func (o *observer) Stop() error {
	if o.s == nil {
		return nil
	}
	o.obs = o.s.Stop()
	return nil
}

func (o *observer) Contribute(run *model.Run) {
	if o.s == nil {
		return
	}
	run.Observation = o.obs
	run.Warnings = append(run.Warnings, o.s.Warnings()...)
}

// Check says whether this process's own /proc files can be read.
func (o *observer) Check() sysinfo.Check {
	c := sysinfo.Check{Name: "proc_sampler"}
	for _, f := range []string{"/proc/self/stat", "/proc/self/io", "/proc/stat", "/proc/diskstats"} {
		if _, err := os.ReadFile(f); err != nil {
			c.Status, c.Detail = sysinfo.StatusMissing, fmt.Sprintf("cannot read %s: %v", f, errors.Unwrap(err))
			c.Fix = "mount procfs at /proc"
			return c
		}
	}
	c.Status, c.Detail = sysinfo.StatusOK, "the /proc sampler reads CPU, context switches, IO counters and iostat figures on every run"
	return c
}
