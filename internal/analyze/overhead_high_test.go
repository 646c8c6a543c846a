package analyze

import (
	"math"
	"strings"
	"testing"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// experimentRuns are runs that measured vals, in this order, one a round
// of two runs, at place first of each.
func experimentRuns(first int, vals ...float64) []model.ExperimentRun {
	var rs []model.ExperimentRun
	for i, v := range vals {
		rs = append(rs, model.ExperimentRun{Seq: 2*i + first, Value: v})
	}
	return rs
}

// observed is a diagnose record of an IO-bound workload whose probes spent
// probeShare of its busy time on its events, with baseline runs base and
// unobserved runs unobs (none: nil).
func observed(probeShare float64, higher bool, base, unobs []float64) *model.Run {
	r := runWith(2, 10, thread(1, map[string]float64{"cpu": 1, "storage-sync": 9}))
	r.TimeAccounting.Programs = []model.ProgramCost{{Name: "sched_switch", Runs: 2e6, TrackedRuns: 1e6, TrackedNs: probeShare * 10 / 1e6 * 1e9}}
	r.Experiments = &model.Experiments{Measure: model.Measure{Name: "x", HigherIsBetter: higher},
		Conditions: []model.Condition{{Name: "baseline", Runs: experimentRuns(1, base...)}}}
	if unobs != nil {
		r.Experiments.Unobserved = &model.Condition{Name: "unobserved", Runs: experimentRuns(2, unobs...)}
	}
	return r
}

func overheadFinding(r *model.Run) *model.Finding {
	for i, f := range r.Findings {
		if f.ID == "observer.overhead_high" {
			return &r.Findings[i]
		}
	}
	return nil
}

// TestOverheadMeasuredUnderDiagnose: under diagnose with unobserved runs,
// the warning is the measured slowdown, paired round by round, whatever
// the probes' time on the workload's events says.
func TestOverheadMeasuredUnderDiagnose(t *testing.T) {
	cases := []struct {
		name        string
		run         *model.Run
		fires       bool
		change      float64 // the observer effect, when measured; NaN: none
		lo          float64 // the interval's low end is above it
		summaryPart string
	}{
		// An IO-bound run whose probes take 0.1% of its time, yet runs 8%
		// faster without them, in every round, on a machine that slows by
		// 2% of its first speed a run (the pairing, moved along the
		// baseline's drift, takes that out).
		{"a measured slowdown warns, though the probe time is small",
			observed(0.001, true, []float64{1000, 960, 920, 880, 840}, []float64{1.08 * 980, 1.08 * 940, 1.08 * 900, 1.08 * 860, 1.08 * 820}),
			true, 0.08, 0.0799, "unobserved it ran 8.0% faster (measured)"},
		// The probes' time says 6%; without them it runs as fast: the
		// measurement says the result was not distorted.
		{"no measured slowdown: no warning, whatever the probe time",
			observed(0.06, true, []float64{1000, 1010, 990, 1005, 995}, []float64{1004, 1002, 992, 1011, 990}),
			false, math.NaN(), -1, ""},
		// 8% faster at the median, but the rounds disagree: not measured.
		{"a slowdown within the rounds' noise is not measured",
			observed(0.001, true, []float64{1000, 1000, 1000, 1000, 1000}, []float64{1080, 950, 1200, 990, 1100}),
			false, 0.08, -1, ""},
		// A time measure: lower is better, the unobserved runs took 10%
		// less time, +11% in speed.
		{"a time measure: shorter unobserved runs are the slowdown",
			observed(0.001, false, []float64{2.0, 2.0, 2.0}, []float64{1.8, 1.8, 1.8}),
			true, 1/0.9 - 1, 0.11, "11.1% faster"},
		// Without unobserved runs, the probe time decides.
		{"no unobserved runs: the probe time decides",
			observed(0.06, true, []float64{1000, 1010, 990}, nil),
			true, math.NaN(), -1, "observing it cost 6.0% of the workload's own time"},
		// One unobserved run gives no interval: the probe time decides.
		{"one unobserved run: the probe time decides",
			observed(0.001, true, []float64{1000, 1000, 1000}, []float64{2000}),
			false, 1, -1, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			Analyze(tc.run)
			f := overheadFinding(tc.run)
			if (f != nil) != tc.fires {
				t.Fatalf("finding %+v, want fired %v", f, tc.fires)
			}
			if u := tc.run.Experiments.Unobserved; !math.IsNaN(tc.change) {
				if math.Abs(u.Change-tc.change) > 1e-9 || u.Interval[0] <= tc.lo || u.Interval[0] > u.Change || u.Interval[1] < u.Change {
					t.Errorf("observer effect %+.4f [%+.4f, %+.4f], want %+.4f with the interval from above %+.3f", u.Change, u.Interval[0], u.Interval[1], tc.change, tc.lo)
				}
				if u.Class != "" || !strings.Contains(u.Reason, "the observer effect") || u.Rounds != min(len(u.Runs), len(tc.run.Experiments.Conditions[0].Runs)) {
					t.Errorf("class %q, reason %q, rounds %d", u.Class, u.Reason, u.Rounds)
				}
			}
			if f == nil {
				return
			}
			if !strings.Contains(f.Summary, tc.summaryPart) {
				t.Errorf("summary %q lacks %q", f.Summary, tc.summaryPart)
			}
			if f.Test == nil || f.Test.Value < f.Test.Threshold {
				t.Errorf("test %+v: the threshold does not hold for its number", f.Test)
			}
		})
	}
}

// The observer effect is recomputed from the runs: analysing a record
// twice gives the same figures, and it is not a condition (no class, no
// sensitivity, nothing concluded from it).
func TestObserverEffectIsNotACondition(t *testing.T) {
	r := observed(0.001, true, []float64{1000, 1010, 990}, []float64{1100, 1111, 1089})
	Analyze(r)
	first := *r.Experiments.Unobserved
	Analyze(r)
	if u := r.Experiments.Unobserved; u.Change != first.Change || u.Interval != first.Interval || u.Noise != first.Noise {
		t.Errorf("analysed twice: %+v, then %+v", first, *u)
	}
	if len(r.Verdict.Sensitivity) != 0 || r.Verdict.Conclusion != "" {
		t.Errorf("the observer effect was taken for a condition: %+v, %q", r.Verdict.Sensitivity, r.Verdict.Conclusion)
	}
}
