package experiment

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/sysinfo"
	"github.com/perfsleuth/perfsleuth/internal/units"
)

// condition is one way of taking a resource away from the workload. A
// condition is a small value with two steps, like fio's ioengine ops:
// prepare once (check the host, measure what it needs, say what it will do)
// and apply before each run (start its load, return what to do to the
// workload's process once it is ready, and how to undo it all).
type condition struct {
	name     string
	resource string
	// unobserved runs the workload with no probe attached: its runs are
	// the observer effect (model.Experiments.Unobserved), not a condition
	// that takes a resource away.
	unobserved bool
	// level is the workload's concurrency under --scale (0: unchanged).
	level int
	// leavesCold is set for a condition whose runs leave the workload's
	// files out of the page cache (cache-limit: its run keeps at most
	// the budget of them): the run after one of its runs would find them
	// out too, so a condition without it that comes next gets a run not
	// counted first (experimenter.rewarm). cold-cache evicts before its
	// runs, but each run reads back what it reads, so the run after it
	// finds the cache as after a baseline run.
	leavesCold bool
	// prepare checks that the condition can be applied here and returns
	// its settings in plain words; an error skips the condition with that reason.
	prepare func(ctx context.Context, e *env) ([]string, error)
	// apply runs before each run of the condition. before (may be nil) is
	// called with the workload's pids before its measured phase; stop undoes
	// what apply did and is called on every path.
	apply func(ctx context.Context, e *env) (before func(pids []int) error, stop func(), err error)
}

// env is what the conditions need to know about the host and the workload.
type env struct {
	exe  string
	cpus []int // the CPUs the workload may use at baseline
	half []int // the CPUs cpu-half leaves it
	// workDir is where the workload's files are: the background writer
	// writes there (on the same device) and cold-cache evicts there.
	workDir string
	// evict lists what cold-cache evicts; empty: the whole page cache.
	evict []string
	// ioRate is the background writer's rate in bytes/s (io-pressure).
	ioRate  float64
	ioShare float64
	ioPeak  float64
	peakDoc string
	store   *model.Storage // the file system behind workDir, if known
	// stateDir is where measured device peaks are remembered.
	stateDir string
	// load is the load helper of the condition being run (withHelper),
	// nil between runs and for conditions without one: its CPU time is
	// the run's LoadCPUSec.
	load *helper
	// quota and quotaPlace are cpu-quota's limit and where its cgroups
	// are made.
	quota      cgroupLimit
	quotaPlace cgroupPlace
	// throttle and throttlePlace are io-throttle's; peakIOPS the device's
	// most IOPS (measured with the device curve, or --io-peak-iops),
	// iopsDoc where it came from.
	throttle      cgroupLimit
	throttlePlace cgroupPlace
	peakIOPS      float64
	iopsDoc       string
	// target is the built-in benchmark, nil for a command.
	target *model.Target
	// cacheBudget is the page cache cache-limit leaves the workload
	// (--cache-limit; 0: sized from its files), cachePlace where its
	// cgroups are made.
	cacheBudget int64
	cachePlace  cgroupPlace
}

// Names of the conditions, in the order they are listed and run in a round.
var conditionNames = []string{"baseline", "unobserved", "cpu-half", "cpu-contention", "cpu-quota", "io-pressure", "io-throttle", "cold-cache", "cache-limit"}

// DefaultConditions are run when --conditions is not given: all but
// cpu-quota and io-throttle, which ask the question of cpu-half and
// cpu-contention, and of io-pressure, by another means and are there to
// cross-check them (they cost no CPU of their own), and cache-limit,
// which asks a question of its own (what a smaller page cache costs) and
// is asked for by name.
var DefaultConditions = slices.DeleteFunc(slices.Clone(conditionNames), func(n string) bool {
	return n == "cpu-quota" || n == "io-throttle" || n == "cache-limit"
})

// quotaShare is the share of the workload's CPUs' time cpu-quota leaves
// it: half, as cpu-half leaves half of the CPUs.
const quotaShare = 0.5

// throttleShare is the share of the device's peak write rate io-throttle
// leaves the workload's reads and its writes: a device half as fast.
const throttleShare = 0.5

// conditions is the registry.
var conditions = map[string]*condition{
	"baseline": {
		name:    "baseline",
		prepare: func(context.Context, *env) ([]string, error) { return []string{"nothing changed"}, nil },
		apply:   func(context.Context, *env) (func([]int) error, func(), error) { return nil, func() {}, nil },
	},
	// Every other run is observed as observe observes, so the probes'
	// cost is in all of them alike; this one measures that cost: the
	// unchanged workload with no probe attached, once a round like a
	// condition, paired with the round's observed baseline run.
	"unobserved": {
		name:       "unobserved",
		unobserved: true,
		prepare: func(context.Context, *env) ([]string, error) {
			return []string{"nothing changed and no probe attached: the observed baseline against it, round by round, is the observer effect"}, nil
		},
		apply: func(context.Context, *env) (func([]int) error, func(), error) { return nil, func() {}, nil },
	},
	"cpu-half": {
		name:     "cpu-half",
		resource: "cpu",
		prepare: func(_ context.Context, e *env) ([]string, error) {
			if len(e.cpus) < 2 {
				return nil, fmt.Errorf("the workload has one CPU (%s): there is no half to take away", sysinfo.FormatCPUList(e.cpus))
			}
			var disks []string
			if e.store != nil {
				disks = e.store.Disks
			}
			irq := irqCPUs(disks)
			e.half = halfCPUs(e.cpus, irq)
			s := []string{fmt.Sprintf("every thread of the workload's process tree pinned to CPUs %s of %s (sched_setaffinity; threads and children it starts inherit it)", sysinfo.FormatCPUList(e.half), sysinfo.FormatCPUList(e.cpus))}
			if len(irq) > 0 {
				s = append(s, fmt.Sprintf("the CPUs kept are those that take the interrupts of %s (CPUs %s), so that the condition takes cores away, not interrupt locality", strings.Join(disks, ", "), sysinfo.FormatCPUList(irq)))
			}
			return s, nil
		},
		apply: func(_ context.Context, e *env) (func([]int) error, func(), error) {
			return func(pids []int) error {
				for _, pid := range pids {
					if err := pinTree(pid, e.half); err != nil {
						return err
					}
				}
				return nil
			}, func() {}, nil
		},
	},
	// cpu-quota takes half of the CPU time away without taking CPUs
	// away or running anything beside the workload: a CFS bandwidth
	// limit on a cgroup the workload runs in (cgroup.go). Its threads
	// still run on every CPU, each for as long as the quota lasts in a
	// period of 100 ms, then wait for the next.
	"cpu-quota": {
		name:     "cpu-quota",
		resource: "cpu",
		prepare: func(_ context.Context, e *env) ([]string, error) {
			l := cpuQuota(len(e.cpus), quotaShare)
			p, err := findCgroupPlace(l)
			if err != nil {
				return nil, err
			}
			e.quota, e.quotaPlace = l, p
			return []string{
				fmt.Sprintf("the workload's process tree limited to %.0f%% of the time of its %d CPUs (%s), and nothing run beside it", quotaShare*100, len(e.cpus), sysinfo.FormatCPUList(e.cpus)),
				limitWords(p, l),
			}, nil
		},
		apply: inCgroup(func(e *env) (cgroupPlace, cgroupLimit) { return e.quotaPlace, e.quota }),
	},
	"cpu-contention": {
		name:     "cpu-contention",
		resource: "cpu",
		prepare: func(_ context.Context, e *env) ([]string, error) {
			return []string{fmt.Sprintf("%d busy threads at nice 0, one pinned to each of CPUs %s, in a helper process", len(e.cpus), sysinfo.FormatCPUList(e.cpus))}, nil
		},
		apply: withHelper(func(e *env) []string { return []string{"cpu", sysinfo.FormatCPUList(e.cpus)} }),
	},
	"io-pressure": {
		name:     "io-pressure",
		resource: "io",
		prepare: func(ctx context.Context, e *env) ([]string, error) {
			if err := e.measurePeak(ctx); err != nil {
				return nil, err
			}
			e.ioRate = e.ioShare * e.ioPeak
			on := ""
			if e.store != nil && e.store.Device != "" {
				on = " (on " + e.store.Device + ")"
			}
			return []string{
				fmt.Sprintf("a background writer at %s/s, %.0f%% of the device's peak write rate %s/s (%s)", units.FormatSize(int64(e.ioRate)), e.ioShare*100, units.FormatSize(int64(e.ioPeak)), e.peakDoc),
				fmt.Sprintf("1 MiB O_DIRECT writes, %d in flight, over an unnamed %d MiB file in %s%s", writerDepth, writerSpan>>20, e.workDir, on),
			}, nil
		},
		apply: withHelper(func(e *env) []string { return []string{"io", e.workDir, fmt.Sprintf("%.0f", e.ioRate)} }),
	},
	// io-throttle takes half of the device's bandwidth away from the
	// workload alone: a throttle on a cgroup it runs in (cgroup.go), at
	// half the device's peak write rate for its reads and for its
	// writes. Nothing runs beside it.
	"io-throttle": {
		name:     "io-throttle",
		resource: "io",
		prepare: func(ctx context.Context, e *env) ([]string, error) {
			names, nums, err := throttleDevices(e.store, "/sys/class/block")
			if err != nil {
				return nil, err
			}
			if err := e.measurePeak(ctx); err != nil {
				return nil, err
			}
			rate := int64(throttleShare * e.ioPeak)
			iopsNote := ""
			if e.peakIOPS == 0 {
				if peak, doc, err := measurePeakIOPS(ctx, e.workDir, e.store); err != nil {
					if ctx.Err() != nil {
						return nil, ctx.Err()
					}
					iopsNote = "its IOs per second are not limited: the device's most IOPS could not be measured here (" + err.Error() + "); give --io-peak-iops"
				} else {
					e.peakIOPS, e.iopsDoc = peak, doc
				}
			}
			iops := int64(throttleShare * e.peakIOPS)
			l := ioThrottle(nums, rate, iops)
			p, err := findCgroupPlace(l)
			if err != nil {
				return nil, err
			}
			e.throttle, e.throttlePlace = l, p
			s := []string{
				fmt.Sprintf("the workload's reads and its writes of %s held to %s/s each, %.0f%% of the device's peak write rate %s/s (%s), and nothing run beside it",
					strings.Join(names, ", "), units.FormatSize(rate), throttleShare*100, units.FormatSize(int64(e.ioPeak)), e.peakDoc),
			}
			if iops > 0 {
				s = append(s, fmt.Sprintf("and to %s requests a second each, %.0f%% of the most the device gave, %s IOPS (%s)",
					units.FormatCount(iops), throttleShare*100, units.FormatCount(int64(e.peakIOPS)), e.iopsDoc))
			} else {
				s = append(s, iopsNote)
			}
			s = append(s, "a device with half the bandwidth and half the IOPS, not one with twice the latency: a workload far below those rates (single syncs, small reads one at a time) is not slowed by it, whatever its IO waits",
				limitWords(p, l))
			if p.version == 1 {
				s = append(s, "cgroup v1 throttles the IO the workload's own threads issue (reads, direct writes, the writeback its syncs do), not the kernel's background writeback of the pages it dirtied")
			}
			return s, nil
		},
		apply: inCgroup(func(e *env) (cgroupPlace, cgroupLimit) { return e.throttlePlace, e.throttle }),
	},
	"cold-cache": {
		name:     "cold-cache",
		resource: "cache",
		prepare: func(_ context.Context, e *env) ([]string, error) {
			if len(e.evict) == 0 {
				if err := unix.Access("/proc/sys/vm/drop_caches", unix.W_OK); err != nil {
					return nil, fmt.Errorf("dropping the page cache needs root (%v): give --evict PATH to evict only the workload's files", err)
				}
				return []string{"the whole machine's page cache dropped before each run (sync; vm.drop_caches=1): give --evict PATH to evict only the workload's files"}, nil
			}
			return []string{fmt.Sprintf("the page cache of the files under %s evicted before each run (fdatasync, then POSIX_FADV_DONTNEED)", strings.Join(e.evict, ", "))}, nil
		},
		apply: func(_ context.Context, e *env) (func([]int) error, func(), error) {
			return func([]int) error {
				if len(e.evict) == 0 {
					return dropCaches()
				}
				return evict(e.evict)
			}, func() {}, nil
		},
	},
	// cache-limit: the workload's page cache held to a budget by a memory
	// cgroup (cachelimit.go).
	"cache-limit": {
		name:       "cache-limit",
		resource:   "cache",
		leavesCold: true,
		prepare:    prepareCacheLimit,
		apply:      applyCacheLimit,
	},
}

// withHelper is the apply step of a condition whose whole effect is a load
// helper running beside the workload (`perfsleuth __load ARGS`).
func withHelper(args func(e *env) []string) func(context.Context, *env) (func([]int) error, func(), error) {
	return func(ctx context.Context, e *env) (func([]int) error, func(), error) {
		h, err := startHelper(ctx, e.exe, args(e)...)
		if err != nil {
			return nil, func() {}, err
		}
		e.load = h
		return nil, func() { e.load = nil; h.stop() }, nil
	}
}

// inCgroup is the apply step of a condition whose whole effect is a limit
// on a cgroup made for each run (cgroup.go): the workload's process tree
// moves into it once ready, and the cgroup goes after the run.
func inCgroup(of func(e *env) (cgroupPlace, cgroupLimit)) func(context.Context, *env) (func([]int) error, func(), error) {
	return func(_ context.Context, e *env) (func([]int) error, func(), error) {
		cg, err := makeCgroup(of(e))
		if err != nil {
			return nil, func() {}, err
		}
		return cg.enter, func() { cg.remove() }, nil
	}
}

// CheckConditions validates a --conditions list.
func CheckConditions(names []string) error {
	seen := map[string]bool{}
	for _, n := range names {
		if conditions[n] == nil {
			return fmt.Errorf("unknown condition %q: use %s", n, strings.Join(conditionNames, ", "))
		}
		if seen[n] {
			return fmt.Errorf("condition %q given twice", n)
		}
		seen[n] = true
	}
	return nil
}

// measurePeak measures the device's peak write rate once, for the
// conditions that take a share of it (io-pressure, io-throttle), unless
// --io-peak gave it.
func (e *env) measurePeak(ctx context.Context) error {
	if e.ioPeak != 0 {
		return nil
	}
	peak, doc, err := devicePeak(ctx, e.exe, e.workDir, e.stateDir, e.store)
	if err != nil {
		return err
	}
	e.ioPeak, e.peakDoc = peak, doc
	return nil
}
