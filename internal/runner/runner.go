// Package runner is perfsleuth's observation loop: it takes a target
// (package target) and the probes of the registry (package probe), and
// turns one run of the workload into a run record:
//
//	start the target (up to its measured phase)
//	    -> start each wanted probe, in registry order, on the target's pids
//	    -> wait for the measured phase to end
//	    -> stop every probe (in reverse), then each contributes to the record
//	    -> stop the target (children reaped, files removed)
//
// It knows no probe and no target by name, and it owns every exit path:
// whatever happens, started probes are stopped and the target is stopped.
package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/perfsleuth/perfsleuth/internal/instances"
	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/probe"
	"github.com/perfsleuth/perfsleuth/internal/probe/registry"
	"github.com/perfsleuth/perfsleuth/internal/proctree"
	"github.com/perfsleuth/perfsleuth/internal/sysinfo"
	"github.com/perfsleuth/perfsleuth/internal/target"
)

// Version is the perfsleuth version recorded in every run.
var Version = "dev"

// Options are one observation's settings.
type Options struct {
	// Probe is what the user asked of the probes (observe's flags).
	Probe probe.Options
	// Probes, when not nil, replace the registry's (tests; bench passes
	// an empty list to run unobserved).
	Probes []probe.Probe
	// BeforeRun, when set, is called with the target's pids once it is
	// ready and before the probes attach and the measured phase starts:
	// diagnose applies its conditions there. An error ends the run.
	BeforeRun func(pids []int) error
	// Armed, when set, is called once the probes are attached and
	// counting, as the measured window opens: observe -p says so there,
	// as bcc's tools print "Tracing... Hit Ctrl-C to end."
	Armed func()
}

// Observe runs t under observation and returns its run record. The record
// is not analysed: that is analyze.Run's, the next step of the pipeline.
func Observe(ctx context.Context, t target.Target, opts Options) (*model.Run, error) {
	probes := opts.Probes
	if probes == nil {
		probes = registry.New()
	}
	probes = slices.DeleteFunc(slices.Clone(probes), func(p probe.Probe) bool { return !p.Wanted(opts.Probe) })
	// Calibration (~0.5 s) overlaps the target's start (a benchmark's
	// prepare step) instead of following it; Start waits for it. Observe
	// waits for it too before returning, on every path, so that no probe
	// is being loaded for calibration after the run is over.
	var calibrating sync.WaitGroup
	calibrating.Go(func() {
		for _, p := range probes {
			p.Calibrate(opts.Probe)
		}
	})
	defer calibrating.Wait()

	run := &model.Run{
		SchemaVersion: model.SchemaVersion,
		Tool:          model.Tool{Name: "perfsleuth", Version: Version, Args: os.Args[1:]},
		StartedAt:     time.Now(),
	}
	defer t.Stop()
	if err := t.Start(ctx); err != nil {
		return nil, err
	}
	run.Target = t.Model()
	run.Host, run.Warnings = sysinfo.Collect(t.Dir())
	pids := t.Pids()
	others := otherInstances("/proc", os.Getpid(), pids)
	inst := instances.Register(os.Args[1:])
	defer inst.End()
	if opts.BeforeRun != nil {
		if err := opts.BeforeRun(pids); err != nil {
			return nil, err
		}
	}

	var disks []string
	if run.Host.Storage != nil {
		disks = run.Host.Storage.Disks
	}
	s := probe.NewSession(pids, opts.Probe, disks)
	started, err := startProbes(ctx, probes, s, run)
	defer func() {
		stopProbes(started)
		s.Close()
	}()
	if err != nil {
		if target.Interrupted(ctx) {
			return nil, ErrInterrupted // a Ctrl-C to the group ended the workload while the probes attached
		}
		return nil, goneWhileAttaching(pids, err)
	}
	for _, p := range started {
		if o, ok := p.(probe.Opener); ok {
			o.Open()
		}
	}
	if opts.Armed != nil {
		opts.Armed()
	}

	out, err := t.Wait(ctx)
	if err != nil {
		return nil, err
	}
	// The probes stop before the target does: the /proc sampler's last
	// sample reads the workload's processes, which the target keeps.
	for _, err := range stopProbes(started) {
		run.Warnings = append(run.Warnings, err.Error())
	}
	started = nil
	s.Close()
	for _, p := range probes {
		p.Contribute(run)
	}
	run.Result = out.Result
	run.Interrupted = out.Interrupted
	run.Warnings = append(run.Warnings, out.Warnings...)
	if w := leftRunning(run, pids, processAlive); w != "" {
		run.Warnings = append(run.Warnings, w)
	}
	others = append(others, otherInstances("/proc", os.Getpid(), pids)...)
	others = append(others, inst.Others(func(pid int) bool { return inWorkload(run, pids, pid) })...)
	if w := besideOthers(others); w != "" {
		run.Warnings = append(run.Warnings, w)
	}
	run.EndedAt = time.Now()
	return run, nil
}

// startProbes starts probes in order. A probe that cannot start leaves its
// reason in run.Warnings, and the probes that need it stay off without
// one of their own; a required probe that cannot start ends the run. It
// returns the probes that started, for stopProbes.
func startProbes(ctx context.Context, probes []probe.Probe, s *probe.Session, run *model.Run) ([]probe.Probe, error) {
	var started []probe.Probe
	on := map[string]bool{}
	for _, p := range probes {
		info := p.Info()
		ready := true
		for _, n := range info.Needs {
			ready = ready && on[n]
		}
		if !ready {
			continue
		}
		if err := p.Start(ctx, s); err != nil {
			if info.Required {
				return started, err
			}
			run.Warnings = append(run.Warnings, err.Error())
			continue
		}
		on[info.Name] = true
		started = append(started, p)
	}
	return started, nil
}

// stopProbes stops probes in the reverse of their start order (a probe
// stops before those it needs), and returns what failed, each error naming
// its probe.
func stopProbes(probes []probe.Probe) []error {
	var errs []error
	for i := len(probes) - 1; i >= 0; i-- {
		if err := probes[i].Stop(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", probes[i].Info().Name, err))
		}
	}
	return errs
}

// Bench runs a built-in benchmark in this process, unobserved. A cancelled
// ctx stops it early: the run is then marked interrupted and still returned.
func Bench(ctx context.Context, t model.Target, hooks target.Hooks) (*model.Run, error) {
	return Observe(ctx, target.NewInProcess(t, hooks), Options{Probes: []probe.Probe{}})
}

// ErrInterrupted is target.ErrInterrupted: the user stopped the run before
// anything was measured.
var ErrInterrupted = target.ErrInterrupted

// goneWhileAttaching says in words that a process given by pid ended while
// the probes were being attached (a probe's own error, "file does not
// exist" from /proc, says it only in the kernel's words); err otherwise.
// A command's processes wait for the probes: only a pid, or a Ctrl-C that
// reached them first (said as an interruption, before this), can do this.
func goneWhileAttaching(pids []int, err error) error {
	for _, pid := range pids {
		if unix.Kill(pid, 0) == unix.ESRCH {
			return fmt.Errorf("pid %d exited while perfsleuth attached to it, before anything was measured: observe a process that lives longer, or give the command after -- to observe it from its start (%w)", pid, err)
		}
	}
	return err
}

// leftRunning says which processes of an observed command's tree still ran
// when the command exited (a daemon it started, a job it put in the
// background): observation ends with the command, as under time(1), so
// what they did after is not in the report. The eBPF accounting knows the
// tree's threads and which exited; "" when it is not there, when the
// target is not a command of its own, or when nothing was left.
func leftRunning(run *model.Run, roots []int, alive func(pid int) bool) string {
	ta := run.TimeAccounting
	if ta == nil || ta.Source != "ebpf" || run.Target.Kind != "command" || len(run.Target.With) > 0 {
		return ""
	}
	seen := map[int]bool{}
	var left []string
	for _, th := range ta.Threads {
		if th.Exited || th.PID <= 0 || seen[th.PID] || slices.Contains(roots, th.PID) {
			continue
		}
		seen[th.PID] = true
		if alive(th.PID) {
			left = append(left, fmt.Sprintf("%d (%s)", th.PID, th.Comm))
		}
	}
	if len(left) == 0 {
		return ""
	}
	const most = 5
	n, more := len(left), ""
	if n > most {
		more, left = fmt.Sprintf(" and %d more", len(left)-most), left[:most]
	}
	return fmt.Sprintf("the command exited and left %d process(es) of its tree running: pid %s%s; observation ended with the command, so what they did after is not in this report: observe them with -p PID",
		n, strings.Join(left, ", "), more)
}

// processAlive says whether pid is a process that has not exited (a zombie
// has).
func processAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := proctree.StatState(b)
	return s != 0 && s != 'Z' && s != 'X'
}

// otherInstances lists the other perfsleuth processes running, as "pid
// (arguments)": the first of each tree (a diagnose's load helpers and a
// benchmark's child are its own), and none of self's tree nor of roots (a
// perfsleuth observed is the workload).
func otherInstances(procRoot string, self int, roots []int) []string {
	ents, err := os.ReadDir(procRoot)
	if err != nil {
		return nil
	}
	// One read of each process's stat gives its parent and its comm.
	parent := map[int]int{}
	var ours []int // the perfsleuth processes
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(procRoot, e.Name(), "stat"))
		if err != nil {
			continue // exited meanwhile
		}
		ppid, ok := proctree.StatPPID(string(b))
		if !ok {
			continue
		}
		parent[pid] = ppid
		if proctree.StatComm(b) == "perfsleuth" {
			ours = append(ours, pid)
		}
	}
	below := func(pid, root int) bool { // pid is root or one of its descendants
		for seen := 0; pid > 0 && seen < len(parent); seen++ {
			if pid == root {
				return true
			}
			pid = parent[pid]
		}
		return false
	}
	var out []string
	for _, pid := range ours {
		if below(pid, self) || slices.Contains(roots, pid) || slices.Contains(ours, parent[pid]) {
			continue
		}
		b, _ := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "cmdline"))
		args := strings.Fields(strings.ReplaceAll(string(b), "\x00", " "))
		if len(args) > 4 {
			args = append(args[:4], "...")
		}
		out = append(out, fmt.Sprintf("%d (%s)", pid, strings.Join(args, " ")))
	}
	slices.Sort(out)
	return out
}

// inWorkload says whether pid is one of the workload's processes: a root,
// or a process whose threads the time accounting followed.
func inWorkload(run *model.Run, roots []int, pid int) bool {
	if slices.Contains(roots, pid) {
		return true
	}
	if ta := run.TimeAccounting; ta != nil {
		for _, th := range ta.Threads {
			if th.PID == pid {
				return true
			}
		}
	}
	return false
}

// besideOthers says which other perfsleuth processes ran while this one
// observed (seen in /proc at its start or its end, or in the list of
// observations, internal/instances), "" when none did: their probes cost
// the machine too, and a diagnose's load generators load it, so the
// figures may hold some of their cost. Each is named once, by its pid.
func besideOthers(others []string) string {
	var all []string
	seen := map[string]bool{}
	for _, o := range slices.Sorted(slices.Values(others)) {
		pid, _, _ := strings.Cut(o, " ")
		if !seen[pid] {
			seen[pid] = true
			all = append(all, o)
		}
	}
	if len(all) == 0 {
		return ""
	}
	return fmt.Sprintf("another perfsleuth ran beside this one: pid %s; its probes' cost (and a diagnose's load generators) fell on the same machine, and the figures may hold some of it: measure one at a time for figures of the workload alone",
		strings.Join(all, ", pid "))
}
