// Package probe is the contract every observer of a workload keeps: the eBPF
// time accounting, the storage probe, the on-CPU sampler and the /proc
// sampler each implement Probe in their own package, and the runner loops
// over the registry (package probe/registry) without knowing any of them by
// name. It also holds what the probes share: the session they observe one
// workload through (the pids, the options, the BPF maps one probe lends
// another, the process mappings stacks are named from) and the BPF helpers
// they would otherwise each repeat (bpf.go).
//
// A probe's life in one run:
//
//	Wanted(opts)      does this run ask for it?
//	Calibrate(opts)   measure its cost on this host (once per process, cached)
//	Start(ctx, s)     attach to s.Roots; an error leaves it off for the run
//	Stop()            detach and read what it counted
//	Contribute(run)   put that into the run record
//
// and Check() tells `perfsleuth doctor` whether it can run here.
package probe

import (
	"context"
	"sync"
	"time"

	"github.com/cilium/ebpf"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/symbolize"
	"github.com/perfsleuth/perfsleuth/internal/sysinfo"
)

// Options are what the user asked of observation (observe's flags); each
// probe takes the settings that concern it.
type Options struct {
	// Interval between /proc samples.
	Interval time.Duration
	// NoEBPF turns the eBPF probes off: /proc observation only.
	NoEBPF bool
	// Syscalls counts and times every syscall per thread (--syscalls).
	Syscalls bool
	// Storage adds the per-file view and SQLite's pages (--storage): it
	// hooks the read, write and sync calls, which costs more.
	Storage bool
	// SQL names the SQLite statement behind each SQLite file read, write
	// and sync (--sql, which implies Storage): uprobes on the SQLite
	// library the workload maps.
	SQL bool
	// Stacks takes the stacks of every sleep and samples the stacks on CPU
	// (--stacks).
	Stacks bool
	// NoUserNames leaves the user frames of the stacks taken (the lock
	// waits', the ticks') unnamed, for a caller that shows none (the
	// agent's windows, whose metrics name no frame): no process's
	// mappings are kept, so no new process of the workload is read at
	// 0.2, 0.4, 0.8 s ... of its life, each read a wake-up of an
	// otherwise idle agent.
	NoUserNames bool
}

// Info describes a probe to the runner.
type Info struct {
	// Name is the probe's stable id ("timeacct", "storage", ...).
	Name string
	// Needs names the probes that must have started before this one: it
	// uses the maps they share (Session.Map). When one of them is off, so
	// is this probe, without a warning of its own: the first probe's says
	// why.
	Needs []string
	// Required probes end the run when they cannot start (the /proc
	// sampler: the workload is gone); the others leave a warning and the
	// run goes on without them.
	Required bool
}

// Probe is one observer. The runner makes a new one per run (registry.New),
// calls Start once, and Stop and Contribute once whether or not Start
// succeeded (Stop first on every probe, in the reverse of the start order;
// then Contribute on every probe, in registry order).
type Probe interface {
	Info() Info
	// Wanted says whether opts ask for this probe.
	Wanted(opts Options) bool
	// Calibrate measures what the probe costs on this host with opts, once
	// per process: later calls (and Start) reuse the measurement. Safe to
	// call from another goroutine while the workload prepares; a failure is
	// kept as a note in the probe's cost.
	Calibrate(opts Options)
	// Start attaches the probe to the process trees of s.Roots. An error
	// says, in words a user can act on, why the probe is off for this run.
	Start(ctx context.Context, s *Session) error
	// Stop detaches the probe and reads what it counted. It is safe on a
	// probe that did not start and more than once.
	Stop() error
	// Contribute puts what the probe saw into run (nothing if it did not
	// start). Probes later in the registry may add to what earlier ones
	// wrote (their cost to the accounting's, AddCost).
	Contribute(run *model.Run)
	// Check says for `perfsleuth doctor` whether the probe loads and
	// attaches here, by trying it, and what observation does without it.
	Check() sysinfo.Check
}

// Opener is a probe whose window opens once every probe has started,
// not when it did: the runner calls Open then, right before the target's
// measured phase begins. Time a probe sees before (the other probes
// loading, the gate of a built-in benchmark, 50-100 ms here) is not the
// workload's: a 20 ms SQLite run read "sleep 95%", its worker waiting for
// the gate.
type Opener interface {
	Open()
}

// Session is one workload seen by every probe of a run.
type Session struct {
	// Roots are the processes whose trees are observed: their descendants
	// at Start and every process they fork afterwards.
	Roots []int
	Options
	// Disks are the block devices behind the workload's directory.
	Disks []string

	mu     sync.Mutex
	maps   map[string]*ebpf.Map
	keeper *symbolize.Keeper
	namer  *symbolize.Namer
	// tracked is the eBPF probes' set of the workload's processes, which
	// the keeper lists them from, when a probe shared it; procs signals
	// the keeper when one starts or execs, when a probe shared their
	// events (SharedProcEvents).
	tracked *TrackedSet
	procs   *procWatch
}

// MaxStacks bounds the off-CPU and the on-CPU stacks each kept in the
// record (most time first).
const MaxStacks = 200

// NewSession starts a session for the trees below roots.
func NewSession(roots []int, opts Options, disks []string) *Session {
	return &Session{Roots: roots, Options: opts, Disks: disks, maps: map[string]*ebpf.Map{}}
}

// Share lends a map to the probes that start later (Info.Needs); it stays
// the lender's, valid until the lender stops.
func (s *Session) Share(name string, m *ebpf.Map) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.maps[name] = m
}

// Map returns a map another probe shared, nil if none did.
func (s *Session) Map(name string) *ebpf.Map {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maps[name]
}

// Shared are the maps the time accounting lent (probe.Shared), nil where
// it lent none.
func (s *Session) Shared() Shared {
	return Shared{Tracked: s.Map("tracked"), Threads: s.Map("threads"), ThreadIdx: s.Map("thread_idx")}
}

// Mappings keeps the mappings of the observed processes from now until
// Close, for naming user stack frames after a process has exited. The
// first call starts the keeper; every probe that takes stacks shares it.
func (s *Session) Mappings() *symbolize.Keeper {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keeper == nil && !s.NoUserNames {
		var list func() []int
		var changed <-chan struct{}
		if m := s.maps["tracked"]; m != nil {
			if set, err := OpenTracked(m); err == nil {
				s.tracked = set
				list = set.Pids
			}
		}
		if m := s.maps[SharedProcEvents]; m != nil && list != nil {
			if w, err := watchProcs(m); err == nil {
				s.procs = w
				changed = w.C
			}
		}
		s.keeper = symbolize.KeepMaps(s.Roots, list, changed)
	}
	return s.keeper
}

// Namer names the frames of the stacks probes took, user frames through
// the mappings kept since Mappings was first called. Loaded once per session
// (kallsyms is large); call it after Close, when the mappings are final.
func (s *Session) Namer() *symbolize.Namer {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.namer == nil {
		s.namer = symbolize.NewNamer(s.keeper)
	}
	return s.namer
}

// Close ends what the session runs for its probes (the mappings keeper
// takes its last snapshot). The runner calls it after every probe stopped
// and before they contribute. Safe more than once.
func (s *Session) Close() {
	s.mu.Lock()
	k := s.keeper
	s.mu.Unlock()
	k.Stop()
	s.mu.Lock()
	s.tracked.Close()
	s.tracked = nil
	s.procs.Close()
	s.procs = nil
	s.mu.Unlock()
}

// AddCost adds a probe's CPU time, runs and programs to the accounting's
// stated cost, which is the cost of all of perfsleuth's programs. A run
// without eBPF time accounting has nowhere to state it, and nothing to add.
func AddCost(run *model.Run, sec float64, runs int64, progs ...model.ProgramCost) {
	ta := run.TimeAccounting
	if ta == nil || ta.Source != "ebpf" {
		return
	}
	ta.ProbeCPUSec += sec
	ta.ProbeRuns += runs
	ta.Programs = append(ta.Programs, progs...)
}
