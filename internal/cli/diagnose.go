package cli

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/perfsleuth/perfsleuth/internal/analyze"
	"github.com/perfsleuth/perfsleuth/internal/experiment"
	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/target"
	"github.com/perfsleuth/perfsleuth/internal/toolresult"
	"github.com/perfsleuth/perfsleuth/internal/units"
)

// experimentFlags are diagnose's own flags.
type experimentFlags struct {
	quick       bool
	repeat      int
	maxRepeat   int
	conditions  []string
	budget      time.Duration
	metric      string
	metricLower bool
	ioShare     float64
	ioPeak      int64
	ioPeakIOPS  float64
	evict       []string
	cacheLimit  int64
	scale       string
	deviceCurve bool
	// scaleSpec is --scale parsed (check).
	scaleSpec *experiment.Scale
}

// defaultRepeat: three runs per condition is the fewest whose bootstrap
// interval can exclude zero (two runs cannot separate from the noise of a
// shared machine), and keeps a five-condition experiment at 15 runs.
const defaultRepeat = 3

// defaultIOShare: the field report's IO pressure took 30% of the device.
const defaultIOShare = 30

func (e *experimentFlags) on() bool { return e != nil && !e.quick }

func (e *experimentFlags) bind(cmd *cobra.Command) {
	fs := cmd.PersistentFlags()
	fs.BoolVar(&e.quick, "quick", false, "observe once, without experiments")
	fs.IntVar(&e.repeat, "repeat", defaultRepeat, "runs per condition")
	fs.IntVar(&e.maxRepeat, "max-repeat", 0, "runs per condition at most: while a condition is inconclusive after --repeat runs, another round of every condition is run, up to this (default: twice --repeat; equal to --repeat: never more)")
	fs.StringSliceVar(&e.conditions, "conditions", experiment.DefaultConditions, "conditions to run, comma-separated (baseline is always run)")
	fs.DurationVar(&e.budget, "budget", 0, "cap on the whole experiment's time (e.g. 10m); repeats are lowered to fit, down to 2")
	fs.StringVar(&e.metric, "metric", "", "for a command: a regex whose first group is the number to compare, from its output (the median of all matching lines); default: its wall time")
	fs.BoolVar(&e.metricLower, "metric-lower", false, "the --metric number is a time or a cost: lower is better")
	fs.Float64Var(&e.ioShare, "io-share", defaultIOShare, "io-pressure's background writer rate, in percent of the device's peak write rate")
	fs.Var(sizeValue{&e.ioPeak}, "io-peak", "the device's peak write rate per second (e.g. 400MiB), instead of measuring it")
	fs.Float64Var(&e.ioPeakIOPS, "io-peak-iops", 0, "the device's most IOs per second, which io-throttle halves, instead of measuring it (its curve of 4 KiB random O_DIRECT reads) (default: measured)")
	fs.StringSliceVar(&e.evict, "evict", nil, "for a command: the files or directories whose page cache cold-cache evicts (default: the whole page cache is dropped)")
	fs.Var(sizeValue{&e.cacheLimit}, "cache-limit", "the page cache the cache-limit condition leaves the workload (e.g. 64MiB) (default: half of its files' size: fileio's --size, or the files under --evict; sqlite needs it)")
	fs.BoolVar(&e.deviceCurve, "device-curve", false, "after the runs, measure the device under the workload's directory at queue depth 1, 2, 4, ... until its IOPS stop growing (4 KiB random O_DIRECT reads of a 256 MiB scratch file there, a second a depth, removed after) and place the workload on that curve")
	fs.StringVar(&e.scale, "scale", "", "run the workload at several levels of its own concurrency instead of the conditions, e.g. threads=1,2,4: a command's {threads} is replaced by each level, fileio's --threads set to it; says how its throughput and its cost per unit of work scale (docs/experiments.md)")
}

// maxScaleLevel bounds --scale's levels: each is that many threads.
const maxScaleLevel = 1024

// parseScale reads --scale's PARAM=N1,N2,...: the levels, increasing.
func parseScale(s string) (*experiment.Scale, error) {
	name, list, ok := strings.Cut(s, "=")
	if !ok || name != "threads" {
		return nil, fmt.Errorf("--scale %q: give threads=N1,N2,... (e.g. threads=1,2,4); threads is the one parameter it scales", s)
	}
	sc := &experiment.Scale{Param: name}
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > maxScaleLevel {
			return nil, fmt.Errorf("--scale %q: %q is not a level: give whole numbers from 1 to %d", s, f, maxScaleLevel)
		}
		if len(sc.Levels) > 0 && n <= sc.Levels[len(sc.Levels)-1] {
			return nil, fmt.Errorf("--scale %q: give the levels in increasing order, each once", s)
		}
		sc.Levels = append(sc.Levels, n)
	}
	if len(sc.Levels) < 2 {
		return nil, fmt.Errorf("--scale %q: give two levels or more", s)
	}
	return sc, nil
}

func (e *experimentFlags) check(cmd *cobra.Command) error {
	if e.quick {
		for _, name := range []string{"repeat", "max-repeat", "conditions", "budget", "metric", "metric-lower", "io-share", "io-peak", "io-peak-iops", "evict", "cache-limit", "scale"} {
			if cmd.Flags().Changed(name) {
				return fmt.Errorf("--%s sets up experiments, which --quick does not run: drop one of them", name)
			}
		}
		return nil
	}
	if e.repeat < experiment.MinRepeat {
		return fmt.Errorf("--repeat %d: use %d or more (one run per condition gives no interval)", e.repeat, experiment.MinRepeat)
	}
	if e.maxRepeat == 0 {
		e.maxRepeat = 2 * e.repeat
	}
	if e.maxRepeat < e.repeat {
		return fmt.Errorf("--max-repeat %d is below --repeat %d: give at least as many", e.maxRepeat, e.repeat)
	}
	if e.ioShare <= 0 || e.ioShare > 100 {
		return fmt.Errorf("--io-share %g: give a percentage above 0 and at most 100", e.ioShare)
	}
	if e.ioPeakIOPS < 0 {
		return fmt.Errorf("--io-peak-iops %g: give the device's IOs per second, above 0", e.ioPeakIOPS)
	}
	if e.budget < 0 {
		return fmt.Errorf("--budget %s is negative", e.budget)
	}
	if e.scale != "" {
		if cmd.Flags().Changed("conditions") {
			return errors.New("--scale runs the workload's levels, not conditions: drop --conditions, or run them in a diagnose of their own")
		}
		sc, err := parseScale(e.scale)
		if err != nil {
			return err
		}
		e.scaleSpec, e.conditions = sc, []string{"baseline"}
	}
	if cmd.Flags().Changed("cache-limit") && !slices.Contains(e.conditions, "cache-limit") {
		return errors.New("--cache-limit is the page cache the cache-limit condition leaves the workload: add cache-limit to --conditions, or drop --cache-limit")
	}
	return experiment.CheckConditions(e.conditions)
}

func newDiagnoseCmd() *cobra.Command {
	var e experimentFlags
	var cmd *cobra.Command
	cmd = newObserveLike(&cobra.Command{
		Use:   "diagnose [flags] fileio|sqlite [workload flags] | -- CMD [ARGS...]",
		Short: "Prove the bottleneck of a workload by experiment",
		Long: `Run a workload under observation, then again under conditions that each take one
resource away, and say which resource its result depends on:

  baseline        nothing changed
  unobserved      nothing changed and no probe attached: the observer effect
                  (one more run a round)
  cpu-half        the workload's process tree pinned to half the CPUs
  cpu-contention  one busy thread on each CPU the workload may use
  cpu-quota       half of its CPUs' time, a CFS quota on a cgroup made for the
                  run, nothing run beside it (not in the default list: give
                  --conditions cpu-quota to cross-check the other two)
  io-pressure     a background O_DIRECT writer at --io-share of the device's
                  peak write rate (measured once per device and remembered)
  io-throttle     its reads and writes held to half that peak rate and half the
                  device's most IOPS (its curve, measured once), a throttle
                  on a cgroup made for the run, nothing run beside it (not in
                  the default list: --conditions io-throttle cross-checks
                  io-pressure)
  cold-cache      the workload's page cache evicted before each run
  cache-limit     a smaller page cache: each run starts cold and its page cache
                  is held to --cache-limit (default: half of its files) by a
                  memory cgroup made for the run, its other memory not
                  limited (not in the default list: --conditions cache-limit)

Each condition runs --repeat times, in rounds of one run each, the order
drawn (each condition at each place once in n rounds), each run after the previous run's writes reached the device; while a
condition is inconclusive, rounds are added up to --max-repeat. The measure
is the benchmark's throughput, a command's wall time, or a number from its
output (--metric). Each run is set against the baseline run of its own round,
so drift over the experiment cancels. A condition is sensitive when the
bootstrap interval of the rounds' median change (95%, widened for each added
round) excludes zero and the change is 10% or more and beyond the rounds'
noise (two robust standard deviations of their changes). The verdict sets
the experiments against the time accounting.
--scale threads=1,2,4 runs the workload at each level of its own concurrency
instead ({threads} in the command, fileio's --threads) and says how its
throughput and a unit of work's cost scale: linearly, limited by contention,
or by coherency, with a Universal Scalability Law fit.
--quick observes once (also for -p PID). See docs/experiments.md.`,
		Example: `  perfsleuth diagnose sqlite --journal delete --sync full
  perfsleuth diagnose --conditions cpu-half,io-pressure --repeat 5 -- ./my-benchmark
  perfsleuth diagnose --metric 'score: ([0-9.]+)' -- ./bench.sh
  perfsleuth diagnose --scale threads=1,2,4,8 --metric 'ops/s: ([0-9.]+)' -- ./bench --threads {threads}
  perfsleuth diagnose --quick -p 1234 --duration 30s`,
	}, func() error { return e.check(cmd) }, &e)
	e.bind(cmd)
	return cmd
}

// run runs the experiment on a built-in target t or a command argv.
func (e *experimentFlags) run(cmd *cobra.Command, t *model.Target, argv []string, f *observeFlags) (err error) {
	spec := experiment.Spec{
		Argv:              argv,
		Conditions:        e.conditions,
		Repeat:            e.repeat,
		MaxRepeat:         e.maxRepeat,
		Budget:            e.budget,
		MetricLowerBetter: e.metricLower,
		IOShare:           e.ioShare / 100,
		IOPeak:            float64(e.ioPeak),
		IOPeakIOPS:        e.ioPeakIOPS,
		Evict:             e.evict,
		CacheLimit:        e.cacheLimit,
		Observe:           f.options(),
		DeviceCurve:       e.deviceCurve,
	}
	if t != nil {
		if e.metric != "" || len(e.evict) > 0 || e.metricLower {
			return errors.New("--metric, --metric-lower and --evict are for commands: a built-in benchmark measures its own throughput and evicts its own files")
		}
		if err := target.Validate(t); err != nil {
			return err
		}
		spec.Target = t
	} else if spec.Metric, err = metricOf(e.metric, e.metricLower); err != nil {
		return err
	}
	if sc := e.scaleSpec; sc != nil {
		if err := scaleFits(sc, t, argv, spec.Metric, e.metricLower); err != nil {
			return err
		}
		spec.Scale = sc
	}
	bar := newProgressBar(cmd.ErrOrStderr())
	defer bar.Clear()
	run, err := experiment.Run(cmd.Context(), spec, experimentHooks(cmd, bar))
	bar.Clear()
	if err != nil {
		return err
	}
	analyze.Run(run)
	return f.out.emit(cmd, run)
}

// scaleFits checks that the workload takes --scale's level and measures a
// throughput, which a unit of work's cost is read from.
func scaleFits(sc *experiment.Scale, t *model.Target, argv []string, metric *regexp.Regexp, lower bool) error {
	ph := experiment.Placeholder(sc.Param)
	if t != nil {
		if t.Kind != "fileio" {
			return fmt.Errorf("--scale %s: the %s benchmark has no %s to set; scale fileio, or a command with %s where the level goes", sc.Param, t.Kind, sc.Param, ph)
		}
		return nil
	}
	if !slices.ContainsFunc(argv, func(a string) bool { return strings.Contains(a, ph) }) {
		return fmt.Errorf("--scale %s: put %s in the command where the level goes, e.g. -- ./bench --threads %s", sc.Param, ph, ph)
	}
	if lower || metric == nil && !toolresult.Known(argv) {
		return fmt.Errorf("--scale needs a throughput, from which each unit of work's cost is read: give --metric with a rate the command prints (higher is better), or run a tool perfsleuth reads (fio, sysbench, pgbench, redis-benchmark)")
	}
	return nil
}

// metricOf compiles --metric (nil without one).
func metricOf(metric string, lower bool) (*regexp.Regexp, error) {
	if metric == "" {
		if lower {
			return nil, errors.New("--metric-lower goes with --metric")
		}
		return nil, nil
	}
	re, err := regexp.Compile(metric)
	if err != nil {
		return nil, fmt.Errorf("--metric %q is not a regular expression: %v", metric, err)
	}
	if re.NumSubexp() < 1 {
		return nil, fmt.Errorf("--metric %q has no group: put the number in parentheses, e.g. 'score: ([0-9.]+)'", metric)
	}
	return re, nil
}

// experimentHooks show an experiment's plan and progress on stderr.
func experimentHooks(cmd *cobra.Command, bar *progressBar) experiment.Hooks {
	stderr := cmd.ErrOrStderr()
	return experiment.Hooks{
		Plan: func(lines []string) {
			bar.Hide()
			fmt.Fprintln(stderr, strings.Join(lines, "\n"))
		},
		Status: func(s experiment.Status) {
			left := ""
			if s.Left > 0 {
				left = ", about " + units.FormatDuration(s.Left.Round(time.Second)) + " left"
			}
			bar.SetPrefix(fmt.Sprintf("%s %d/%d (run %d/%d%s) ", s.Condition, s.Repeat, s.Repeats, s.Seq, s.Runs, left))
			bar.Phase("run")
		},
		Phase:    bar.Phase,
		Progress: bar.Progress,
	}
}
