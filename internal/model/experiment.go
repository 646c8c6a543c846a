package model

// Experiments is what `perfsleuth diagnose` measured by rerunning the
// workload under changed conditions (fewer CPUs, contention, IO pressure, a
// cold cache), each condition repeated, the runs interleaved.
type Experiments struct {
	// Measure says what one run's number is and which way is better.
	Measure Measure `json:"measure"`
	// Repeat is how many runs each condition was planned to get.
	Repeat int `json:"repeat"`
	// Warmup is the measure of the warm-up run (a baseline run made first
	// and not counted: it fills the caches and times the workload).
	Warmup float64 `json:"warmup"`
	// Rewarms are the measures of the runs made, not counted, before a
	// run of a condition that keeps the cache (the baseline among them)
	// when the run before it left the workload's files out of the page
	// cache (cache-limit's): each brings the cache back to where the
	// warm-up left it, so that no run pays for the one before.
	Rewarms []float64 `json:"rewarms,omitempty"`
	// Order is the order the runs were made in ("baseline#1", "io-pressure#1", ...).
	Order []string `json:"order"`
	// BaselineNoise is how far a single baseline run lands from the
	// baseline median, relative to it: two robust standard deviations
	// (1.4826 × MAD), the band about 95% of the unchanged workload's runs
	// fall in. One outlier run cannot set it. Taken off the baseline's
	// drift (how far a run lands from where the series was): what compare
	// sets against another batch's, and the bar a condition's loss must
	// clear.
	BaselineNoise float64 `json:"baseline_noise"`
	// BaselineDrift is set when the baseline runs, in the order they ran,
	// trend up or down beyond chance: the machine drifted, or state built
	// up from run to run.
	BaselineDrift *Drift      `json:"baseline_drift,omitempty"`
	Conditions    []Condition `json:"conditions"`
	// Skipped lists the conditions asked for that this host cannot apply, and why.
	Skipped []SkippedCondition `json:"skipped,omitempty"`
	// DeviceCurve is the device's IOPS by queue depth (diagnose
	// --device-curve), with the workload placed on it; nil without, and
	// DeviceCurveNote says why it could not be measured when asked for.
	DeviceCurve     *DeviceCurve `json:"device_curve,omitempty"`
	DeviceCurveNote string       `json:"device_curve_note,omitempty"`
	// Incomplete is true when the experiment stopped early (Ctrl-C, a failed
	// run, the budget): the conditions hold only the runs that finished.
	Incomplete bool `json:"incomplete,omitempty"`
	// Extended counts the rounds run beyond Repeat because a condition was
	// still inconclusive (up to --max-repeat). The classes were decided
	// 1 + Extended times on growing data, and the intervals are corrected
	// for it (stats.PairedRounds).
	Extended int `json:"extended,omitempty"`
	// Unobserved is the observer effect, when diagnose measured it (the
	// `unobserved` condition): runs of the unchanged workload with no
	// probe attached, one a round, interleaved with the conditions. Its
	// Change is theirs against the observed baseline run of the same
	// round: +0.05 when the workload ran 5% faster unobserved, the
	// slowdown observing it caused. It takes no resource away, so it has
	// no class and is not among Conditions.
	Unobserved *Condition `json:"unobserved,omitempty"`
	// Pair is set when the runs were made interleaved with another
	// workload's, for a comparison (`perfsleuth compare --run A --run B`):
	// then run i of this record and run i of the other ran in the same
	// round, one right after the other.
	Pair *Pair `json:"pair,omitempty"`
	// Scaling is set by diagnose --scale: the workload at several levels
	// of its own concurrency (the baseline condition's runs are its first
	// level's).
	Scaling *Scaling `json:"scaling,omitempty"`
}

// Scaling is how the workload's throughput and its cost per unit of work
// moved with its own concurrency (diagnose --scale threads=1,2,4).
type Scaling struct {
	// Param is the level's name ("threads"); CPUs how many CPUs the
	// workload could use: levels above it share them.
	Param string `json:"param"`
	CPUs  int    `json:"cpus"`
	// Points are the levels, in increasing order.
	Points []ScalePoint `json:"points"`
	// Fit is the Universal Scalability Law fitted to the busy thread
	// time per unit of work; nil when it could not be (FitNote says why).
	Fit     *USLFit `json:"fit,omitempty"`
	FitNote string  `json:"fit_note,omitempty"`
	// Class is "linear", "contention", "coherency", "sublinear" (it
	// scaled less than linearly and neither state's growth explains it)
	// or "unsettled" (a unit's CPU time grew by the medians, but a level's
	// runs spread as widely: the machine moved), "" when the levels cannot
	// tell (fewer than two within the CPUs).
	Class string `json:"class,omitempty"`
	// Peak is the level with the highest median throughput; LosesBeyond
	// is set to it when a higher level measured less, beyond the noise.
	Peak        int `json:"peak"`
	LosesBeyond int `json:"loses_beyond,omitempty"`
	// Summary says it in plain words.
	Summary string `json:"summary"`
}

// ScalePoint is one level's runs and what they show.
type ScalePoint struct {
	N int `json:"n"`
	// OverCPUs: more threads than CPUs; they take turns.
	OverCPUs bool            `json:"over_cpus,omitempty"`
	Runs     []ExperimentRun `json:"runs"`
	// Throughput is the runs' median measure, its interval the
	// bootstrap's of the median (95%).
	Throughput         float64    `json:"throughput"`
	ThroughputInterval [2]float64 `json:"throughput_interval"`
	// Efficiency is Throughput against the first level's scaled
	// linearly: 1 is linear, 0.5 half of it.
	Efficiency float64 `json:"efficiency"`
	// CPUSecPerUnit is the workload's CPU time per unit of work (the time
	// accounting's cpu over the measure times the run's duration), the
	// runs' median, with its bootstrap interval.
	CPUSecPerUnit         float64    `json:"cpu_sec_per_unit"`
	CPUSecPerUnitInterval [2]float64 `json:"cpu_sec_per_unit_interval"`
	// TimePerUnit is the workload's threads' time by state per unit of
	// work, in seconds (medians over the runs): where each unit's cost
	// went at this level.
	TimePerUnit map[string]float64 `json:"time_per_unit"`
	// CPUWaitOutsidePerUnit is the part of TimePerUnit's cpu-wait spent
	// waiting for a CPU that others held (ExperimentRun.CPUWaitOutsideSec),
	// per unit of work, the runs' median.
	CPUWaitOutsidePerUnit float64 `json:"cpu_wait_outside_per_unit,omitempty"`
}

// USLFit is the Universal Scalability Law, C(N) = (1 + Sigma(N-1) +
// Kappa N(N-1)) / Lambda, fitted to the busy thread time per unit of work
// (all states but the wait for a CPU): the cost of a unit at concurrency N
// against one thread's, which is the USL's denominator. Sigma is
// contention (serialisation), Kappa coherency (crosstalk); intervals from
// a bootstrap over each level's runs (95%).
type USLFit struct {
	Lambda        float64    `json:"lambda"`
	Sigma         float64    `json:"sigma"`
	Kappa         float64    `json:"kappa"`
	SigmaInterval [2]float64 `json:"sigma_interval"`
	KappaInterval [2]float64 `json:"kappa_interval"`
	// PeakN is where the law puts the throughput's peak, sqrt((1 -
	// Sigma) / Kappa); 0 when Kappa's interval reaches 0 (no peak told).
	PeakN float64 `json:"peak_n,omitempty"`
}

// USLCost is the law's relative cost of a unit of work at concurrency n:
// 1 + sigma(n-1) + kappa n(n-1).
func USLCost(n, sigma, kappa float64) float64 { return 1 + sigma*(n-1) + kappa*n*(n-1) }

// Cost is the fitted busy thread time per unit of work at concurrency n,
// in seconds.
func (f *USLFit) Cost(n float64) float64 { return USLCost(n, f.Sigma, f.Kappa) / f.Lambda }

// BusyTime is the time in every state but the wait for a CPU (which more
// threads than CPUs make by design): what the USL is fitted to, from a
// run's time by state or a level's time per unit.
func BusyTime(byState map[string]float64) float64 {
	var s float64
	for c, v := range byState {
		if c != CatCPUWait {
			s += v
		}
	}
	return s
}

// Pair ties the two records of an interleaved comparison together.
type Pair struct {
	// ID is the same in both records, and in no other.
	ID string `json:"id"`
	// Side is "A" or "B".
	Side string `json:"side"`
}

// Drift is a monotone trend of a series of runs in the order they ran
// (Mann-Kendall test; Sen's slope).
type Drift struct {
	// Change is how far the series moved from its first run to its last
	// along Sen's slope, relative to its median (-0.2: it fell by a fifth).
	Change float64 `json:"change"`
	// P is the two-sided p-value of the trend.
	P float64 `json:"p"`
}

// Measure describes a run's number.
type Measure struct {
	// Name is e.g. "write ops/s", "insert tx/s", "wall time", or the metric regex.
	Name string `json:"name"`
	Unit string `json:"unit"`
	// Source is "throughput" (a built-in benchmark's), "wall_time" (a
	// command's), "metric" (a number the command printed, --metric) or
	// "reported" (the result a known tool printed: fio's IOPS, pgbench's
	// tps; Name is the figure's).
	Source string `json:"source"`
	// HigherIsBetter is true for rates and scores, false for times.
	HigherIsBetter bool `json:"higher_is_better"`
}

// Condition is one condition's runs and what they show against baseline.
type Condition struct {
	Name string `json:"name"`
	// Resource is what the condition takes away: "cpu", "io", "cache",
	// "memory"; empty for baseline.
	Resource string `json:"resource,omitempty"`
	// Settings say how the condition was applied, in plain words.
	Settings []string        `json:"settings,omitempty"`
	Runs     []ExperimentRun `json:"runs"`
	Median   float64         `json:"median"`
	// Change is the relative change in performance against baseline
	// (negative: slower): the median of the rounds' changes, each run
	// against the baseline run of its own round, so that drift over the
	// batch cancels (records before rounds were paired: from the
	// medians). For a time measure a run's change is baseline/condition -
	// 1, so that -0.5 means half the speed either way.
	Change float64 `json:"change"`
	// Interval is the bootstrap confidence interval of Change over
	// resamples of the rounds: 95%, widened for the times the classes were
	// decided (Experiments.Extended).
	Interval [2]float64 `json:"interval"`
	// Noise is two robust standard deviations of the rounds' changes:
	// how much one round's change moves (0 in records made before).
	Noise float64 `json:"noise,omitempty"`
	// Rounds is how many rounds paired a run of it with a baseline run.
	Rounds int `json:"rounds,omitempty"`
	// Class is "sensitive", "insensitive" or "inconclusive" (empty for baseline).
	Class  string `json:"class,omitempty"`
	Reason string `json:"reason,omitempty"`
	// SideEffect is what the condition took from the workload besides its
	// own resource, measured in its runs against the baseline's (nil
	// when it took nothing else, or without eBPF accounting).
	SideEffect *SideEffect `json:"side_effect,omitempty"`
}

// SideEffect is a condition's effect on a resource other than its own:
// the rise in the workload's busy threads' time in that resource's states
// against the rise in its own resource's states, medians of the runs
// against the baseline's. Confounded is set when the other resource's
// rise is at least as large as the condition's own, and material: the
// condition's change is then not counted as proof for its resource.
type SideEffect struct {
	// Resource is the other resource ("cpu" or "io"); States the states
	// counted for it (e.g. "cpu", "cpu-wait").
	Resource string   `json:"resource"`
	States   []string `json:"states"`
	// BaseSec and CondSec are the workload's time in those states, the
	// medians of the baseline's runs and of the condition's.
	BaseSec float64 `json:"base_sec"`
	CondSec float64 `json:"cond_sec"`
	// OwnRiseSec is the rise in the condition's own resource's states.
	OwnRiseSec float64 `json:"own_rise_sec"`
	// LoadCPUSec is the median CPU time the condition's load generator
	// used in a run (0: the condition has none, or it was not read).
	LoadCPUSec float64 `json:"load_cpu_sec,omitempty"`
	Confounded bool    `json:"confounded"`
	// Summary says it in words, with the numbers.
	Summary string `json:"summary"`
}

// ExperimentRun is one run of a condition.
type ExperimentRun struct {
	// Seq is the run's place in Experiments.Order, from 1.
	Seq   int     `json:"seq"`
	Value float64 `json:"value"`
	// Primary is the time accounting's verdict for this run, when observed.
	Primary string `json:"primary,omitempty"`
	// CPUSec, CPUWaitSec and StorageSec are the busy threads' totals in this
	// run (storage: read, write and sync), when observed with eBPF.
	CPUSec     float64 `json:"cpu_sec,omitempty"`
	CPUWaitSec float64 `json:"cpu_wait_sec,omitempty"`
	StorageSec float64 `json:"storage_sec,omitempty"`
	// CPUWaitOutsideSec is the part of CPUWaitSec spent waiting for a CPU
	// that a process outside the workload or a kernel thread held (the
	// wait-for graph's cpu-wait by who had the CPU): a loaded machine's,
	// not the workload's own contention. 0 without the graph.
	CPUWaitOutsideSec float64 `json:"cpu_wait_outside_sec,omitempty"`
	// SettleSec is how long the run waited, before it started, for the
	// previous run's writes to reach the device (diagnose settles each run).
	SettleSec float64 `json:"settle_sec,omitempty"`
	// CanaryMs is the machine's own speed just before the run: how long a
	// fixed CPU loop took, the mean over the CPUs of each one's fastest
	// of five (0: not timed, as in records made before). No workload
	// setting changes it; the host's other guests, a slower clock or a
	// busy sibling hyperthread do.
	CanaryMs float64 `json:"canary_ms,omitempty"`
	// LoadCPUSec is the CPU time (user and system) the condition's load
	// generator used from the moment it was ready to the end of the run
	// (0: the condition has none).
	LoadCPUSec float64 `json:"load_cpu_sec,omitempty"`
	// Level is the run's concurrency under diagnose --scale (0: none);
	// Units the units of work it did (the measure, a rate, times
	// DurationSec); Time the workload's threads' time by state in it
	// (the time accounting's totals, when observed with eBPF).
	Level       int                `json:"level,omitempty"`
	Units       float64            `json:"units,omitempty"`
	DurationSec float64            `json:"duration_sec,omitempty"`
	Time        map[string]float64 `json:"time,omitempty"`
}

// SkippedCondition is a condition that could not be applied here.
type SkippedCondition struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// Sensitivity is how much one resource moved the workload: the class and
// the condition, change and interval that decided it.
type Sensitivity struct {
	Class     string     `json:"class"`
	Condition string     `json:"condition"`
	Change    float64    `json:"change"`
	Interval  [2]float64 `json:"interval"`
}

// DeviceCurve is what the device under the workload's directory gives at
// each queue depth: Engine's BS-byte random O_DIRECT reads of a FileBytes
// scratch file by one thread, a second at each depth, doubling the depth
// until a doubling adds less than a tenth (two in a row) or 128.
type DeviceCurve struct {
	// Device is the block device under the directory, Disks the disks
	// under it (as model.Storage has them).
	Device    string       `json:"device,omitempty"`
	Disks     []string     `json:"disks,omitempty"`
	Engine    string       `json:"engine"`
	BS        int64        `json:"bs"`
	FileBytes int64        `json:"file_bytes"`
	Points    []CurvePoint `json:"points"`
	// Knee is the last depth whose doubling still added a tenth or more
	// of IOPS (0: the curve did not flatten by its last point).
	Knee int `json:"knee,omitempty"`
	// Placement says where the workload is on the curve, from the
	// baseline's block figures (analyze); "" when it did no IO to the
	// device or the curve has no points.
	Placement string `json:"placement,omitempty"`
}

// CurvePoint is the device at one queue depth: IOPS and the reads'
// latency (from preparation to completion).
type CurvePoint struct {
	Depth int     `json:"depth"`
	IOPS  float64 `json:"iops"`
	P50Ns int64   `json:"p50_ns"`
	P99Ns int64   `json:"p99_ns"`
}
