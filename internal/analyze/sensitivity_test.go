package analyze

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// cond builds a condition whose runs measured vals.
func cond(name, resource string, vals ...float64) model.Condition {
	c := model.Condition{Name: name, Resource: resource}
	for i, v := range vals {
		c.Runs = append(c.Runs, model.ExperimentRun{Seq: i + 1, Value: v})
	}
	return c
}

func TestClassify(t *testing.T) {
	cases := []struct {
		name   string
		conds  []model.Condition
		class  map[string]string // condition -> class
		higher bool
	}{
		{"clear loss is sensitive, small change insensitive", []model.Condition{
			cond("baseline", "", 100, 101, 99),
			cond("cpu-half", "cpu", 52, 50, 55),
			cond("io-pressure", "io", 94, 92, 95),
		}, map[string]string{"cpu-half": Sensitive, "io-pressure": Insensitive}, true},
		{"a change inside the baseline's noise is inconclusive", []model.Condition{
			cond("baseline", "", 100, 60, 140),
			cond("io-pressure", "io", 80, 82, 79),
		}, map[string]string{"io-pressure": Inconclusive}, true},
		{"overlapping runs with a large median change are inconclusive", []model.Condition{
			cond("baseline", "", 100, 102, 98),
			cond("cold-cache", "cache", 60, 104, 70),
		}, map[string]string{"cold-cache": Inconclusive}, true},
		{"times: lower is better, a doubled time is -50%", []model.Condition{
			cond("baseline", "", 1.0, 1.02, 0.99),
			cond("cpu-contention", "cpu", 2.0, 2.1, 1.95),
		}, map[string]string{"cpu-contention": Sensitive}, false},
		{"running faster with less is insensitive", []model.Condition{
			cond("baseline", "", 100, 101, 99),
			cond("cpu-half", "cpu", 130, 128, 135),
		}, map[string]string{"cpu-half": Insensitive}, true},
		{"a small change whose interval reaches a large loss is inconclusive", []model.Condition{
			cond("baseline", "", 100, 101, 99),
			cond("io-pressure", "io", 95, 70, 99),
		}, map[string]string{"io-pressure": Inconclusive}, true},
		{"one run each gives no interval", []model.Condition{
			cond("baseline", "", 100),
			cond("cpu-half", "cpu", 50),
		}, map[string]string{"cpu-half": Inconclusive}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			run := &model.Run{Experiments: &model.Experiments{Measure: model.Measure{HigherIsBetter: tc.higher}, Conditions: tc.conds}}
			Analyze(run)
			for _, c := range run.Experiments.Conditions {
				if want, ok := tc.class[c.Name]; ok && c.Class != want {
					t.Errorf("%s: class %s (%s), want %s; change %.3f interval %v", c.Name, c.Class, c.Reason, want, c.Change, c.Interval)
				}
			}
		})
	}
	// The doubled time reads as half the speed.
	run := &model.Run{Experiments: &model.Experiments{Conditions: []model.Condition{cond("baseline", "", 1, 1, 1), cond("cpu-half", "cpu", 2, 2, 2)}}}
	Analyze(run)
	if c := run.Experiments.Conditions[1].Change; c != -0.5 {
		t.Errorf("time 1 s -> 2 s: change %v, want -0.5", c)
	}
}

// TestConclusionFieldCase is the AndroBench case from the field report: the
// trace is dominated by fdatasync, but the score drops by half on fewer
// cores and only 7% under IO pressure. The verdict must name the CPU.
func TestConclusionFieldCase(t *testing.T) {
	run := runWith(2, 10, thread(1, map[string]float64{model.CatStorageSync: 6, model.CatCPU: 4}))
	run.Experiments = &model.Experiments{Measure: model.Measure{HigherIsBetter: true}, Conditions: []model.Condition{
		cond("baseline", "", 1000, 1010, 990),
		cond("cpu-half", "cpu", 520, 480, 640),
		cond("io-pressure", "io", 930, 925, 940),
		cond("cold-cache", "cache", 1002, 995, 1005),
	}}
	Analyze(run)
	v := run.Verdict
	if v.Primary != model.CatStorageSync {
		t.Fatalf("accounting primary %s, want storage-sync", v.Primary)
	}
	if v.Bottleneck != "cpu" {
		t.Errorf("bottleneck %q, want cpu; conclusion: %s", v.Bottleneck, v.Conclusion)
	}
	for _, want := range []string{"CPU-bound", "storage-sync time is real but not on the critical path", "cpu-half changed the result -48%", "io-pressure changed the result -7%"} {
		if !strings.Contains(v.Conclusion, want) {
			t.Errorf("conclusion %q lacks %q", v.Conclusion, want)
		}
	}
	want := map[string]string{"cpu": Sensitive, "io": Insensitive, "cache": Insensitive}
	for r, class := range want {
		if v.Sensitivity[r].Class != class {
			t.Errorf("sensitivity[%s] = %+v, want %s", r, v.Sensitivity[r], class)
		}
	}
	if _, ok := v.Sensitivity["memory"]; ok {
		t.Errorf("memory was not tested but has a sensitivity")
	}
}

func TestConclusionConfirmsStorage(t *testing.T) {
	run := runWith(2, 10, thread(1, map[string]float64{model.CatStorageSync: 8, model.CatCPU: 2}))
	run.Experiments = &model.Experiments{Measure: model.Measure{HigherIsBetter: true}, Conditions: []model.Condition{
		cond("baseline", "", 1000, 1010, 990),
		cond("cpu-half", "cpu", 1000, 985, 1003),
		cond("io-pressure", "io", 610, 580, 650),
	}}
	Analyze(run)
	if v := run.Verdict; v.Bottleneck != "io" || !strings.Contains(v.Conclusion, "storage-bound, confirmed") {
		t.Errorf("bottleneck %q, conclusion %q; want io, confirmed", v.Bottleneck, v.Conclusion)
	}
}

func TestConclusionNothingMoved(t *testing.T) {
	run := runWith(2, 10, thread(1, map[string]float64{model.CatCPU: 9, model.CatSleep: 1}))
	run.Experiments = &model.Experiments{Measure: model.Measure{HigherIsBetter: true}, Conditions: []model.Condition{
		cond("baseline", "", 1000, 1010, 990),
		cond("io-pressure", "io", 1000, 985, 1003),
	}}
	Analyze(run)
	if v := run.Verdict; v.Bottleneck != "" || !strings.Contains(v.Conclusion, "not confirmed") {
		t.Errorf("bottleneck %q, conclusion %q; want none, not confirmed", v.Bottleneck, v.Conclusion)
	}
}

// TestConclusionNamesInconclusiveLoss: a large loss that the baseline's own
// noise keeps from being conclusive is named with its numbers, not hidden
// behind "nothing moved".
func TestConclusionNamesInconclusiveLoss(t *testing.T) {
	run := runWith(2, 10, thread(1, map[string]float64{model.CatStorageSync: 6, model.CatCPU: 4}))
	run.Experiments = &model.Experiments{Measure: model.Measure{HigherIsBetter: true}, Conditions: []model.Condition{
		cond("baseline", "", 1000, 1010, 500),
		cond("io-pressure", "io", 700, 650, 720),
	}}
	Analyze(run)
	v := run.Verdict
	if v.Bottleneck != "" {
		t.Fatalf("bottleneck %q from an inconclusive loss", v.Bottleneck)
	}
	for _, want := range []string{"no experiment proved a bottleneck", "io-pressure changed the result -30%", "not conclusively", "more --repeat"} {
		if !strings.Contains(v.Conclusion, want) {
			t.Errorf("conclusion %q lacks %q", v.Conclusion, want)
		}
	}
}

// A diagnose of baseline alone (repeats for their noise) once concluded
// "no experiment proved a bottleneck (tested: )": it tests nothing, so it
// concludes nothing.
func TestBaselineOnlyConcludesNothing(t *testing.T) {
	run := &model.Run{Experiments: &model.Experiments{
		Measure:    model.Measure{Name: "insert tx/s", HigherIsBetter: true},
		Conditions: []model.Condition{{Name: "baseline", Runs: []model.ExperimentRun{{Value: 100}, {Value: 104}, {Value: 98}}}},
	}}
	experiments(run)
	if run.Verdict.Conclusion != "" || run.Verdict.Bottleneck != "" {
		t.Errorf("baseline alone concluded %q (bottleneck %q)", run.Verdict.Conclusion, run.Verdict.Bottleneck)
	}
	if got := run.Experiments.Conditions[0].Median; got != 100 {
		t.Errorf("baseline median %v, want 100", got)
	}
}

// scheduled is an experiment run as diagnose schedules it (round r runs
// every condition once, starting r places further into the list) on a
// machine that slows by drift a run: each condition's runs measure
// 1000 × its factor × the machine's speed then.
func scheduled(rounds int, drift float64, names []string, factor map[string]float64) []model.Condition {
	conds := make([]model.Condition, len(names))
	for i, n := range names {
		conds[i] = model.Condition{Name: n, Resource: map[bool]string{true: "", false: "io"}[n == "baseline"]}
	}
	seq := 0
	for r := 0; r < rounds; r++ {
		for i := range names {
			c := &conds[(i+r)%len(names)]
			seq++
			c.Runs = append(c.Runs, model.ExperimentRun{Seq: seq, Value: 1000 * factor[c.Name] * (1 - drift*float64(seq-1))})
		}
	}
	return conds
}

// TestClassifyPairsRounds: on a machine that slows by 3% of its first
// speed a run, the baseline falls by 40% over the experiment's 15 runs.
// Each condition's run is set against the baseline run of its own round,
// moved to its place along the baseline's drift, so the drift cancels: an
// unchanged condition is insensitive and a 30% loss is sensitive at -30%.
// Unpaired, the same runs read cpu-half "inconclusive (changed -4% but the
// interval [-25%, +33%] leaves room for a large loss)". Regression: a
// sync-bound test's cpu-half read "inconclusive (change -14%, interval
// [-16%, +10%]) ... the baseline alone moves ±16%".
func TestClassifyPairsRounds(t *testing.T) {
	conds := scheduled(5, 0.03, []string{"baseline", "cpu-half", "io-pressure"}, map[string]float64{"baseline": 1, "cpu-half": 1, "io-pressure": 0.7})
	conds[1].Resource = "cpu"
	run := &model.Run{Experiments: &model.Experiments{Measure: model.Measure{HigherIsBetter: true}, Conditions: conds}}
	Analyze(run)
	ex := run.Experiments
	if ex.BaselineDrift == nil || ex.BaselineDrift.Change > -0.15 {
		t.Errorf("baseline drift %+v, want a fall of more than 15%%", ex.BaselineDrift)
	}
	half, io := ex.Conditions[1], ex.Conditions[2]
	if half.Class != Insensitive || math.Abs(half.Change) > 0.03 || half.Rounds != 5 {
		t.Errorf("cpu-half: %s (%s), change %+.3f %v over %d rounds; want insensitive, about 0", half.Class, half.Reason, half.Change, half.Interval, half.Rounds)
	}
	if io.Class != Sensitive || math.Abs(io.Change+0.3) > 0.02 {
		t.Errorf("io-pressure: %s (%s), change %+.3f %v; want sensitive, -30%%", io.Class, io.Reason, io.Change, io.Interval)
	}
	if io.Interval[1]-io.Interval[0] > 0.02 {
		t.Errorf("io-pressure: interval %v, want the drift out of it", io.Interval)
	}
}

// TestClassifyCorrectsForAddedRounds: the same runs decided again after
// rounds were added are judged with a wider interval: a loss whose rounds
// all fall below zero at the first look may not at the fourth.
func TestClassifyCorrectsForAddedRounds(t *testing.T) {
	conds := []model.Condition{cond("baseline", "", 100, 100, 100, 100, 100), cond("io-pressure", "io", 88, 90, 85, 99, 87)}
	for extended, class := range map[int]string{0: Sensitive, 3: Inconclusive} {
		run := &model.Run{Experiments: &model.Experiments{Measure: model.Measure{HigherIsBetter: true}, Extended: extended,
			Conditions: slices.Clone(conds)}}
		Analyze(run)
		if c := run.Experiments.Conditions[1]; c.Class != class {
			t.Errorf("%d rounds added: %s (%s) %v, want %s", extended, c.Class, c.Reason, c.Interval, class)
		}
	}
}

// TestClassifyVariableEffect: a condition whose effect varies from round to
// round (io-pressure on a sync loop: 1.4 s to 3.6 s a run) is judged on its
// median loss and interval against the measure's own noise, the
// baseline's, not against its rounds' spread, which holds that variation.
// Regression: "io-pressure is inconclusive: changed -23% but one round's
// change moves ±26% by itself", interval [-44%, -14%], in a clean-clone
// run of TestExperimentSyncBound.
func TestClassifyVariableEffect(t *testing.T) {
	conds := []model.Condition{
		cond("baseline", "", 1.4, 1.3, 1.4, 1.4, 1.4, 2.0, 1.5, 1.4, 1.4, 1.2, 1.2, 1.3, 1.6, 1.5),
		cond("io-pressure", "io", 3.1, 2.4, 1.8, 1.7, 1.8, 3.6, 2.2, 1.6, 2.4, 1.6, 1.4, 1.8, 1.6, 1.8),
	}
	run := &model.Run{Experiments: &model.Experiments{Measure: model.Measure{HigherIsBetter: false}, Extended: 1, Conditions: conds}}
	Analyze(run)
	c := run.Experiments.Conditions[1]
	if c.Class != Sensitive {
		t.Errorf("io-pressure: %s (%s), change %+.3f %v, rounds' noise ±%.0f%%, baseline's ±%.0f%%; want sensitive",
			c.Class, c.Reason, c.Change, c.Interval, c.Noise*100, run.Experiments.BaselineNoise*100)
	}
}

// TestConclusionTieGoesToTheAccounting: the SQLite WAL case from a quiet
// clean-clone run. cpu-contention cost -51%, io-pressure -53%: both
// sensitive, within the material change of each other, so the experiments
// cannot tell them apart and the accounting (cpu, 944 ms against 257 ms of
// storage) decides; io is named as mattering as much. Apart by more than
// the material change, the experiments decide, as before.
func TestConclusionTieGoesToTheAccounting(t *testing.T) {
	for _, tc := range []struct {
		name    string
		io      []float64
		want    string
		phrases []string
	}{
		{"within 10 points", []float64{470, 465, 480}, "cpu", []string{"CPU-bound, confirmed", "and the accounting agrees (cpu)", "io matters as much (within 10 points, which the accounting decides): io-pressure changed the result -53%"}},
		{"apart by more", []float64{300, 290, 310}, "io", []string{"storage-bound: io-pressure changed the result -70%", "the accounting's largest share was cpu, which the experiments found to matter less", "cpu matters too: cpu-contention changed the result -51%"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := runWith(2, 10, thread(1, map[string]float64{model.CatCPU: 0.944, model.CatStorageWrite: 0.257, model.CatCPUWait: 0.05}))
			run.Experiments = &model.Experiments{Measure: model.Measure{HigherIsBetter: true}, Conditions: []model.Condition{
				cond("baseline", "", 1000, 1000, 1000),
				cond("cpu-contention", "cpu", 490, 485, 495),
				cond("io-pressure", "io", tc.io...),
			}}
			Analyze(run)
			v := run.Verdict
			if v.Bottleneck != tc.want {
				t.Errorf("bottleneck %q, want %s; conclusion: %s", v.Bottleneck, tc.want, v.Conclusion)
			}
			for _, p := range tc.phrases {
				if !strings.Contains(v.Conclusion, p) {
					t.Errorf("conclusion %q lacks %q", v.Conclusion, p)
				}
			}
		})
	}
}

// withTime sets the busy threads' time of c's runs: cpu, cpu-wait and
// storage seconds, the same in every run.
func withTime(c model.Condition, cpu, wait, storage float64) model.Condition {
	for i := range c.Runs {
		c.Runs[i].CPUSec, c.Runs[i].CPUWaitSec, c.Runs[i].StorageSec = cpu, wait, storage
	}
	return c
}

// TestSideEffectConfounds: the Redis case. appendfsync everysec
// spent no time on storage, yet io-pressure cost it 26%: its cpu-wait
// rose from 27 ms to 608 ms a run, the writer taking CPU on a machine of
// two. The loss is not counted for storage; cpu-contention's is.
func TestSideEffectConfounds(t *testing.T) {
	run := runWith(2, 10, thread(1, map[string]float64{model.CatCPU: 6, model.CatSleep: 4}))
	io := withTime(cond("io-pressure", "io", 740, 735, 745, 730, 750), 1.21, 0.608, 0)
	for i := range io.Runs {
		io.Runs[i].LoadCPUSec = 0.9
	}
	run.Experiments = &model.Experiments{Measure: model.Measure{HigherIsBetter: true}, Conditions: []model.Condition{
		withTime(cond("baseline", "", 1000, 1010, 990, 1005, 995), 1.2, 0.027, 0),
		withTime(cond("cpu-contention", "cpu", 560, 540, 550, 555, 545), 1.2, 1.1, 0),
		io,
	}}
	Analyze(run)
	ex, v := run.Experiments, run.Verdict
	c := ex.Conditions[2]
	se := c.SideEffect
	if se == nil || !se.Confounded || se.Resource != "cpu" || se.LoadCPUSec != 0.9 {
		t.Fatalf("io-pressure's side effect %+v, want confounded, on cpu, its generator's 0.9 s", se)
	}
	if c.Class != Inconclusive || !strings.Contains(c.Reason, "it also took CPU") || !strings.Contains(c.Reason, "1.23s → 1.82s") {
		t.Errorf("io-pressure: %s, %q; want inconclusive, naming the CPU it took", c.Class, c.Reason)
	}
	if s := v.Sensitivity["io"]; s.Class == Sensitive {
		t.Errorf("io called sensitive from a confounded condition: %+v", s)
	}
	if v.Bottleneck != "cpu" {
		t.Errorf("bottleneck %q, want cpu: %s", v.Bottleneck, v.Conclusion)
	}
	if !strings.Contains(v.Conclusion, "io-pressure's -26% is not counted for storage: it also took CPU") {
		t.Errorf("conclusion %q does not say why io-pressure's loss is not counted", v.Conclusion)
	}
	if cc := ex.Conditions[1]; cc.SideEffect != nil {
		t.Errorf("cpu-contention took no storage, yet has a side effect %+v", cc.SideEffect)
	}
}

// TestSideEffectSmallerThanOwn: io-pressure on a sync-bound program (a
// TestExperimentSyncBound record here) also raised its cpu-wait, 414 ->
// 855 ms a run, and its CPU, 878 -> 1117 ms, but its storage time rose
// 1.5 -> 4.4 s: the side effect is recorded, the loss still counts.
func TestSideEffectSmallerThanOwn(t *testing.T) {
	run := runWith(2, 10, thread(1, map[string]float64{model.CatStorageSync: 6, model.CatCPU: 3}))
	run.Experiments = &model.Experiments{Measure: model.Measure{HigherIsBetter: true}, Conditions: []model.Condition{
		withTime(cond("baseline", "", 1000, 1010, 990, 1005, 995), 0.878, 0.414, 1.518),
		withTime(cond("io-pressure", "io", 470, 480, 460, 475, 465), 1.117, 0.855, 4.419),
	}}
	Analyze(run)
	c := run.Experiments.Conditions[1]
	if se := c.SideEffect; se == nil || se.Confounded {
		t.Fatalf("side effect %+v, want one recorded, not confounded", se)
	}
	if c.Class != Sensitive || run.Verdict.Bottleneck != "io" {
		t.Errorf("io-pressure %s, bottleneck %q; want sensitive, io", c.Class, run.Verdict.Bottleneck)
	}
}

// TestSideEffectNeedsAccounting: without eBPF time in the runs there is
// nothing to set against, and nothing is claimed.
func TestSideEffectNeedsAccounting(t *testing.T) {
	base, io := cond("baseline", "", 1000, 1010, 990), cond("io-pressure", "io", 600, 610, 590)
	if se := sideEffect(&base, &io); se != nil {
		t.Errorf("side effect %+v from runs without accounting", se)
	}
}
