package experiment

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/probe"
	"github.com/perfsleuth/perfsleuth/internal/probe/probetest"
	"github.com/perfsleuth/perfsleuth/internal/target"
)

// inDir runs the test in a directory of its own: experiments make their
// working directory in the current one.
func inDir(t *testing.T) string {
	t.Helper()
	wd, _ := os.Getwd()
	dir := t.TempDir()
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chdir(wd) })
	return dir
}

// nullSpec is an experiment on the null benchmark, run in this process,
// observed by a fake probe that logs to log.
func nullSpec(log *probetest.Log, c model.NullConfig, conds ...string) Spec {
	t := model.Target{Kind: "null", Null: &c}
	return Spec{
		Target:     &t,
		Conditions: conds,
		Repeat:     3,
		Builtin:    target.NewInProcess,
		Probes: func() []probe.Probe {
			return []probe.Probe{&probetest.Fake{Name: "fake", Log: log}}
		},
	}
}

// testCondition registers a condition that logs its steps, for one test.
func testCondition(t *testing.T, log *probetest.Log, applyErr error) {
	t.Helper()
	conditions["test-load"] = &condition{
		name:     "test-load",
		resource: "cpu",
		prepare:  func(context.Context, *env) ([]string, error) { return []string{"a logged load"}, nil },
		apply: func(context.Context, *env) (func([]int) error, func(), error) {
			log.Add("apply")
			if applyErr != nil {
				return nil, func() { log.Add("undo") }, applyErr
			}
			return func(pids []int) error { log.Add("before %d", len(pids)); return nil }, func() { log.Add("undo") }, nil
		},
	}
	names := conditionNames
	conditionNames = append(slices.Clone(names), "test-load")
	t.Cleanup(func() { delete(conditions, "test-load"); conditionNames = names })
}

func count(calls []string, call string) int {
	n := 0
	for _, c := range calls {
		if c == call {
			n++
		}
	}
	return n
}

// TestRunInterleaves: every condition runs Repeat times after one warm-up
// run, interleaved; each apply is undone; the record is the baseline run
// with the median measure, and nothing is left in the directory.
func TestRunInterleaves(t *testing.T) {
	dir := inDir(t)
	log := &probetest.Log{}
	testCondition(t, log, nil)
	spec := nullSpec(log, model.NullConfig{Ops: 1000, DurationSec: 0.01}, "baseline", "test-load")
	var plan []string
	run, err := Run(context.Background(), spec, Hooks{Plan: func(l []string) { plan = l }})
	if err != nil {
		t.Fatal(err)
	}
	ex := run.Experiments
	if ex == nil || len(ex.Conditions) != 2 || ex.Incomplete {
		t.Fatalf("experiments %+v", ex)
	}
	for _, c := range ex.Conditions {
		if len(c.Runs) != 3 {
			t.Errorf("%s: %d runs, want 3", c.Name, len(c.Runs))
		}
	}
	checkRounds(t, ex.Order, []string{"baseline", "test-load"})
	calls := log.Calls()
	if a, u, b := count(calls, "apply"), count(calls, "undo"), count(calls, "before 1"); a != 3 || u != 3 || b != 3 {
		t.Errorf("test-load applied %d, undone %d, before-run %d times; want 3 each", a, u, b)
	}
	// 7 runs (a warm-up and 6), each with its own probe.
	if n := count(calls, "start fake"); n != 7 || count(calls, "stop fake") != 7 {
		t.Errorf("probe started %d times, want 7: %v", n, calls)
	}
	if ex.Measure.Unit != "ops/s" || ex.Warmup <= 0 {
		t.Errorf("measure %+v, warm-up %v", ex.Measure, ex.Warmup)
	}
	base := ex.Conditions[0]
	vals := []float64{base.Runs[0].Value, base.Runs[1].Value, base.Runs[2].Value}
	slices.Sort(vals)
	if got := float64(run.Result.Null.Ops) / run.Result.DurationSec; got != vals[1] {
		t.Errorf("the record's measure %v is not the baseline's median %v (runs %+v)", got, vals, base.Runs)
	}
	if len(plan) == 0 || !strings.Contains(plan[0], "2 conditions × 3 runs") {
		t.Errorf("plan %q", plan)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("left in the directory: %v", left)
	}
}

// TestRunCancel: Ctrl-C in the middle keeps what was measured, marks it
// incomplete, undoes the condition and removes the working directory.
func TestRunCancel(t *testing.T) {
	dir := inDir(t)
	log := &probetest.Log{}
	testCondition(t, log, nil)
	spec := nullSpec(log, model.NullConfig{Ops: 10, DurationSec: 0.1}, "baseline", "test-load")
	spec.Repeat = 20
	// Ctrl-C as the fourth measured run starts, whatever the machine's
	// speed. Regression: a 700 ms deadline came before the first measured
	// run on a loaded machine ("interrupted before the measured phase
	// began").
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	run, err := Run(ctx, spec, Hooks{Status: func(s Status) {
		if s.Seq == 4 {
			cancel()
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if !run.Interrupted || !run.Experiments.Incomplete {
		t.Errorf("interrupted %v, incomplete %v", run.Interrupted, run.Experiments.Incomplete)
	}
	calls := log.Calls()
	if a, u := count(calls, "apply"), count(calls, "undo"); a == 0 || a != u {
		t.Errorf("test-load applied %d times, undone %d", a, u)
	}
	if count(calls, "start fake") != count(calls, "stop fake") {
		t.Errorf("probes started and not stopped: %v", calls)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("left in the directory: %v", left)
	}
}

// TestRunCancelDuringWarmup: nothing measured is ErrInterrupted.
func TestRunCancelDuringWarmup(t *testing.T) {
	dir := inDir(t)
	log := &probetest.Log{}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := Run(ctx, nullSpec(log, model.NullConfig{DurationSec: 5}, "baseline"), Hooks{})
	if !errors.Is(err, target.ErrInterrupted) {
		t.Fatalf("error %v, want ErrInterrupted", err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("left in the directory: %v", left)
	}
}

// TestRunStopsOnError: a condition that cannot be applied ends the
// experiment; what the baselines measured is kept, with the reason.
func TestRunStopsOnError(t *testing.T) {
	inDir(t)
	log := &probetest.Log{}
	testCondition(t, log, errors.New("no load today"))
	run, err := Run(context.Background(), nullSpec(log, model.NullConfig{Ops: 10}, "baseline", "test-load"), Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	if !run.Experiments.Incomplete || !slices.ContainsFunc(run.Warnings, func(w string) bool { return strings.Contains(w, "no load today") }) {
		t.Errorf("incomplete %v, warnings %q", run.Experiments.Incomplete, run.Warnings)
	}
	if calls := log.Calls(); count(calls, "apply") != count(calls, "undo") {
		t.Errorf("applied and not undone: %v", calls)
	}
}

// TestRunWorkloadFails: a workload that fails in the warm-up run is the
// experiment's error.
func TestRunWorkloadFails(t *testing.T) {
	inDir(t)
	log := &probetest.Log{}
	_, err := Run(context.Background(), nullSpec(log, model.NullConfig{Fail: "run"}, "baseline"), Hooks{})
	if err == nil || !strings.Contains(err.Error(), "failing in run") {
		t.Fatalf("error %v", err)
	}
}

// checkRounds checks an experiment's order (names#k) against rotations:
// rounds of one run of each condition, each round the list from some
// place on, wrapping; the first from the baseline; each block of n rounds
// starting once at each place.
func checkRounds(t *testing.T, order, names []string) {
	t.Helper()
	n := len(names)
	if len(order)%n != 0 {
		t.Fatalf("order %v is not whole rounds of %d", order, n)
	}
	var starts []int
	for r := 0; r < len(order)/n; r++ {
		p := slices.IndexFunc(names, func(c string) bool { return strings.HasPrefix(order[r*n], c+"#") })
		for i := 0; i < n; i++ {
			if want := fmt.Sprintf("%s#%d", names[(p+i)%n], r+1); p < 0 || order[r*n+i] != want {
				t.Fatalf("round %d of %v: %s at place %d, want %s", r+1, order, order[r*n+i], i, want)
			}
		}
		starts = append(starts, p)
	}
	if starts[0] != 0 {
		t.Errorf("the first round starts at %s, not the baseline: %v", names[starts[0]], order)
	}
	for b := 0; b+n <= len(starts); b += n {
		block := slices.Sorted(slices.Values(starts[b : b+n]))
		for i, p := range block {
			if p != i {
				t.Errorf("rounds %d-%d start at places %v, want each once: %v", b+1, b+n, starts[b:b+n], order)
				break
			}
		}
	}
}

// TestSchedule: rotations make whole rounds, each block of n rounds
// starting once at each place, and the blocks' orders are drawn: over
// 100 schedules of 6 rounds of 3 conditions, more than one order comes up.
func TestSchedule(t *testing.T) {
	names := []string{"a", "b", "c"}
	seen := map[string]bool{}
	for range 100 {
		ro := &rotations{n: 3}
		idx := append(ro.schedule(0, 4), ro.schedule(4, 6)...)
		count := map[int]int{}
		var order []string
		for _, i := range idx {
			count[i]++
			order = append(order, fmt.Sprintf("%s#%d", names[i], count[i]))
		}
		checkRounds(t, order, names)
		seen[fmt.Sprint(idx)] = true
	}
	if len(seen) < 2 {
		t.Errorf("one schedule in 100 draws: %v", seen)
	}
}

// TestRunExtendsWhileInconclusive: runs that move by a factor of three
// from one to the next leave every condition inconclusive, so rounds are
// added up to MaxRepeat, interleaved like the planned ones, and the record
// says so.
func TestRunExtendsWhileInconclusive(t *testing.T) {
	inDir(t)
	log := &probetest.Log{}
	testCondition(t, log, nil)
	spec := nullSpec(log, model.NullConfig{}, "baseline", "test-load")
	spec.MaxRepeat = 5
	calls := 0
	spec.Builtin = func(tg model.Target, h target.Hooks) target.Target {
		calls++
		c := *tg.Null
		c.Ops, c.DurationSec = 100000, []float64{0.01, 0.03, 0.02}[calls%3]
		tg.Null = &c
		return target.NewInProcess(tg, h)
	}
	run, err := Run(context.Background(), spec, Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	ex := run.Experiments
	if ex.Extended != 2 {
		t.Errorf("extended by %d rounds, want 2 (from 3 to --max-repeat 5)", ex.Extended)
	}
	for _, c := range ex.Conditions {
		if len(c.Runs) != 5 {
			t.Errorf("%s: %d runs, want 5", c.Name, len(c.Runs))
		}
	}
	if calls != 11 || len(ex.Order) != 10 {
		t.Errorf("%d runs made (want a warm-up and 10), order %v", calls, ex.Order)
	}
}

// TestPairInterleaves: a comparison runs A and B in rounds, so that each
// pair of runs ran back to back, the order random but balanced, and each record carries its own
// runs and the pair they belong to.
func TestPairInterleaves(t *testing.T) {
	dir := inDir(t)
	log := &probetest.Log{}
	a := nullSpec(log, model.NullConfig{Ops: 1000, DurationSec: 0.01})
	b := nullSpec(log, model.NullConfig{Ops: 1000, DurationSec: 0.02})
	ra, rb, err := Pair(context.Background(), PairSpec{A: a, B: b, Repeat: 4}, Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	// Each round is A's run and B's back to back, A first in two of the
	// four rounds (roundOrder draws which).
	order := ra.Experiments.Order
	aFirst := 0
	for r := range 4 {
		x, y := order[2*r], order[2*r+1]
		n := fmt.Sprint(r + 1)
		switch {
		case x == "A#"+n && y == "B#"+n:
			aFirst++
		case x != "B#"+n || y != "A#"+n:
			t.Errorf("round %d ran %s, %s; want A#%s and B#%s back to back (order %v)", r+1, x, y, n, n, order)
		}
	}
	if aFirst != 2 {
		t.Errorf("A ran first in %d rounds of 4, want 2 (order %v)", aFirst, order)
	}
	for _, r := range []*model.Run{ra, rb} {
		ex := r.Experiments
		if !slices.Equal(ex.Order, order) {
			t.Errorf("the records' orders differ: %v and %v", ex.Order, order)
		}
		if len(ex.Conditions) != 1 || len(ex.Conditions[0].Runs) != 4 || ex.Pair == nil {
			t.Fatalf("experiments %+v", ex)
		}
	}
	if ra.Experiments.Pair.ID != rb.Experiments.Pair.ID || ra.Experiments.Pair.Side != "A" || rb.Experiments.Pair.Side != "B" {
		t.Errorf("pairs %+v %+v", ra.Experiments.Pair, rb.Experiments.Pair)
	}
	// B sleeps twice as long: its ops/s are about half of A's.
	if va, vb := ra.Experiments.Conditions[0].Runs[0].Value, rb.Experiments.Conditions[0].Runs[0].Value; vb > 0.7*va {
		t.Errorf("A %v ops/s, B %v: B is not the slower", va, vb)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("left in the directory: %v", left)
	}
}

// TestRoundOrder: half of the rounds put A first (the odd round either
// way), and the order is not the fixed alternation: over 200 draws of 8
// rounds, every one of the 70 balanced orders is possible, and the
// alternation's two (A first in the even rounds, or in the odd ones)
// come up about 3 times in 200, not every time.
func TestRoundOrder(t *testing.T) {
	seen := map[string]int{}
	for range 200 {
		o := roundOrder(8)
		if n := aFirstCount(o); n != 4 {
			t.Fatalf("A first in %d rounds of 8: %v", n, o)
		}
		seen[fmt.Sprint(o)]++
	}
	if len(seen) < 30 {
		t.Errorf("%d distinct orders in 200 draws, want most of the 70", len(seen))
	}
	for _, n := range []int{1, 5, 7} {
		if a := aFirstCount(roundOrder(n)); a != n/2 && a != n/2+1 {
			t.Errorf("%d rounds: A first in %d", n, a)
		}
	}
}

func aFirstCount(o []bool) int {
	n := 0
	for _, f := range o {
		if f {
			n++
		}
	}
	return n
}

// TestRunUnobserved: the unobserved condition runs the same workload with
// no probe attached, once a round, interleaved like a condition; its runs
// are the observer effect, kept apart from the conditions.
func TestRunUnobserved(t *testing.T) {
	inDir(t)
	log := &probetest.Log{}
	testCondition(t, log, nil)
	spec := nullSpec(log, model.NullConfig{Ops: 1000, DurationSec: 0.01}, "test-load", "unobserved")
	var plan []string
	run, err := Run(context.Background(), spec, Hooks{Plan: func(l []string) { plan = l }})
	if err != nil {
		t.Fatal(err)
	}
	ex := run.Experiments
	if len(ex.Conditions) != 2 || ex.Conditions[0].Name != "baseline" || ex.Conditions[1].Name != "test-load" {
		t.Fatalf("conditions %+v, want baseline and test-load", ex.Conditions)
	}
	if u := ex.Unobserved; u == nil || u.Name != "unobserved" || len(u.Runs) != 3 || len(u.Settings) == 0 {
		t.Fatalf("unobserved %+v, want 3 runs and its settings", u)
	}
	// Baseline, unobserved, test-load, then rotated.
	checkRounds(t, ex.Order, []string{"baseline", "unobserved", "test-load"})
	for i, r := range ex.Unobserved.Runs {
		if r.Seq != slices.Index(ex.Order, fmt.Sprintf("unobserved#%d", i+1))+1 || r.Value <= 0 {
			t.Errorf("unobserved run %d: %+v", i+1, r)
		}
	}
	// The warm-up, 3 baseline and 3 test-load runs are observed; the 3
	// unobserved runs start no probe.
	if n := count(log.Calls(), "start fake"); n != 7 {
		t.Errorf("probe started %d times, want 7 (none in the unobserved runs)", n)
	}
	said := func(l string) bool {
		return strings.Contains(l, "unobserved") && strings.Contains(l, "no probe attached")
	}
	if !strings.Contains(plan[0], "3 conditions × 3 runs") || !slices.ContainsFunc(plan, said) {
		t.Errorf("plan %q", plan)
	}
}

// TestRunNeedsAResourceCondition: conditions that take a resource away,
// all skipped here, leave nothing to run; the observer effect alone
// (baseline and unobserved) is a request of its own.
func TestRunNeedsAResourceCondition(t *testing.T) {
	inDir(t)
	log := &probetest.Log{}
	conditions["test-none"] = &condition{name: "test-none", resource: "cpu",
		prepare: func(context.Context, *env) ([]string, error) { return nil, errors.New("not here") },
		apply:   func(context.Context, *env) (func([]int) error, func(), error) { return nil, func() {}, nil }}
	names := conditionNames
	conditionNames = append(slices.Clone(names), "test-none")
	t.Cleanup(func() { delete(conditions, "test-none"); conditionNames = names })

	spec := nullSpec(log, model.NullConfig{Ops: 100, DurationSec: 0.005}, "unobserved", "test-none")
	if _, err := Run(context.Background(), spec, Hooks{}); err == nil || !strings.Contains(err.Error(), "no condition besides baseline") {
		t.Errorf("error %v, want no condition besides baseline", err)
	}
	spec = nullSpec(log, model.NullConfig{Ops: 100, DurationSec: 0.005}, "unobserved")
	spec.Repeat = 2
	run, err := Run(context.Background(), spec, Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	if u := run.Experiments.Unobserved; u == nil || len(u.Runs) != 2 || len(run.Experiments.Conditions) != 1 {
		t.Errorf("observer effect alone: %+v", run.Experiments)
	}
}

// TestRunRewarmsAfterEviction: a run of a condition that keeps the cache
// (the baseline) right after one of a condition that evicted the
// workload's files gets a run not counted first, so that it finds the
// cache the warm-up left and not the eviction; the plan counts them and
// the record keeps their measures apart.
func TestRunRewarmsAfterEviction(t *testing.T) {
	inDir(t)
	log := &probetest.Log{}
	conditions["test-cold"] = &condition{
		name:       "test-cold",
		resource:   "cache",
		leavesCold: true,
		prepare:    func(context.Context, *env) ([]string, error) { return []string{"a logged eviction"}, nil },
		apply: func(context.Context, *env) (func([]int) error, func(), error) {
			return func([]int) error { log.Add("evict"); return nil }, func() {}, nil
		},
	}
	names := conditionNames
	conditionNames = append(slices.Clone(names), "test-cold")
	t.Cleanup(func() { delete(conditions, "test-cold"); conditionNames = names })

	spec := nullSpec(log, model.NullConfig{Ops: 1000, DurationSec: 0.01}, "baseline", "test-cold")
	spec.MaxRepeat = spec.Repeat
	var plan []string
	run, err := Run(context.Background(), spec, Hooks{Plan: func(l []string) { plan = l }})
	if err != nil {
		t.Fatal(err)
	}
	ex := run.Experiments
	// What ran, from the log: c for a run that evicted, w for one that did not.
	// The eviction comes before the run's probe starts.
	var got []byte
	evicted := false
	for _, c := range log.Calls() {
		switch c {
		case "evict":
			evicted = true
		case "start fake":
			got = append(got, map[bool]byte{false: 'w', true: 'c'}[evicted])
			evicted = false
		}
	}
	// What should have: the warm-up, then the counted runs in their order,
	// each of the baseline's after one of test-cold's with a w before it.
	want := []byte{'w'}
	rewarms := 0
	for i, o := range ex.Order {
		if strings.HasPrefix(o, "test-cold#") {
			want = append(want, 'c')
			continue
		}
		if i > 0 && strings.HasPrefix(ex.Order[i-1], "test-cold#") {
			want = append(want, 'w')
			rewarms++
		}
		want = append(want, 'w')
	}
	if string(got) != string(want) {
		t.Errorf("runs %s, want %s (order %v)", got, want, ex.Order)
	}
	// Three rounds of two, the first baseline first: at least one baseline
	// run follows a test-cold one.
	if rewarms == 0 || len(ex.Rewarms) != rewarms {
		t.Errorf("%d re-warm runs recorded, want %d (order %v)", len(ex.Rewarms), rewarms, ex.Order)
	}
	for _, v := range ex.Rewarms {
		if v <= 0 {
			t.Errorf("re-warm measure %v", ex.Rewarms)
		}
	}
	for _, c := range ex.Conditions {
		if len(c.Runs) != 3 {
			t.Errorf("%s: %d runs, want 3 (re-warm runs are not counted)", c.Name, len(c.Runs))
		}
	}
	if !slices.ContainsFunc(plan, func(l string) bool {
		return strings.Contains(l, fmt.Sprintf("re-warm         %d runs", rewarms))
	}) {
		t.Errorf("plan does not count %d re-warm runs: %q", rewarms, plan)
	}
}
