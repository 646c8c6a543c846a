package profile

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/probe"
	"github.com/perfsleuth/perfsleuth/internal/symbolize"
	"github.com/perfsleuth/perfsleuth/internal/sysinfo"
)

// New returns the on-CPU sampler as a probe.Probe: with --stacks it
// samples the stacks of the workload's threads on CPU at DefaultHz.
func New() probe.Probe { return &observer{} }

type observer struct {
	p    *Probe
	s    *probe.Session
	res  *Result
	note string
}

func (o *observer) Info() probe.Info {
	return probe.Info{Name: "profile", Needs: []string{"timeacct"}}
}

func (o *observer) Wanted(opts probe.Options) bool { return opts.Stacks && !opts.NoEBPF }

// Calibrate does nothing: the sampler times its own runs (Result.Cost).
func (o *observer) Calibrate(probe.Options) {}

func (o *observer) Start(_ context.Context, s *probe.Session) error {
	p, err := Start(Config{Hz: DefaultHz}, s.Map("tracked"))
	if err != nil {
		return fmt.Errorf("no on-CPU stacks: %w", err)
	}
	o.p, o.s = p, s
	s.Mappings()
	return nil
}

func (o *observer) Stop() error {
	if o.p == nil {
		return nil
	}
	res, err := o.p.Stop()
	o.p, o.res = nil, res
	if err != nil {
		o.note = "on-CPU stacks incomplete: " + err.Error()
	}
	return err
}

// Contribute adds the named on-CPU stacks and the sampler's cost to the
// time accounting (there is nowhere to put them without one).
func (o *observer) Contribute(run *model.Run) {
	ta := run.TimeAccounting
	if o.res == nil || ta == nil {
		return
	}
	ta.OnCPUNote = o.note
	ta.OnCPUHz, ta.OnCPUSource = o.res.Hz, model.OnCPUClock
	ta.OnCPUSamples, ta.OnCPUDropped = int64(o.res.Samples), int64(o.res.Dropped)
	ta.OnCPU = nameOnCPU(o.res, o.s.Namer())
	if len(o.res.Stacks) == 0 && o.note == "" {
		ta.OnCPUNote = "no sample of the workload's threads on a CPU: it ran for less than a sampling period"
	}
	sec, pc := o.res.Cost()
	probe.AddCost(run, sec, pc.Runs, pc)
	if o.res.Dropped > 0 {
		run.Warnings = append(run.Warnings, fmt.Sprintf("%d on-CPU samples dropped: the sampler's map was full", o.res.Dropped))
	}
}

// Check says whether the sampler loads and attaches here, by doing it for
// a moment with a tracked map of its own.
func (o *observer) Check() sysinfo.Check {
	c := sysinfo.Check{Name: "on_cpu_sampler"}
	if os.Geteuid() != 0 {
		c.Status, c.Detail = sysinfo.StatusMissing, "not root: --stacks takes no on-CPU samples"
		c.Fix = "run perfsleuth as root (sudo)"
		return c
	}
	if err := tryStart(); err != nil {
		first, _, _ := strings.Cut(err.Error(), "\n")
		c.Status, c.Detail = sysinfo.StatusMissing, "the on-CPU sampler does not attach here ("+first+"): --stacks shows off-CPU stacks only"
		c.Fix = "a software cpu-clock perf event and BPF perf_event programs are needed; see the checks above"
		return c
	}
	c.Status, c.Detail = sysinfo.StatusOK, fmt.Sprintf("the on-CPU sampler attaches: --stacks samples the workload's stacks at %d Hz on every CPU", DefaultHz)
	return c
}

// nameOnCPU names the frames of the on-CPU samples, keeping
// probe.MaxStacks stacks, the most samples first.
func nameOnCPU(res *Result, n *symbolize.Namer) []model.OnCPUStack {
	out := []model.OnCPUStack{}
	for i, s := range res.Stacks {
		if i == probe.MaxStacks {
			break
		}
		o := model.OnCPUStack{PID: s.PID, TID: s.TID, Comm: s.Comm, Samples: int64(s.Samples),
			Seconds: float64(s.Samples) / float64(res.Hz), KernelNote: s.KernelErr, UserNote: s.UserErr}
		var kn, un string
		o.Kernel, o.User, kn, un = n.Name(s.PID, s.Kernel, s.User)
		o.KernelNote, o.UserNote = cmp.Or(kn, o.KernelNote), cmp.Or(un, o.UserNote)
		out = append(out, o)
	}
	return out
}
