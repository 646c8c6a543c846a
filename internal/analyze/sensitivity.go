package analyze

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/stats"
	"github.com/perfsleuth/perfsleuth/internal/units"
)

// materialChange is the smallest change in performance that makes a
// resource the workload's bottleneck. The field report that motivated
// diagnose called a 7% loss under 30% IO pressure "not the bottleneck" and a
// 36-52% loss on fewer or smaller cores "the bottleneck"; 10% separates the
// two with room for a noisy machine.
const materialChange = 0.10

// insensitiveSpan: a condition is called insensitive only when its interval
// also rules out a large effect, within twice materialChange; a wider
// interval cannot tell "no effect" from "not enough runs".
const insensitiveSpan = 2 * materialChange

// noiseSigmas: a noise is the band of ±2 robust standard deviations
// around a median, which holds about 95% of single values of a normal
// sample: the baseline's runs (BaselineNoise), a condition's rounds'
// changes (Condition.Noise), which its median change must move beyond to
// be called sensitive.
const noiseSigmas = 2

// Drift thresholds: a series of runs drifted when a Mann-Kendall test
// finds a monotone trend at the usual 5% level and the trend moved it by
// half the material change or more (smaller drifts cannot carry a median
// across the material bar).
const (
	driftP      = 0.05
	driftChange = materialChange / 2
)

// Drift reports a trend in runs (in the order they ran), nil when there is
// none beyond chance or it is too small to matter.
func Drift(runs []float64) *model.Drift {
	t := stats.TrendOf(runs)
	if t.P >= driftP || math.Abs(t.Change) < driftChange {
		return nil
	}
	return &model.Drift{Change: t.Change, P: t.P}
}

// Sensitivity classes.
const (
	Sensitive    = "sensitive"
	Insensitive  = "insensitive"
	Inconclusive = "inconclusive"
)

// baselineName is the condition the others are compared with.
const baselineName = "baseline"

// experiments fills each condition's median, change, interval and class,
// the baseline's noise, and the verdict's sensitivity and conclusion.
func experiments(run *model.Run) {
	ex := run.Experiments
	if !Conditions(ex) {
		return
	}
	if run.Verdict == nil {
		run.Verdict = &model.Verdict{}
	}
	run.Verdict.Sensitivity = sensitivity(ex.Conditions)
	if ex.Scaling != nil {
		// --scale: the levels, not conditions; how it scaled is the
		// experiments' conclusion.
		scaling(ex)
		run.Verdict.Conclusion = ex.Scaling.Summary
		return
	}
	// Baseline alone (`--conditions baseline`, repeats to measure the
	// noise, e.g. for compare) tests no resource: nothing to conclude.
	if len(ex.Conditions) > 1 {
		conclude(run)
	}
}

// Conditions fills each condition's median, change, interval and class,
// and the baseline's noise and drift; false when there is no baseline run
// to compare with. diagnose calls it between rounds to decide whether more
// runs are needed.
func Conditions(ex *model.Experiments) bool {
	var base *model.Condition
	for i := range ex.Conditions {
		if ex.Conditions[i].Name == baselineName {
			base = &ex.Conditions[i]
		}
	}
	if base == nil || len(base.Runs) == 0 {
		return false
	}
	bv := values(base)
	base.Median = stats.Median(bv)
	base.Change, base.Interval, base.Class, base.Reason, base.Noise, base.Rounds = 0, [2]float64{}, "", "", 0, 0
	change := func(mb, mc float64) float64 {
		if ex.Measure.HigherIsBetter {
			return mc/mb - 1
		}
		return mb/mc - 1
	}
	// The baseline's own noise, taken off its drift (how far a run lands
	// from where the series was), and its drift, for the report, for
	// compare (which sets a batch against another batch), and as the bar
	// a condition's loss must clear below.
	ex.BaselineNoise = noiseSigmas * stats.DetrendedRelSpread(places(base), bv)
	ex.BaselineDrift = Drift(bv)
	// Every round runs each condition once, so run r of a condition and run
	// r of the baseline ran in the same round, close in time: each
	// condition's change is paired with the baseline round by round (the
	// baseline run moved to the condition run's place along the baseline's
	// own drift), and a machine that drifts over the experiment, or state
	// that builds up from run to run, cancels. The classes were decided
	// once after the planned rounds and again after each round added while
	// a condition was inconclusive: 1 + Extended looks at growing data,
	// which the intervals are corrected for (stats.PairedInTime).
	looks := 1 + ex.Extended
	for i := range ex.Conditions {
		c := &ex.Conditions[i]
		if c == base {
			continue
		}
		if len(c.Runs) == 0 {
			c.Class, c.Reason = Inconclusive, "no run finished"
			continue
		}
		cv := values(c)
		c.Median = stats.Median(cv)
		p := stats.PairedInTime(places(base), bv, places(c), cv, change, looks)
		c.Change, c.Interval, c.Noise, c.Rounds = p.Change, p.Interval, noiseSigmas*p.Spread, p.Rounds
		// The bar a loss must clear is the measure's own noise, the
		// baseline's (off its drift), not the rounds' spread: that also
		// holds how much the condition's own effect varies (io-pressure
		// on a sync loop: -23% [-44%, -14%], its rounds' changes ±26%
		// around it, was left inconclusive by it).
		c.Class, c.Reason = classify(c.Change, c.Interval, ex.BaselineNoise, p.Rounds)
		c.SideEffect = sideEffect(base, c)
		if c.SideEffect != nil {
			c.SideEffect.Summary = sideWords(c)
		}
		if se := c.SideEffect; se != nil && se.Confounded && c.Class == Sensitive {
			c.Class, c.Reason = Inconclusive, fmt.Sprintf("changed %s, interval %s, but %s: the change cannot be told from that", pct(c.Change), intervalWords(c.Interval), se.Summary)
		}
	}
	return true
}

// Side effects. A condition takes one resource away; one that also takes
// another can cost the workload through that one, and its change then
// proves nothing about its own: Redis with appendfsync everysec spent
// 0 ms on storage, yet io-pressure cost it 26%, its cpu-wait up from
// 27 ms to 608 ms a run, the writer taking CPU on a machine of two. So
// each condition's runs are set against the baseline's in the workload's
// own time: the rise in the states of the condition's resource, and in
// the other's. sideResource maps a condition's resource to the other one
// whose states are counted; cold-cache is left out, its reads from the
// device costing CPU of their own.
var sideResource = map[string]string{"cpu": "io", "io": "cpu"}

// sideFloor: a side effect is material when the other resource's rise
// is at least this share of the baseline's busy time (cpu, cpu-wait and
// storage): the smallest loss diagnose calls a bottleneck.
const sideFloor = materialChange

// resourceSec is a run's busy time in a resource's states.
func resourceSec(r model.ExperimentRun, resource string) float64 {
	switch resource {
	case "cpu":
		return r.CPUSec + r.CPUWaitSec
	case "io":
		return r.StorageSec
	}
	return 0
}

var resourceStates = map[string][]string{
	"cpu": {model.CatCPU, model.CatCPUWait},
	"io":  {model.CatStorageRead, model.CatStorageWrite, model.CatStorageSync},
}

// sideEffect is c's effect on the resource it does not take, nil when it
// is not material, c has no such resource, or the runs carry no eBPF
// accounting. It is confounded when the other resource rose at least as
// much as c's own.
func sideEffect(base, c *model.Condition) *model.SideEffect {
	other := sideResource[c.Resource]
	if other == "" {
		return nil
	}
	busy := func(r model.ExperimentRun) float64 { return r.CPUSec + r.CPUWaitSec + r.StorageSec }
	// Medians over the runs with eBPF accounting (some busy time).
	med := func(cd *model.Condition, f func(model.ExperimentRun) float64) (float64, bool) {
		var v []float64
		for _, r := range cd.Runs {
			if busy(r) > 0 {
				v = append(v, f(r))
			}
		}
		if len(v) == 0 {
			return 0, false
		}
		return stats.Median(v), true
	}
	of := func(res string) func(model.ExperimentRun) float64 {
		return func(r model.ExperimentRun) float64 { return resourceSec(r, res) }
	}
	bBusy, okB := med(base, busy)
	if _, okC := med(c, busy); !okB || !okC || bBusy <= 0 {
		return nil
	}
	bOther, _ := med(base, of(other))
	cOther, _ := med(c, of(other))
	bOwn, _ := med(base, of(c.Resource))
	cOwn, _ := med(c, of(c.Resource))
	rise := cOther - bOther
	if rise < sideFloor*bBusy {
		return nil
	}
	se := &model.SideEffect{Resource: other, States: resourceStates[other], BaseSec: bOther, CondSec: cOther, OwnRiseSec: cOwn - bOwn}
	se.Confounded = rise >= se.OwnRiseSec
	var load []float64
	for _, r := range c.Runs {
		if r.LoadCPUSec > 0 {
			load = append(load, r.LoadCPUSec)
		}
	}
	if len(load) > 0 {
		se.LoadCPUSec = stats.Median(load)
	}
	return se
}

// sideWords say what c also took, with the numbers.
func sideWords(c *model.Condition) string {
	se := c.SideEffect
	own := fmt.Sprintf("its %s time did not rise", resourceName[c.Resource])
	if se.OwnRiseSec > 0 {
		own = fmt.Sprintf("its %s time rose %s", resourceName[c.Resource], secs(se.OwnRiseSec))
	}
	w := fmt.Sprintf("it also took %s: the workload's %s time rose %s → %s a run (medians), while %s",
		resourceName[se.Resource], strings.Join(se.States, " + "), secs(se.BaseSec), secs(se.CondSec), own)
	if se.LoadCPUSec > 0 {
		w += fmt.Sprintf("; its load generator used %s of CPU a run", secs(se.LoadCPUSec))
	}
	return w
}

var resourceName = map[string]string{"cpu": "CPU", "io": "storage"}

// secs formats seconds for humans: "1.23s", "767ms", "478ns" (a unit of
// work's cost in scaling.go too).
func secs(s float64) string { return units.FormatNs(s * 1e9) }

func intervalWords(iv [2]float64) string { return fmt.Sprintf("[%s, %s]", pct(iv[0]), pct(iv[1])) }

// places are c's runs' places in the order all runs were made.
func places(c *model.Condition) []int {
	p := make([]int, len(c.Runs))
	for i, r := range c.Runs {
		p[i] = r.Seq
	}
	return p
}

func values(c *model.Condition) []float64 {
	v := make([]float64, len(c.Runs))
	for i, r := range c.Runs {
		v[i] = r.Value
	}
	return v
}

// classify decides a condition's class from its paired change over rounds
// (rounds of it: runs paired with a baseline run). Conditions take a
// resource away, so what counts is a slowdown: sensitive only when the
// whole interval lies below zero, the loss is material and larger than the
// baseline's noise (two robust standard deviations of its runs off its
// drift); insensitive when the loss is small and the interval rules out
// a large one (a run that got faster is insensitive too, and says so);
// otherwise inconclusive, with what would settle it.
func classify(change float64, iv [2]float64, noise float64, rounds int) (class, reason string) {
	switch {
	case rounds < 2:
		return Inconclusive, "fewer than 2 rounds: no interval; use --repeat 3 or more"
	case change <= -materialChange && iv[1] < 0 && -change > noise:
		return Sensitive, fmt.Sprintf("changed %s, interval below zero, beyond the baseline's noise (±%.0f%%)", pct(change), noise*100)
	case change <= -materialChange && -change <= noise:
		return Inconclusive, fmt.Sprintf("changed %s but the baseline alone moves ±%.0f%%: use more --repeat", pct(change), noise*100)
	case change <= -materialChange:
		return Inconclusive, fmt.Sprintf("changed %s but the interval reaches zero: use more --repeat", pct(change))
	case iv[0] <= -insensitiveSpan:
		return Inconclusive, fmt.Sprintf("changed %s but the interval [%s, %s] leaves room for a large loss: use more --repeat", pct(change), pct(iv[0]), pct(iv[1]))
	case change >= materialChange && iv[0] > 0 && change > noise:
		return Insensitive, fmt.Sprintf("ran faster (%s) with less of it: the resource is not what limits the workload, and sharing it may cost more than it gives", pct(change))
	default:
		return Insensitive, fmt.Sprintf("changed %s, under the %.0f%% loss that makes a bottleneck", pct(change), materialChange*100)
	}
}

// sensitivity sums the conditions up per resource: sensitive when any of its
// conditions is (the largest such change decides), otherwise inconclusive
// when any is, otherwise insensitive.
func sensitivity(conds []model.Condition) map[string]model.Sensitivity {
	rank := map[string]int{Sensitive: 3, Inconclusive: 2, Insensitive: 1}
	out := map[string]model.Sensitivity{}
	for _, c := range conds {
		if c.Resource == "" || c.Class == "" || len(c.Runs) == 0 {
			continue
		}
		s := model.Sensitivity{Class: c.Class, Condition: c.Name, Change: c.Change, Interval: c.Interval}
		old, ok := out[c.Resource]
		if !ok || rank[s.Class] > rank[old.Class] || (rank[s.Class] == rank[old.Class] && math.Abs(s.Change) > math.Abs(old.Change)) {
			out[c.Resource] = s
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// resourceOf maps an accounting category to the resource an experiment tests.
var resourceOf = map[string]string{
	model.CatCPU:          "cpu",
	model.CatCPUWait:      "cpu",
	model.CatStorageRead:  "io",
	model.CatStorageWrite: "io",
	model.CatStorageSync:  "io",
}

// conclude writes the verdict's conclusion: what the experiments prove, set
// against what the accounting said.
func conclude(run *model.Run) {
	v := run.Verdict
	sens := v.Sensitivity
	var moved []string
	for r, s := range sens {
		if s.Class == Sensitive {
			moved = append(moved, r)
		}
	}
	// The resource whose loss cost the most is the bottleneck.
	sort.Slice(moved, func(i, j int) bool { return sens[moved[i]].Change < sens[moved[j]].Change })
	acct := resourceOf[v.Primary]
	// Unless the accounting's resource moved too, within the material
	// change of the first: the experiments cannot tell the two apart, and
	// the accounting decides. A quiet clean-clone run of the SQLite WAL
	// benchmark read cpu-contention -51% and io-pressure -53% (cpu 944 ms,
	// storage 257 ms of its busy threads' time) and called it
	// storage-bound, "the accounting's largest share was cpu, which the
	// experiments did not confirm", beside cpu's own -51%.
	tie := ""
	if i := slices.Index(moved, acct); i > 0 && sens[acct].Change-sens[moved[0]].Change < materialChange {
		tie = moved[0]
		moved = append([]string{acct}, slices.Delete(moved, i, i+1)...)
	}
	evidence := func(r string) string {
		s := sens[r]
		return fmt.Sprintf("%s changed the result %s [%s, %s]", s.Condition, pct(s.Change), pct(s.Interval[0]), pct(s.Interval[1]))
	}
	v.Bottleneck = ""
	switch {
	case len(moved) == 0:
		var tested []string
		for r := range sens {
			tested = append(tested, r)
		}
		sort.Strings(tested)
		v.Conclusion = fmt.Sprintf("no experiment proved a bottleneck (tested: %s)", strings.Join(tested, ", "))
		// A loss that was large but not conclusive is named with its
		// numbers: "nothing moved" would hide it.
		for _, r := range tested {
			if s := sens[r]; s.Class == Inconclusive && s.Change <= -materialChange {
				v.Conclusion += fmt.Sprintf("; %s, not conclusively", evidence(r))
			}
		}
		if hasClass(sens, Inconclusive) {
			v.Conclusion += "; some were inconclusive: rerun with more --repeat"
		}
		if acct != "" {
			v.Conclusion += fmt.Sprintf("; the accounting's %s is not confirmed", v.Primary)
		}
	default:
		v.Bottleneck = moved[0]
		name := bottleneckName[moved[0]]
		switch {
		case acct == moved[0] || (acct == "io" && moved[0] == "cache" && v.Primary == model.CatStorageRead):
			v.Conclusion = fmt.Sprintf("%s, confirmed: %s, and the accounting agrees (%s)", name, evidence(moved[0]), v.Primary)
		case acct == "io" && moved[0] == "cpu" && sens["io"].Class == Insensitive && v.Split[model.StateCPU] >= materialShare:
			// The AndroBench field report: fdatasync looked long, fewer
			// cores cut the score 36-52% and IO pressure 7%. The calls
			// the accounting named ran on a CPU for much of their time.
			whose := "the busy threads'"
			if v.Basis == "critical path" {
				whose = "the critical path's"
			}
			inside := 0.0
			for _, s := range v.Split {
				inside += s
			}
			v.Conclusion = fmt.Sprintf("%s: the CPU limits it, inside the %s the accounting named: %.0f%% of %s time was %s, of the %.0f%% inside them; %s, while %s",
				name, shortCalls[v.Activity], v.Split[model.StateCPU]*100, whose, callWords[v.Activity].cpu, inside*100, evidence(moved[0]), evidence("io"))
		case acct == "io" && sens["io"].Class == Insensitive:
			v.Conclusion = fmt.Sprintf("%s; the %s time is real but not on the critical path: %s, while %s", name, v.Primary, evidence(moved[0]), evidence("io"))
		case acct == "cpu" && sens["cpu"].Class == Insensitive:
			v.Conclusion = fmt.Sprintf("%s; the CPU time is real but not what limits it: %s, while %s", name, evidence(moved[0]), evidence("cpu"))
		case acct != "" && slices.Contains(moved, acct):
			v.Conclusion = fmt.Sprintf("%s: %s; the accounting's largest share was %s, which the experiments found to matter less", name, evidence(moved[0]), v.Primary)
		case acct != "":
			v.Conclusion = fmt.Sprintf("%s: %s; the accounting's largest share was %s, which the experiments did not confirm", name, evidence(moved[0]), v.Primary)
		default:
			v.Conclusion = fmt.Sprintf("%s: %s", name, evidence(moved[0]))
		}
		for _, r := range moved[1:] {
			if r == tie {
				v.Conclusion += fmt.Sprintf("; %s matters as much (within %.0f points, which the accounting decides): %s", r, materialChange*100, evidence(r))
				continue
			}
			v.Conclusion += fmt.Sprintf("; %s matters too: %s", r, evidence(r))
		}
	}
	// A loss not counted for its resource because the condition also
	// took another (sideEffect) is named, with its numbers.
	for i := range run.Experiments.Conditions {
		c := &run.Experiments.Conditions[i]
		if se := c.SideEffect; se != nil && se.Confounded && c.Change <= -materialChange {
			v.Conclusion += fmt.Sprintf("; %s's %s is not counted for %s: %s", c.Name, pct(c.Change), resourceName[c.Resource], se.Summary)
		}
	}
}

// shortCalls name the IO calls of an activity in a few words.
var shortCalls = map[string]string{"sync": "sync calls", "read": "read calls", "write": "write calls", "aio": "asynchronous IO calls"}

var bottleneckName = map[string]string{
	"cpu":    "CPU-bound",
	"io":     "storage-bound",
	"cache":  "page-cache-bound (it depends on data being cached)",
	"memory": "memory-bound",
}

func hasClass(sens map[string]model.Sensitivity, class string) bool {
	for _, s := range sens {
		if s.Class == class {
			return true
		}
	}
	return false
}

// pct formats a relative change as a signed percentage.
func pct(x float64) string { return units.FormatChange(x) }
