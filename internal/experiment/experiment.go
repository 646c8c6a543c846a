// Package experiment proves a bottleneck by experiment: it reruns a workload
// under conditions that each take one resource away (half the CPUs, CPU
// contention, IO pressure, a cold page cache), every condition repeated, the
// runs interleaved so that drift on a shared machine spreads over all
// conditions alike, and collects each run's measure into the record's
// experiments. analyze turns them into sensitivity and the verdict.
//
// Every setting a condition makes is undone on every exit path: its load
// helpers are stopped, the directory the experiment made is removed, and the
// only processes it touches are the workload's and its own helpers.
package experiment

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"time"

	"github.com/perfsleuth/perfsleuth/internal/analyze"
	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/probe"
	"github.com/perfsleuth/perfsleuth/internal/target"
)

// Spec is a validated diagnose request.
type Spec struct {
	// Target is a built-in benchmark; nil for a command (Argv).
	Target *model.Target
	Argv   []string
	// Conditions to run (baseline is added when missing).
	Conditions []string
	Repeat     int
	// MaxRepeat caps the runs per condition when some condition is still
	// inconclusive after Repeat: rounds are added, interleaved, until none
	// is or MaxRepeat is reached (hyperfine's --max-runs). Repeat or less:
	// no extra round.
	MaxRepeat int
	// Budget caps the experiment's total time; 0: no cap.
	Budget time.Duration
	// Metric, for a command: a regex whose first group is the number to
	// compare (the median of all matching lines); nil: the wall time.
	Metric            *regexp.Regexp
	MetricLowerBetter bool
	// IOShare is io-pressure's share of the device's peak write rate;
	// IOPeak (bytes/s) skips measuring it.
	IOShare float64
	IOPeak  float64
	// IOPeakIOPS is the device's most IOPS io-throttle halves; 0: measured
	// (the device curve's highest point).
	IOPeakIOPS float64
	// Evict lists what cold-cache evicts for a command; empty: everything.
	Evict []string
	// CacheLimit is the page cache cache-limit leaves the workload, in
	// bytes; 0: half of its files' size (a built-in benchmark's, or
	// --evict's).
	CacheLimit int64
	// Observe is what each run's probes are asked.
	Observe probe.Options
	// Probes, when set, gives each run its probes instead of the registry
	// (tests).
	Probes func() []probe.Probe
	// Builtin makes a run's target of a built-in benchmark; nil:
	// target.NewBuiltin, a child process (tests run the null benchmark in
	// their own process with target.NewInProcess).
	Builtin func(t model.Target, hooks target.Hooks) target.Target
	// Scale, when set, runs the workload at each of its levels instead of
	// under conditions (diagnose --scale threads=1,2,4): the baseline is
	// its first level.
	Scale *Scale
	// DeviceCurve measures the device's IOPS by queue depth after the
	// runs (curve.go).
	DeviceCurve bool
}

// Scale is diagnose --scale: a parameter of the workload and its levels.
type Scale struct {
	// Param is "threads": a command's {threads} placeholder, fileio's
	// --threads.
	Param  string
	Levels []int
}

// Placeholder is where a command takes the level, for Param p.
func Placeholder(p string) string { return "{" + p + "}" }

// MinRepeat is the fewest runs per condition that give an interval.
const MinRepeat = 2

// Hooks let the CLI show the plan and the progress; any may be nil.
type Hooks struct {
	// Plan is called once the plan is known (after the warm-up run has
	// timed the workload), with its lines.
	Plan func(lines []string)
	// Status is called before each run.
	Status func(s Status)
	// Phase and Progress follow the current run (built-in benchmarks).
	Phase    func(string)
	Progress func(float64)
}

// Status is where the experiment is.
type Status struct {
	Condition string
	Repeat    int // this condition's run number, from 1
	Repeats   int
	Seq       int // the run's number overall, from 1
	Runs      int
	// Left is the estimated time to the end (0: not yet known).
	Left time.Duration
}

// Run runs the experiment and returns the record of the baseline run with
// the median measure, carrying the experiments. When ctx ends, the runs that
// finished are kept and the record says the experiment is incomplete.
func Run(ctx context.Context, spec Spec, hooks Hooks) (*model.Run, error) {
	// A copy: the caller's list (by default the registry's own) is sorted below.
	names := slices.Clone(spec.Conditions)
	if !slices.Contains(names, "baseline") {
		names = append([]string{"baseline"}, names...)
	}
	if err := CheckConditions(names); err != nil {
		return nil, err
	}
	// Keep the registry's order: baseline first in the first round.
	slices.SortStableFunc(names, func(a, b string) int {
		return slices.Index(conditionNames, a) - slices.Index(conditionNames, b)
	})
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find perfsleuth's own executable: %w", err)
	}
	cpus, err := allowedCPUs()
	if err != nil {
		return nil, err
	}
	sd, err := newSide(spec)
	if err != nil {
		return nil, err
	}
	defer sd.remove()
	e := &env{exe: exe, cpus: cpus, ioShare: spec.IOShare, ioPeak: spec.IOPeak, stateDir: peakStateDir(), workDir: sd.dir, store: sd.store, target: spec.Target, cacheBudget: spec.CacheLimit, peakIOPS: spec.IOPeakIOPS}
	if spec.IOPeakIOPS > 0 {
		e.iopsDoc = "given with --io-peak-iops"
	}
	if spec.IOPeak > 0 {
		e.peakDoc = "given with --io-peak"
	}
	if spec.Target != nil {
		e.evict = []string{sd.dir}
	}
	for _, p := range spec.Evict {
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, err
		}
		if _, err := os.Stat(abs); err != nil {
			if pe := (*os.PathError)(nil); errors.As(err, &pe) {
				err = pe.Err // the path is named already
			}
			return nil, fmt.Errorf("--evict %s: %w: give the files or directories the workload reads", p, err)
		}
		e.evict = append(e.evict, abs)
	}

	ex := &model.Experiments{Measure: sd.measure, Repeat: spec.Repeat}
	if spec.Scale != nil {
		return runScale(ctx, spec, names, sd, e, ex, hooks)
	}
	var conds []*condition
	asked, applied := 0, 0
	for _, n := range names {
		c := conditions[n]
		if c.resource != "" {
			asked++
		}
		settings, err := c.prepare(ctx, e)
		if ctx.Err() != nil {
			return nil, target.ErrInterrupted
		}
		if err != nil {
			if n == "baseline" {
				return nil, err
			}
			ex.Skipped = append(ex.Skipped, model.SkippedCondition{Name: n, Reason: err.Error()})
			continue
		}
		conds = append(conds, c)
		mc := model.Condition{Name: n, Resource: c.resource, Settings: settings}
		if c.unobserved {
			ex.Unobserved = &mc
			continue
		}
		if c.resource != "" {
			applied++
		}
		ex.Conditions = append(ex.Conditions, mc)
	}
	// Baseline alone is a request too (--conditions baseline): repeats of
	// the unchanged workload, whose spread is the noise `perfsleuth compare`
	// needs; so is the observer effect alone (baseline,unobserved). Only
	// when conditions that take a resource away were asked for and none
	// applies is there nothing to run.
	if asked > 0 && applied == 0 {
		return nil, fmt.Errorf("no condition besides baseline can be applied here: %v", ex.Skipped)
	}

	x := &experimenter{spec: spec, side: sd, env: e, hooks: hooks, ex: ex, conds: conds}
	for _, c := range conds {
		x.recs = append(x.recs, x.recordOf(c))
	}
	run, err := x.run(ctx)
	if err == nil && spec.DeviceCurve && ctx.Err() == nil {
		// After the runs, so that it disturbs none of them.
		if ex.DeviceCurve, err = measureCurve(ctx, sd.dir, sd.store); err != nil {
			ex.DeviceCurveNote, err = "not measured: "+err.Error(), nil
		}
	}
	return run, err
}

// runScale runs the levels of spec.Scale, interleaved as conditions are:
// the baseline condition is the first level, each other level a condition
// of its own whose runs the record keeps in Experiments.Scaling.
func runScale(ctx context.Context, spec Spec, names []string, sd *side, e *env, ex *model.Experiments, hooks Hooks) (*model.Run, error) {
	if len(names) != 1 {
		return nil, fmt.Errorf("--scale runs the workload's levels, not conditions (%v): run those in a diagnose of their own, at the level you care about", names[1:])
	}
	sc := spec.Scale
	base := *conditions["baseline"]
	base.level = sc.Levels[0]
	base.prepare = func(context.Context, *env) ([]string, error) {
		return []string{fmt.Sprintf("%s=%d, the first level", sc.Param, sc.Levels[0])}, nil
	}
	ex.Conditions = []model.Condition{{Name: "baseline"}}
	ex.Scaling = &model.Scaling{Param: sc.Param, CPUs: len(e.cpus)}
	conds := []*condition{&base}
	x := &experimenter{spec: spec, side: sd, env: e, hooks: hooks, ex: ex}
	x.levels = make([]model.Condition, len(sc.Levels))
	for i, n := range sc.Levels {
		settings := []string{fmt.Sprintf("%s=%d", sc.Param, n)}
		if n > len(e.cpus) {
			settings[0] += fmt.Sprintf(", more than the workload's %d CPUs: its threads take turns on them", len(e.cpus))
		}
		x.levels[i] = model.Condition{Name: fmt.Sprintf("%s=%d", sc.Param, n), Settings: settings}
		if i == 0 {
			ex.Conditions[0].Settings = settings
			continue
		}
		c := base
		c.name, c.level = x.levels[i].Name, n
		conds = append(conds, &c)
	}
	x.conds = conds
	x.recs = append(x.recs, &ex.Conditions[0])
	for i := 1; i < len(sc.Levels); i++ {
		x.recs = append(x.recs, &x.levels[i])
	}
	return x.run(ctx)
}

// recordOf is where c's runs go in the record: the observer effect's, or
// its condition's.
func (x *experimenter) recordOf(c *condition) *model.Condition {
	if c.unobserved {
		return x.ex.Unobserved
	}
	for i := range x.ex.Conditions {
		if x.ex.Conditions[i].Name == c.name {
			return &x.ex.Conditions[i]
		}
	}
	return nil
}

type experimenter struct {
	rot   *rotations
	spec  Spec
	side  *side
	env   *env
	hooks Hooks
	ex    *model.Experiments
	conds []*condition
	// recs are where each condition's runs go (x.ex.Conditions' entries,
	// or x.ex.Unobserved), in the order of conds.
	recs []*model.Condition
	// baselines are the baseline runs, in the order they ran.
	baselines []*result
	notes     []string
	// levels are --scale's levels' runs (the first level's are the
	// baseline's), in the order of Spec.Scale.Levels.
	levels []model.Condition
}

// rotations say where each round starts in the condition list: round r
// runs the n conditions from place at(r) on, wrapping, so that no
// condition always follows the same one (a cache warmed or a device
// busied by the run before). Each block of n rounds starts once at each
// place, so each condition runs at each place of a round once a block,
// in an order drawn at random for the block; the first round starts with
// the baseline. A fixed rotation (round r from place r) with two
// conditions is A B, B A, A B, ...: each at the same places of every four
// runs, where whatever comes back on the machine at that rhythm lands on
// one of them in every round (see roundOrder).
type rotations struct {
	n     int
	start []int
}

func (ro *rotations) at(r int) int {
	for len(ro.start) <= r {
		if len(ro.start) == 0 {
			// Baseline first: place 0, then the others at random.
			rest := rand.Perm(ro.n - 1)
			ro.start = append(ro.start, 0)
			for _, p := range rest {
				ro.start = append(ro.start, p+1)
			}
			continue
		}
		ro.start = append(ro.start, rand.Perm(ro.n)...)
	}
	return ro.start[r]
}

// schedule is the run order of rounds from to to-1: each round's
// conditions by their index, from its place on.
func (ro *rotations) schedule(from, to int) []int {
	var order []int
	for r := from; r < to; r++ {
		p := ro.at(r)
		for i := 0; i < ro.n; i++ {
			order = append(order, (i+p)%ro.n)
		}
	}
	return order
}

func (x *experimenter) run(ctx context.Context) (*model.Run, error) {
	start := time.Now()
	// A warm-up run, not counted: it fills the caches the way every later
	// run finds them (hyperfine's --warmup) and times the workload for the plan.
	if x.hooks.Status != nil {
		x.hooks.Status(Status{Condition: "warm-up", Repeat: 1, Repeats: 1})
	}
	if run, err := x.once(ctx, 0, 0); ctx.Err() != nil || (run != nil && run.Interrupted) {
		return nil, target.ErrInterrupted
	} else if err != nil {
		return nil, err
	}
	perRun := time.Since(start)
	repeats, order, err := x.plan(perRun, perRun)
	if err != nil {
		return nil, err
	}
	done := map[int]int{}
	for seq := 0; seq < len(order); seq++ {
		ci := order[seq]
		if x.spec.Budget > 0 && time.Since(start)+perRun > x.spec.Budget+x.spec.Budget/10 {
			x.ex.Incomplete = true
			x.note(fmt.Sprintf("stopped at the --budget of %s after %d runs", x.spec.Budget, seq))
			break
		}
		if x.rewarmBefore(order, seq) {
			if err := x.rewarm(ctx); ctx.Err() != nil {
				x.ex.Incomplete = true
				break
			} else if err != nil {
				x.ex.Incomplete = true
				x.note(fmt.Sprintf("stopped: the run not counted before run %d (%s) failed: %v", seq+1, x.conds[ci].name, err))
				break
			}
		}
		if x.hooks.Status != nil {
			s := Status{Condition: x.conds[ci].name, Repeat: done[ci] + 1, Repeats: repeats + x.ex.Extended, Seq: seq + 1, Runs: len(order)}
			avg := time.Since(start) / time.Duration(seq+1)
			s.Left = avg * time.Duration(len(order)-seq)
			x.hooks.Status(s)
		}
		run, err := x.once(ctx, ci, seq+1)
		if ctx.Err() != nil || (run != nil && run.Interrupted) {
			x.ex.Incomplete = true
			break
		}
		if err != nil {
			if len(x.baselines) == 0 {
				return nil, err
			}
			// Keep what was measured; the error is the record's warning.
			x.ex.Incomplete = true
			x.note(fmt.Sprintf("stopped: run %d (%s) failed: %v", seq+1, x.conds[ci].name, err))
			break
		}
		done[ci]++
		// At the end of the planned rounds, a condition still
		// inconclusive gets another round of every condition, up to
		// MaxRepeat: "use more --repeat" done instead of said.
		if seq == len(order)-1 && repeats+x.ex.Extended < x.spec.MaxRepeat && x.undecided() {
			r := repeats + x.ex.Extended
			order = append(order, x.rot.schedule(r, r+1)...)
			x.ex.Extended++
		}
	}
	if len(x.baselines) == 0 {
		return nil, target.ErrInterrupted
	}
	return x.record(ctx), nil
}

// rewarm makes a baseline run that is not counted, after a run that
// left the workload's files out of the page cache (cache-limit's) and
// before one of a condition that does not: it brings the page cache
// back to where the warm-up left it, as every baseline run finds it
// after another. Reading the --evict paths would not do: a workload
// reads a part of its files, or without --evict any file on the
// machine, and the warm-up's cache is what it read.
func (x *experimenter) rewarm(ctx context.Context) error {
	if x.hooks.Status != nil {
		x.hooks.Status(Status{Condition: "re-warm", Repeat: len(x.ex.Rewarms) + 1, Repeats: len(x.ex.Rewarms) + 1})
	}
	run, err := x.once(ctx, 0, -1)
	if run != nil && run.Interrupted {
		return target.ErrInterrupted
	}
	return err
}

// rewarmBefore says whether run seq of order gets a rewarm run first: a
// condition that keeps the cache following one that leaves it cold.
func (x *experimenter) rewarmBefore(order []int, seq int) bool {
	return seq > 0 && x.conds[order[seq-1]].leavesCold && !x.conds[order[seq]].leavesCold
}

// rewarms counts the runs rewarm makes in order.
func (x *experimenter) rewarms(order []int) int {
	n := 0
	for seq := range order {
		if x.rewarmBefore(order, seq) {
			n++
		}
	}
	return n
}

// undecided says whether a condition is inconclusive with the runs so far
// (analyze's classes, on a copy).
func (x *experimenter) undecided() bool {
	ex := *x.ex
	ex.Conditions = slices.Clone(x.ex.Conditions)
	if !analyze.Conditions(&ex) {
		return false
	}
	for _, c := range ex.Conditions {
		// A confounded condition stays so with more runs.
		if c.Class == analyze.Inconclusive && len(c.Runs) > 0 && (c.SideEffect == nil || !c.SideEffect.Confounded) {
			return true
		}
	}
	return false
}

// warnings collected for the final record.
func (x *experimenter) note(s string) { x.notes = append(x.notes, s) }

// plan fixes the repeats to fit the budget and reports the plan.
func (x *experimenter) plan(perRun, spent time.Duration) (int, []int, error) {
	n := len(x.conds)
	repeats := x.spec.Repeat
	x.rot = &rotations{n: n}
	total := func(r int) time.Duration {
		return spent + time.Duration(n*r+x.rewarms(x.rot.schedule(0, r)))*perRun
	}
	var lines []string
	if b := x.spec.Budget; b > 0 && total(repeats) > b {
		r := repeats
		for r > MinRepeat && total(r) > b {
			r--
		}
		if total(r) > b {
			return 0, nil, fmt.Errorf("--budget %s is too short: %d conditions × %d runs of about %s need about %s; raise --budget or pick fewer --conditions",
				b, n, MinRepeat, perRun.Round(100*time.Millisecond), total(MinRepeat).Round(time.Second))
		}
		lines = append(lines, fmt.Sprintf("--repeat lowered from %d to %d to fit the --budget of %s", repeats, r, b))
		repeats = r
	}
	x.ex.Repeat = repeats
	lines = append([]string{fmt.Sprintf("plan: %d conditions × %d runs = %d runs of about %s each (the warm-up run took that), about %s in all, interleaved",
		n, repeats, n*repeats, perRun.Round(100*time.Millisecond), total(repeats).Round(time.Second))}, lines...)
	for _, c := range x.recs {
		for j, s := range c.Settings {
			head := ""
			if j == 0 {
				head = c.Name
			}
			lines = append(lines, fmt.Sprintf("  %-15s %s", head, s))
		}
	}
	for _, s := range x.ex.Skipped {
		lines = append(lines, fmt.Sprintf("  %-15s skipped: %s", s.Name, s.Reason))
	}
	order := x.rot.schedule(0, repeats)
	if k := x.rewarms(order); k > 0 {
		lines = append(lines, fmt.Sprintf("  %-15s %d runs of the unchanged workload, not counted, each before a run that follows one that left its files out of the page cache, so that it finds the cache the warm-up left", "re-warm", k))
	}
	if x.hooks.Plan != nil {
		x.hooks.Plan(lines)
	}
	return repeats, order, nil
}

// once makes one run of condition ci; seq 0 is the warm-up run and
// seq -1 a re-warm run (rewarm), whose measures are kept apart.
func (x *experimenter) once(ctx context.Context, ci, seq int) (*model.Run, error) {
	c := x.conds[ci]
	settled := x.side.settle(ctx)
	// Timed before the condition takes its CPUs away.
	speed := canary()
	before, stop, err := c.apply(ctx, x.env)
	defer stop()
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%s: %w", c.name, err)
	}
	res, err := x.side.once(ctx, before, x.hooks, c.unobserved, c.level)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%s run %d: %w", c.name, seq, err)
	}
	if res.run.Interrupted {
		return res.run, nil
	}
	switch {
	case seq == 0:
		// A tool's reported figure is known from its first run.
		x.ex.Measure = x.side.measure
		x.ex.Warmup = res.value
		return res.run, nil
	case seq < 0:
		x.ex.Rewarms = append(x.ex.Rewarms, res.value)
		return res.run, nil
	}
	er := res.experimentRun(seq, settled, speed, c.level, x.ex.Measure)
	if x.env.load != nil {
		// Read before stop ends the helper: what the generator itself
		// took, from ready to the run's end.
		er.LoadCPUSec, _ = x.env.load.cpuSec()
	}
	cond := x.recs[ci]
	cond.Runs = append(cond.Runs, er)
	x.ex.Order = append(x.ex.Order, fmt.Sprintf("%s#%d", c.name, len(cond.Runs)))
	if c.name == "baseline" {
		x.baselines = append(x.baselines, res)
	}
	return res.run, nil
}

// record assembles the result: the baseline run with the median measure,
// with the experiments attached.
func (x *experimenter) record(ctx context.Context) *model.Run {
	run := medianRun(x.baselines)
	if sc := x.ex.Scaling; sc != nil {
		x.levels[0].Runs = x.ex.Conditions[0].Runs
		for i, n := range x.spec.Scale.Levels {
			sc.Points = append(sc.Points, model.ScalePoint{N: n, OverCPUs: n > sc.CPUs, Runs: x.levels[i].Runs})
		}
	}
	run.Experiments = x.ex
	run.Warnings = append(run.Warnings, x.notes...)
	run.Interrupted = ctx.Err() != nil
	return run
}
