// Package profile is the on-CPU sampler: a software cpu-clock perf event on
// every CPU at a fixed frequency, whose eBPF program counts the kernel and
// user stacks of the workload's threads (like bcc's profile -F). It follows
// the processes of a running timeacct probe, whose tracked map it shares.
// Software clocks work where hardware PMU counters do not (most VMs, this
// one included). bpf/profile.bpf.c has the kernel side; docs/probes.md its
// cost.
package profile

import "github.com/perfsleuth/perfsleuth/internal/model"

// DefaultHz is the sampling frequency: 99 Hz, the rate perf and bcc users
// reach for when profiling production (a prime next to 100, so the samples
// do not fall in step with a timer of the workload's), ~1% error on a
// second of CPU at a cost of a few µs per sample.
const DefaultHz = 99

// Config says how often to sample.
type Config struct {
	Hz int
}

// Result is what the sampler counted.
type Result struct {
	Hz int
	// Samples of the workload's threads; Dropped those not counted (the
	// counts map was full); Runs every sample taken on the machine.
	Samples, Dropped, Runs uint64
	// FilterNs and WorkNs are the time the program's runs took, timed by
	// the program: those its filter stopped, and the workload's samples
	// (Samples + Dropped), which walk the stacks.
	FilterNs, WorkNs uint64
	Stacks           []Stack
}

// Cost is the sampler's CPU time in seconds and its runs and costs as the
// record lists the other programs' (model.ProgramCost).
func (r *Result) Cost() (float64, model.ProgramCost) {
	pc := model.ProgramCost{Name: "profile/do_sample", Runs: int64(r.Runs), TrackedRuns: int64(r.Samples + r.Dropped)}
	if untracked := pc.Runs - pc.TrackedRuns; untracked > 0 {
		pc.UntrackedNs = float64(r.FilterNs) / float64(untracked)
	}
	if pc.TrackedRuns > 0 {
		pc.TrackedNs = float64(r.WorkNs) / float64(pc.TrackedRuns)
	}
	return float64(r.FilterNs+r.WorkNs) / 1e9, pc
}

// Stack is how often thread TID of process PID was sampled with one pair
// of stacks: raw addresses, innermost first; KernelErr and UserErr say why
// one is missing.
type Stack struct {
	PID, TID           int
	Comm               string
	Samples            uint64
	Kernel, User       []uint64
	KernelErr, UserErr string
}
