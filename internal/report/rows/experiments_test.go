package rows

import (
	"math"
	"strings"
	"testing"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// The observer effect's runs are listed right after the baseline's, read
// "observer effect" in the class column, and have no accounting row (no
// probe was there to make one).
func TestExperimentsOfUnobserved(t *testing.T) {
	run := func(v, cpu float64) model.ExperimentRun { return model.ExperimentRun{Value: v, CPUSec: cpu} }
	ex := &model.Experiments{Measure: model.Measure{HigherIsBetter: true},
		Conditions: []model.Condition{
			{Name: "baseline", Median: 100, Runs: []model.ExperimentRun{run(100, 1), run(102, 1)}},
			{Name: "cpu-half", Resource: "cpu", Median: 50, Class: "sensitive", Rounds: 2, Runs: []model.ExperimentRun{run(50, 1), run(52, 1)}},
		},
		Unobserved: &model.Condition{Name: "unobserved", Median: 110, Change: 0.1, Runs: []model.ExperimentRun{run(110, 0), run(112, 0)}},
	}
	x := ExperimentsOf(ex)
	var names []string
	for _, c := range x.Conditions {
		names = append(names, c.Name)
	}
	if got := strings.Join(names, " "); got != "baseline unobserved cpu-half" {
		t.Fatalf("rows %q, want baseline unobserved cpu-half", got)
	}
	u := x.Conditions[1]
	if !u.Unobserved || u.Class != "observer effect" || u.Baseline || math.Abs(u.Points[0]-0.1) > 1e-9 {
		t.Errorf("unobserved row %+v", u)
	}
	if ex.Unobserved.Class != "" {
		t.Errorf("the row's class leaked into the record: %q", ex.Unobserved.Class)
	}
	for _, a := range x.Accounting {
		if a.Name == "unobserved" {
			t.Errorf("an accounting row for the unobserved runs: %+v", a)
		}
	}
}

// The notes say how the drift and the added rounds were dealt with: by
// pairing rounds and widening the intervals in records that paired them.
func TestExperimentNotes(t *testing.T) {
	ex := &model.Experiments{Repeat: 3, Extended: 2, BaselineDrift: &model.Drift{Change: -0.12, P: 0.01},
		Conditions: []model.Condition{{Name: "baseline"}, {Name: "io-pressure", Rounds: 5}}}
	notes := strings.Join(experimentNotes(ex), "\n")
	for _, want := range []string{"fell -12%", "the drift cancels in its change", "decided 3 times", "98.3% instead of 95%"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	// An older record, unpaired: no claim of a correction it did not get.
	ex.Conditions[1].Rounds = 0
	notes = strings.Join(experimentNotes(ex), "\n")
	if strings.Contains(notes, "cancels") || strings.Contains(notes, "Bonferroni") {
		t.Errorf("an unpaired record's notes claim pairing or a correction:\n%s", notes)
	}
}
