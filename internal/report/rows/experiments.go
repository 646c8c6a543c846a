package rows

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/stats"
	"github.com/perfsleuth/perfsleuth/internal/units"
)

// Experiments is diagnose's conditions: each one's runs and its change
// against baseline.
type Experiments struct {
	Conditions []CondRow
	// Accounting is what the busy threads did under each condition that
	// finished a run; nil when no run has an accounting.
	Accounting []CondAccounting
	// Notes say what qualifies the runs: the baseline drifted, more
	// rounds were run than planned.
	Notes []string
}

// CondRow is one condition.
type CondRow struct {
	model.Condition
	// Finished is false when no run of it finished; Baseline is true for
	// the baseline, which has no change of its own. Unobserved is true for
	// the observer effect's runs (no probe attached), whose Class reads
	// "observer effect": it takes no resource away.
	Finished, Baseline, Unobserved bool
	// Values are its runs' results; Points each run's change against the
	// baseline's median (ChangeFrom).
	Values, Points []float64
	// IntervalText is the change's 95% interval, "[-12%, -4%]".
	IntervalText string
}

// CondAccounting is the median, over a condition's runs, of what the busy
// threads did: the mechanism behind a change (under cpu-contention,
// cpu-wait appears; under io-pressure, the storage time grows).
type CondAccounting struct {
	Name                           string
	CPUSec, CPUWaitSec, StorageSec float64
}

// ExperimentsOf builds the conditions' rows.
func ExperimentsOf(ex *model.Experiments) Experiments {
	var out Experiments
	var base float64
	for _, c := range ex.Conditions {
		if c.Name == "baseline" {
			base = c.Median
		}
	}
	change := ChangeFrom(ex.Measure, base)
	seen := false
	// The observer effect's runs are listed after the baseline's: they
	// are the same workload, unobserved.
	conds := slices.Clone(ex.Conditions)
	if u := ex.Unobserved; u != nil {
		at := slices.IndexFunc(conds, func(c model.Condition) bool { return c.Name == "baseline" }) + 1
		conds = slices.Insert(conds, at, *u)
	}
	for _, c := range conds {
		r := CondRow{Condition: c, Finished: len(c.Runs) > 0, Baseline: c.Name == "baseline",
			IntervalText: fmt.Sprintf("[%s, %s]", Pct(c.Interval[0]), Pct(c.Interval[1]))}
		if ex.Unobserved != nil && c.Name == ex.Unobserved.Name {
			r.Unobserved, r.Class = true, "observer effect"
		}
		var cpu, wait, st []float64
		for _, run := range c.Runs {
			r.Values = append(r.Values, run.Value)
			r.Points = append(r.Points, change(run.Value))
			cpu, wait, st = append(cpu, run.CPUSec), append(wait, run.CPUWaitSec), append(st, run.StorageSec)
			if run.CPUSec+run.CPUWaitSec+run.StorageSec > 0 {
				seen = true
			}
		}
		out.Conditions = append(out.Conditions, r)
		// Unobserved runs have no accounting: no probe was there to make it.
		if r.Finished && !r.Unobserved {
			out.Accounting = append(out.Accounting, CondAccounting{c.Name, stats.Median(cpu), stats.Median(wait), stats.Median(st)})
		}
	}
	if !seen {
		out.Accounting = nil
	}
	out.Notes = experimentNotes(ex)
	return out
}

// experimentNotes says what qualifies an experiment's runs.
func experimentNotes(ex *model.Experiments) []string {
	var notes []string
	// Records made since the conditions were paired with the baseline
	// round by round say how many rounds each paired.
	paired := slices.ContainsFunc(ex.Conditions, func(c model.Condition) bool { return c.Rounds > 0 })
	if d := ex.BaselineDrift; d != nil {
		dir := "rose"
		if d.Change < 0 {
			dir = "fell"
		}
		how := "conditions are interleaved with the baseline, so each faced the same drift, but the noise is wider for it"
		if paired {
			how = "each condition's run is set against the baseline run of its own round, so the drift cancels in its change"
		}
		notes = append(notes, fmt.Sprintf("the baseline runs %s %s from the first to the last, a trend in the order they ran (p=%.2g): the machine drifted or state built up from run to run; %s",
			dir, Pct(d.Change), d.P, how))
	}
	if ex.Extended > 0 {
		n := fmt.Sprintf("%d more round(s) of every condition were run after the %d planned, because a condition was still inconclusive (--max-repeat)", ex.Extended, ex.Repeat)
		if looks := ex.Extended + 1; paired {
			n += fmt.Sprintf("; the classes were decided %d times on the growing runs, so the intervals are widened for it (Bonferroni: each decision at %.1f%% instead of 95%%)", looks, stats.Level(looks)*100)
		}
		notes = append(notes, n)
	}
	return notes
}

// ChangeFrom returns a run's change in performance against base (a
// median), as Condition.Change is defined for the medians: positive is
// better whichever way m goes; 0 when either is 0.
func ChangeFrom(m model.Measure, base float64) func(float64) float64 {
	return func(v float64) float64 {
		switch {
		case base == 0 || v == 0:
			return 0
		case m.HigherIsBetter:
			return v/base - 1
		}
		return base/v - 1
	}
}

// SensRow is how sensitive the result is to one resource.
type SensRow struct {
	Resource string
	model.Sensitivity
}

// Sensitivity lists the verdict's sensitivities by resource name.
func Sensitivity(v *model.Verdict) []SensRow {
	var rs []string
	for r := range v.Sensitivity {
		rs = append(rs, r)
	}
	sort.Strings(rs)
	var out []SensRow
	for _, r := range rs {
		out = append(out, SensRow{r, v.Sensitivity[r]})
	}
	return out
}

// CurveOf writes the device curve in a line: "vda, io_uring 4 KiB random
// reads: depth 1 18,200/s (p99 80µs), 2 35,100/s (...), ...; knee at 8".
func CurveOf(c *model.DeviceCurve) string {
	var pts []string
	for _, p := range c.Points {
		pts = append(pts, fmt.Sprintf("depth %d %s/s (p99 %s)", p.Depth, units.FormatCount(int64(p.IOPS)), units.FormatNs(float64(p.P99Ns))))
	}
	s := fmt.Sprintf("%s %s random O_DIRECT reads, one thread: %s", c.Engine, units.FormatSize(c.BS), strings.Join(pts, ", "))
	if c.Device != "" {
		s = c.Device + ", " + s
	}
	if c.Knee > 0 {
		s += fmt.Sprintf("; it stops growing past depth %d", c.Knee)
	} else if len(c.Points) > 0 {
		s += "; still growing at its last depth"
	}
	return s
}
