package experiment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/perfsleuth/perfsleuth/internal/analyze"
	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/probe"
	"github.com/perfsleuth/perfsleuth/internal/runner"
	"github.com/perfsleuth/perfsleuth/internal/stats"
	"github.com/perfsleuth/perfsleuth/internal/sysinfo"
	"github.com/perfsleuth/perfsleuth/internal/target"
	"github.com/perfsleuth/perfsleuth/internal/toolresult"
)

// side is one workload an experiment runs again and again: a built-in
// benchmark in a directory the experiment made, or a command. diagnose has
// one; a comparison (Pair) has two.
type side struct {
	// target is a built-in benchmark; nil for a command (argv).
	target *model.Target
	argv   []string
	// metric, for a command: the number its output prints; nil: its wall
	// time.
	metric *regexp.Regexp
	// reads is set for a command whose own result perfsleuth reads from
	// its output (fio, sysbench, pgbench, redis-benchmark; no --metric):
	// measure is then the figure it reported, from its first run.
	reads   bool
	measure model.Measure
	// dir is where its files are: the directory made for a built-in
	// benchmark, perfsleuth's own for a command; store the file system
	// behind it, when known.
	dir    string
	store  *model.Storage
	remove func()

	observe probe.Options
	probes  func() []probe.Probe
	builtin func(t model.Target, hooks target.Hooks) target.Target
}

// newSide prepares a workload for repeated runs: a built-in benchmark gets
// a directory of its own, made and removed by the experiment, so that its
// files are laid out once and reused by every run.
func newSide(spec Spec) (*side, error) {
	s := &side{argv: spec.Argv, metric: spec.Metric, measure: measureOf(spec), observe: spec.Observe, probes: spec.Probes,
		builtin: spec.Builtin, remove: func() {}}
	s.reads = spec.Target == nil && spec.Metric == nil && toolresult.Known(spec.Argv)
	if s.builtin == nil {
		s.builtin = target.NewBuiltin
	}
	cwd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	s.dir = cwd
	if spec.Target != nil {
		t := cloneTarget(*spec.Target)
		parent := target.DirOf(&t)
		if parent == "" {
			parent = "."
		} else if fi, err := os.Stat(parent); err != nil {
			// As the benchmark itself says it (its --dir is checked when
			// it prepares, which is after this).
			return nil, fmt.Errorf("--dir %s does not exist: create it or omit --dir", parent)
		} else if !fi.IsDir() {
			return nil, fmt.Errorf("--dir %s is not a directory: give a directory or omit --dir", parent)
		}
		dir, err := os.MkdirTemp(parent, "perfsleuth-diagnose-")
		if err != nil {
			return nil, fmt.Errorf("cannot create a working directory in %s (%w): cd to a writable directory or give --dir", parent, err)
		}
		s.remove = func() { os.RemoveAll(dir) }
		abs, _ := filepath.Abs(dir)
		setTargetDir(&t, abs)
		s.target, s.dir = &t, abs
	}
	if st, err := sysinfo.StorageOf(s.dir); err == nil {
		s.store = st
	}
	return s, nil
}

// disks are the disks behind the side's directory.
func (s *side) disks() []string {
	if s.store == nil {
		return nil
	}
	return s.store.Disks
}

// result is one run of a side: its record, analysed, and its measure.
type result struct {
	run   *model.Run
	value float64
}

// settle lets the previous run's writes reach the device (see settle),
// before a run and before its condition starts: a condition's own load
// (io-pressure's writer) would otherwise keep the disk busy through it
// (io-pressure's runs settled 1.5-1.9 s, the others 0.1 s).
func (s *side) settle(ctx context.Context) time.Duration {
	return settle(ctx, s.dir, s.disks())
}

// once makes one observed run (unobserved: with no probe attached), the
// device settled by the caller: it calls before with the workload's
// processes once they are ready, and measures the run. A run the user
// interrupted is returned with no error and its record marked interrupted.
//
// level, when above 0, is the workload's concurrency for this run
// (--scale): fileio's threads, or a command's {threads} placeholder.
func (s *side) once(ctx context.Context, before func([]int) error, hooks Hooks, unobserved bool, level int) (*result, error) {
	opts := runner.Options{Probe: s.observe, BeforeRun: before}
	switch {
	case unobserved:
		// An empty list, not nil: no probe at all (runner.Bench's way).
		opts.Probes = []probe.Probe{}
	case s.probes != nil:
		opts.Probes = s.probes()
	}
	var out *outputTail
	var capture *toolresult.Capture
	var t target.Target
	argv := s.argv
	if s.target != nil {
		tc := cloneTarget(*s.target)
		if level > 0 && tc.FileIO != nil {
			tc.FileIO.Threads = level
		}
		t = s.builtin(tc, target.Hooks{Phase: hooks.Phase, Progress: hooks.Progress})
	} else {
		if level > 0 {
			argv = withLevel(s.argv, "threads", level)
		}
		out = newOutputTail(s.metric)
		var w io.Writer = out
		if s.reads {
			capture = &toolresult.Capture{}
			w = io.MultiWriter(out, capture)
		}
		t = target.NewCommand(argv, target.CommandOptions{Output: w})
	}
	run, err := runner.Observe(ctx, t, opts)
	if err != nil {
		if errors.Is(err, target.ErrInterrupted) {
			return nil, ctx.Err()
		}
		return nil, err
	}
	if run.Interrupted {
		return &result{run: run}, nil
	}
	if capture != nil && run.Result != nil && run.Result.Command != nil {
		run.Result.Command.Reported = toolresult.ParseRun(argv, s.dir, capture.Bytes())
	}
	value, err := s.value(run, out)
	if err != nil {
		return nil, err
	}
	analyze.Run(run)
	return &result{run: run, value: value}, nil
}

// withLevel is argv with param's placeholder replaced by level.
func withLevel(argv []string, param string, level int) []string {
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = strings.ReplaceAll(a, Placeholder(param), strconv.Itoa(level))
	}
	return out
}

// experimentRun is what the record keeps of one run: at a --scale level
// (level > 0) also its duration, the units of work it did (a rate
// measure times the duration) and its time by state.
func (r *result) experimentRun(seq int, settled time.Duration, canaryMs float64, level int, m model.Measure) model.ExperimentRun {
	e := model.ExperimentRun{Seq: seq, Value: r.value, SettleSec: settled.Seconds(), CanaryMs: canaryMs}
	if v := r.run.Verdict; v != nil {
		e.Primary = v.Primary
	}
	ta := r.run.TimeAccounting
	if ta != nil && ta.Source == "ebpf" {
		e.CPUSec = ta.Total[model.CatCPU]
		e.CPUWaitSec = ta.Total[model.CatCPUWait]
		e.StorageSec = ta.Total[model.CatStorageRead] + ta.Total[model.CatStorageWrite] + ta.Total[model.CatStorageSync]
		e.CPUWaitOutsideSec = cpuWaitOutside(ta)
	}
	if level > 0 {
		e.Level = level
		if res := r.run.Result; res != nil {
			e.DurationSec = res.DurationSec
		}
		if m.HigherIsBetter {
			e.Units = r.value * e.DurationSec
		}
		if ta != nil && ta.Source == "ebpf" {
			e.Time = maps.Clone(ta.Total)
		}
	}
	return e
}

// medianRun is the run whose measure is closest to the median of all.
func medianRun(rs []*result) *model.Run {
	vals := make([]float64, len(rs))
	for i, r := range rs {
		vals[i] = r.value
	}
	med := stats.Median(vals)
	best := 0
	for i, v := range vals {
		if abs(v-med) < abs(vals[best]-med) {
			best = i
		}
	}
	return rs[best].run
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// cpuWaitOutside is the workload's cpu-wait that ended when a process
// outside it or a kernel thread gave up the CPU (a run-queue wait's waker
// is the task the thread got the CPU from).
func cpuWaitOutside(ta *model.TimeAccounting) float64 {
	var s float64
	for _, w := range ta.Waits {
		if w.Category == model.CatCPUWait && (w.Waker == model.WakerOutside || w.Waker == model.WakerKthread) {
			s += w.Seconds
		}
	}
	return s
}
