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
	// Order is the order the runs were made in ("baseline#1", "io-pressure#1", ...).
	Order []string `json:"order"`
	// BaselineNoise is the largest relative deviation of a baseline run from
	// the baseline median: how much the workload moves with nothing changed.
	BaselineNoise float64     `json:"baseline_noise"`
	Conditions    []Condition `json:"conditions"`
	// Skipped lists the conditions asked for that this host cannot apply, and why.
	Skipped []SkippedCondition `json:"skipped,omitempty"`
	// Incomplete is true when the experiment stopped early (Ctrl-C, a failed
	// run, the budget): the conditions hold only the runs that finished.
	Incomplete bool `json:"incomplete,omitempty"`
}

// Measure describes a run's number.
type Measure struct {
	// Name is e.g. "write ops/s", "insert tx/s", "wall time", or the metric regex.
	Name string `json:"name"`
	Unit string `json:"unit"`
	// Source is "throughput" (a built-in benchmark's), "wall_time" (a
	// command's) or "metric" (a number the command printed, --metric).
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
	// (negative: slower), from the medians; for a time measure it is
	// baseline/condition - 1, so that -0.5 means half the speed either way.
	Change float64 `json:"change"`
	// Interval is the 95% bootstrap confidence interval of Change.
	Interval [2]float64 `json:"interval"`
	// Class is "sensitive", "insensitive" or "inconclusive" (empty for baseline).
	Class  string `json:"class,omitempty"`
	Reason string `json:"reason,omitempty"`
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
