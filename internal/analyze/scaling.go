package analyze

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"gonum.org/v1/gonum/optimize"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/stats"
)

// Scaling classes (model.Scaling.Class).
const (
	ScalesLinearly = "linear"
	Contention     = "contention"
	Coherency      = "coherency"
	Sublinear      = "sublinear"
	// Unsettled: the medians say a unit's CPU time grew as coherency
	// does, but the runs of one level spread as widely (see scaleClass).
	Unsettled = "unsettled"
)

// Scaling thresholds, between the first level and the highest level
// within the CPU count (above it the threads take turns, and a unit's
// wait for a CPU grows by design):
//   - linearEfficiency: throughput at least 85% of linear is linear;
//   - costGrowth: a unit's CPU time grown by half or more is the CPU's
//     doing (coherency: cache lines moving between cores, or spinning),
//     unless its waits grew more. Two threads that share nothing cost
//     more CPU per unit than one too, where they share a core's
//     resources or the host's (a VM's vCPUs on one core's hyperthreads):
//     0.79-1.21x here for counters on cache lines of their own, with
//     the machine's speed taken out, against 3.4x for counters on one
//     line;
//   - a unit's waits (lock and cpu-wait) that grew by more than its CPU
//     time did are contention.
const (
	linearEfficiency = 0.85
	costGrowth       = 1.5
)

// scaling fills --scale's points (medians, intervals, cost per unit), the
// USL fit, the class and the summary from the levels' runs.
func scaling(ex *model.Experiments) {
	sc := ex.Scaling
	if sc == nil || len(sc.Points) == 0 {
		return
	}
	for i := range sc.Points {
		scalePoint(&sc.Points[i])
	}
	first := sc.Points[0]
	for i := range sc.Points {
		p := &sc.Points[i]
		if first.Throughput > 0 && p.N > 0 && first.N > 0 {
			p.Efficiency = (p.Throughput / first.Throughput) / (float64(p.N) / float64(first.N))
		}
	}
	peakAndLoss(sc, ex.Measure.HigherIsBetter)
	sc.Fit, sc.FitNote = fitUSL(sc.Points)
	sc.Class = scaleClass(sc)
	sc.Summary = scaleSummary(sc, ex.Measure)
}

// scalePoint fills one level's medians and intervals from its runs.
func scalePoint(p *model.ScalePoint) {
	var vals []float64
	cats := map[string]bool{}
	for _, r := range p.Runs {
		vals = append(vals, r.Value)
		for c := range r.Time {
			cats[c] = true
		}
	}
	if len(vals) == 0 {
		return
	}
	p.Throughput, p.ThroughputInterval = stats.Median(vals), stats.MedianInterval(vals)
	cpu := perUnitValues(p.Runs, 0, model.CatCPU)
	if len(cpu) == 0 {
		return
	}
	p.CPUSecPerUnit, p.CPUSecPerUnitInterval = stats.Median(cpu), stats.MedianInterval(cpu)
	p.CPUWaitOutsidePerUnit = stats.Median(perUnitOf(p.Runs, 0, func(r model.ExperimentRun) float64 { return r.CPUWaitOutsideSec }))
	p.TimePerUnit = map[string]float64{}
	for c := range cats {
		// A run without the category had none of it (a 0 among them).
		if m := stats.Median(perUnitValues(p.Runs, 0, c)); m > 0 {
			p.TimePerUnit[c] = m
		}
	}
}

// peakAndLoss sets the level with the best median measure, and
// LosesBeyond when a higher level's interval lies wholly below the peak's
// (more concurrency lost throughput, beyond the runs' spread).
func peakAndLoss(sc *model.Scaling, higher bool) {
	better := func(a, b float64) bool { return higher && a > b || !higher && a < b }
	best := 0
	for i, p := range sc.Points {
		if better(p.Throughput, sc.Points[best].Throughput) {
			best = i
		}
	}
	sc.Peak = sc.Points[best].N
	sc.LosesBeyond = 0
	pk := sc.Points[best]
	for _, p := range sc.Points[best+1:] {
		lost := higher && p.ThroughputInterval[1] < pk.ThroughputInterval[0] || !higher && p.ThroughputInterval[0] > pk.ThroughputInterval[1]
		if lost {
			sc.LosesBeyond = pk.N
			return
		}
	}
}

// busyPerUnit is a run's busy thread time per unit of work
// (model.BusyTime); 0 when the run has no units or no time by state.
func busyPerUnit(r model.ExperimentRun) float64 {
	if r.Units <= 0 || r.Time == nil {
		return 0
	}
	return model.BusyTime(r.Time) / r.Units
}

// minKappa: a coherency below it puts the law's peak past 100 threads
// (sqrt(1/1e-4)), beyond what a scaling run measures: no peak is named.
const minKappa = 1e-4

// uslDraws is how many bootstrap resamples give the fit's intervals.
const uslDraws = 400

// fitUSL fits the USL to the levels' busy thread time per unit (one
// point per run), with bootstrap intervals over each level's runs; nil
// and why when it cannot.
func fitUSL(points []model.ScalePoint) (*model.USLFit, string) {
	type obs struct{ n, c float64 }
	levels := make([][]obs, 0, len(points))
	distinct := 0
	for _, p := range points {
		var os []obs
		for _, r := range p.Runs {
			if c := busyPerUnit(r); c > 0 {
				os = append(os, obs{float64(p.N), c})
			}
		}
		if len(os) > 0 {
			levels = append(levels, os)
			distinct++
		}
	}
	if distinct < 3 {
		return nil, fmt.Sprintf("the fit needs 3 levels with a cost per unit (a throughput measure and the eBPF time accounting); %d had one", distinct)
	}
	fit := func(ls [][]obs) (lambda, sigma, kappa float64, ok bool) {
		var ns, cs []float64
		for _, os := range ls {
			for _, o := range os {
				ns, cs = append(ns, o.n), append(cs, o.c)
			}
		}
		return uslFit(ns, cs)
	}
	lambda, sigma, kappa, ok := fit(levels)
	if !ok {
		return nil, "the fit did not converge"
	}
	f := &model.USLFit{Lambda: lambda, Sigma: sigma, Kappa: kappa}
	rng := rand.New(rand.NewPCG(3, 4))
	var ss, ks []float64
	re := make([][]obs, len(levels))
	for range uslDraws {
		for i, os := range levels {
			re[i] = re[i][:0]
			for range os {
				re[i] = append(re[i], os[rng.IntN(len(os))])
			}
		}
		if _, s, k, ok := fit(re); ok {
			ss, ks = append(ss, s), append(ks, k)
		}
	}
	if len(ss) > 0 {
		f.SigmaInterval, f.KappaInterval = percentiles(ss), percentiles(ks)
	}
	// A peak only where coherency is told from none: its interval clear
	// of minKappa (a kappa of 1e-12 would put the peak past any level).
	if f.KappaInterval[0] >= minKappa && sigma < 1 {
		f.PeakN = math.Sqrt((1 - sigma) / kappa)
	}
	return f, ""
}

// percentiles is the 2.5th and 97.5th percentile of xs.
func percentiles(xs []float64) [2]float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	at := func(q float64) float64 { return s[min(int(q*float64(len(s))), len(s)-1)] }
	return [2]float64{at(0.025), at(0.975)}
}

// uslFit finds lambda, sigma, kappa >= 0 minimising the relative squared
// error of cost c_i against model.USLCost(n_i)/lambda. For given sigma and kappa
// the best 1/lambda has a closed form (a weighted mean), so the search is
// over the two coefficients only, kept non-negative as squares.
func uslFit(ns, cs []float64) (lambda, sigma, kappa float64, ok bool) {
	inv := func(s, k float64) (float64, float64) {
		// minimise sum ((g_i a - c_i)/c_i)^2 over a = 1/lambda: a =
		// sum(g/c) / sum((g/c)^2); the error at it.
		var num, den float64
		for i := range ns {
			r := model.USLCost(ns[i], s, k) / cs[i]
			num += r
			den += r * r
		}
		a := num / den
		var e float64
		for i := range ns {
			d := model.USLCost(ns[i], s, k)*a/cs[i] - 1
			e += d * d
		}
		return a, e
	}
	problem := optimize.Problem{Func: func(x []float64) float64 {
		_, e := inv(x[0]*x[0], x[1]*x[1])
		return e
	}}
	best := math.Inf(1)
	var bx []float64
	// A few starts: the error surface of three levels is flat along
	// sigma + kappa trade-offs.
	for _, start := range [][]float64{{0.1, 0.01}, {0.5, 0.1}, {0.01, 0.3}} {
		res, err := optimize.Minimize(problem, start, &optimize.Settings{FuncEvaluations: 4000}, &optimize.NelderMead{})
		if err != nil && res == nil {
			continue
		}
		if res.F < best {
			best, bx = res.F, res.X
		}
	}
	if bx == nil || math.IsNaN(best) {
		return 0, 0, 0, false
	}
	sigma, kappa = bx[0]*bx[0], bx[1]*bx[1]
	a, _ := inv(sigma, kappa)
	if a <= 0 || math.IsNaN(a) {
		return 0, 0, 0, false
	}
	return 1 / a, sigma, kappa, true
}

// scaleClass tells how the workload scaled from the first level to the
// highest within the CPU count, by which of a unit's costs grew; "" when
// no second level lies within it. The costs are each run's, with the
// machine's speed just before it taken out (its canary against the
// median canary of all the runs): on this shared machine one thread's CPU
// time per unit moved 500-680 ns from run to run of the same level, and
// the throughput's share of linear 87-123% where the cost did not move.
func scaleClass(sc *model.Scaling) string {
	first := sc.Points[0]
	var top *model.ScalePoint
	for i := range sc.Points[1:] {
		if p := &sc.Points[i+1]; !p.OverCPUs {
			top = p
		}
	}
	if top == nil || first.Throughput <= 0 {
		return ""
	}
	ref := medianCanary(sc.Points)
	cpuF, cpuT := unitCost(first, ref, model.CatCPU), unitCost(*top, ref, model.CatCPU)
	if cpuF <= 0 || cpuT <= 0 {
		if top.Efficiency >= linearEfficiency {
			return ScalesLinearly
		}
		return Sublinear
	}
	waitGrew := ownWaitCost(*top, ref) - ownWaitCost(first, ref)
	lockGrew := unitCost(*top, ref, model.CatLock) - unitCost(first, ref, model.CatLock)
	otherF := unitCost(first, ref, model.CatStorageRead, model.CatStorageWrite, model.CatStorageSync, model.CatOther)
	otherT := unitCost(*top, ref, model.CatStorageRead, model.CatStorageWrite, model.CatStorageSync, model.CatOther)
	switch {
	// Lock waits that grew are contention whatever the CPU did: a convoy
	// also costs CPU per unit (futex calls, switches, wake-ups), as much
	// as its waits grew in one run here and more in the next.
	case lockGrew > waitFloor*cpuF:
		return Contention
	case waitGrew > waitFloor*cpuF && waitGrew >= cpuT-cpuF:
		return Contention
	case cpuT >= costGrowth*cpuF && !overlap(first, *top, ref):
		return Coherency
	case cpuT >= costGrowth*cpuF:
		return Unsettled
	case top.Efficiency < linearEfficiency && otherT-otherF > (costGrowth-1)*(cpuF+otherF):
		return Sublinear
	}
	return ScalesLinearly
}

// overlap says whether some run of first cost a unit as much CPU time
// as some run of top (each taken to the machine's speed ref): the
// machine's speed moved as much within a level as the levels differ, and
// the medians' growth may be where the slow runs fell. In CI a parallel
// run measured 1.49M, 1.50M and 699k ops/s at one thread and 1.36M,
// 1.40M and 2.26M at two, with no other process running (contention
// this guest cannot see: another VM on the host's cores): the medians'
// CPU time a unit grew 2.1x, which read as coherency, while the USL fit
// of the same runs found none (kappa 0 [0, 0.024]). False sharing moves
// every run: 3.4x here for counters on one line.
func overlap(first, top model.ScalePoint, ref float64) bool {
	f, t := perUnitValues(first.Runs, ref, model.CatCPU), perUnitValues(top.Runs, ref, model.CatCPU)
	if len(f) == 0 || len(t) == 0 {
		return false
	}
	return slices.Min(t) <= slices.Max(f)
}

// waitFloor: a unit's waits for locks and CPUs must grow by a tenth of its
// CPU time at least to be contention (a few ns of cpu-wait are noise).
const waitFloor = 0.1

// medianCanary is the median canary of the levels' runs (0: none timed).
func medianCanary(points []model.ScalePoint) float64 {
	var cs []float64
	for _, p := range points {
		for _, r := range p.Runs {
			if r.CanaryMs > 0 {
				cs = append(cs, r.CanaryMs)
			}
		}
	}
	if len(cs) == 0 {
		return 0
	}
	return stats.Median(cs)
}

// ownWait is a run's waits on the workload itself: its lock waits and its
// cpu-wait but for the CPUs others held (ExperimentRun.CPUWaitOutsideSec).
// On a loaded machine the rest grows with the level as the threads meet
// the load, which is not contention among them.
func ownWait(r model.ExperimentRun) float64 {
	return r.Time[model.CatLock] + max(r.Time[model.CatCPUWait]-r.CPUWaitOutsideSec, 0)
}

// ownWaitCost is unitCost of ownWait.
func ownWaitCost(p model.ScalePoint, ref float64) float64 {
	xs := perUnitOf(p.Runs, ref, ownWait)
	if len(xs) == 0 {
		return 0
	}
	return stats.Median(xs)
}

// ownWaitPerUnit is a level's own waits per unit as TimePerUnit has them
// (medians, not taken to the machine's speed).
func ownWaitPerUnit(p model.ScalePoint) float64 {
	return p.TimePerUnit[model.CatLock] + max(p.TimePerUnit[model.CatCPUWait]-p.CPUWaitOutsidePerUnit, 0)
}

// unitCost is the median over p's runs of their time in cats per unit of
// work, each run's taken to the machine's speed ref (its canary against
// ref: a run after a slower canary did the same work in more time); 0
// without units.
func unitCost(p model.ScalePoint, ref float64, cats ...string) float64 {
	xs := perUnitValues(p.Runs, ref, cats...)
	if len(xs) == 0 {
		return 0
	}
	return stats.Median(xs)
}

// perUnitValues is, for each of runs with units of work and time by
// state, its time in cats per unit, taken to the machine's speed ref
// when ref > 0 (see unitCost).
func perUnitValues(runs []model.ExperimentRun, ref float64, cats ...string) []float64 {
	return perUnitOf(runs, ref, func(r model.ExperimentRun) float64 {
		var s float64
		for _, c := range cats {
			s += r.Time[c]
		}
		return s
	})
}

// perUnitOf is, for each of runs with units of work and time by state,
// of(run) per unit, taken to the machine's speed ref as perUnitValues.
func perUnitOf(runs []model.ExperimentRun, ref float64, of func(model.ExperimentRun) float64) []float64 {
	var xs []float64
	for _, r := range runs {
		if r.Units <= 0 || r.Time == nil {
			continue
		}
		s := of(r)
		f := 1.0
		if ref > 0 && r.CanaryMs > 0 {
			f = r.CanaryMs / ref
		}
		xs = append(xs, s/r.Units/f)
	}
	return xs
}

// scaleSummary says in plain words how the workload scaled.
func scaleSummary(sc *model.Scaling, m model.Measure) string {
	first := sc.Points[0]
	var top model.ScalePoint
	for _, p := range sc.Points {
		if !p.OverCPUs {
			top = p
		}
	}
	var b strings.Builder
	at := func(p model.ScalePoint) string {
		return fmt.Sprintf("%s=%d", sc.Param, p.N)
	}
	switch sc.Class {
	case ScalesLinearly:
		fmt.Fprintf(&b, "scales linearly up to the %d CPUs: a unit of work cost as much CPU time at %s as at %s (%s against %s) and waited no longer; its throughput measured %.0f%% of linear (%s against %s at %s)",
			sc.CPUs, at(top), at(first), secs(top.CPUSecPerUnit), secs(first.CPUSecPerUnit),
			100*top.Efficiency, fmtMeasure(top.Throughput, m), fmtMeasure(first.Throughput, m), at(first))
		if top.Efficiency < linearEfficiency {
			b.WriteString(", the machine's speed moving between runs")
		}
		if o, of := top.CPUWaitOutsidePerUnit, first.CPUWaitOutsidePerUnit; o > of+waitFloor*first.CPUSecPerUnit {
			fmt.Fprintf(&b, "; it waited longer only for CPUs other processes held (%s a unit against %s at %s): the machine's load, not contention among its threads",
				secs(o), secs(of), at(first))
		}
	case Contention:
		fmt.Fprintf(&b, "limited by contention: at %s a unit of work waited %s for locks and CPUs its own threads held against %s at %s, while its CPU time went from %s to %s; throughput %.0f%% of linear",
			at(top), secs(ownWaitPerUnit(top)), secs(ownWaitPerUnit(first)), at(first),
			secs(first.CPUSecPerUnit), secs(top.CPUSecPerUnit), 100*top.Efficiency)
		if o := top.CPUWaitOutsidePerUnit; o > 0 {
			fmt.Fprintf(&b, " (and %s waiting for CPUs other processes held, which is the machine's load, not contention)", secs(o))
		}
	case Coherency:
		fmt.Fprintf(&b, "limited by coherency: a unit of work cost %.1fx the CPU time at %s as at %s (%s against %s) while its lock waits stayed about where they were (%s against %s): threads writing shared cache lines (false sharing) or spinning; a PMU-based tool (perf c2c) can confirm it where the hardware counts cache events; throughput %.0f%% of linear",
			top.CPUSecPerUnit/first.CPUSecPerUnit, at(top), at(first), secs(top.CPUSecPerUnit), secs(first.CPUSecPerUnit),
			secs(top.TimePerUnit[model.CatLock]), secs(first.TimePerUnit[model.CatLock]), 100*top.Efficiency)
	case Unsettled:
		ref := medianCanary(sc.Points)
		f, t := perUnitValues(first.Runs, ref, model.CatCPU), perUnitValues(top.Runs, ref, model.CatCPU)
		fmt.Fprintf(&b, "not told: by the medians a unit of work cost %.1fx the CPU time at %s as at %s (%s against %s), which coherency would, but the runs of a level spread as widely (%s: %s to %s; %s: %s to %s, with the machine's speed taken out): the machine's speed moved between runs; run again with more --repeat, on a quieter machine; throughput %.0f%% of linear",
			top.CPUSecPerUnit/first.CPUSecPerUnit, at(top), at(first), secs(top.CPUSecPerUnit), secs(first.CPUSecPerUnit),
			at(first), secs(slices.Min(f)), secs(slices.Max(f)), at(top), secs(slices.Min(t)), secs(slices.Max(t)), 100*top.Efficiency)
	case Sublinear:
		fmt.Fprintf(&b, "scales less than linearly: %s gave %.0f%% of linear; a unit's storage and other waits grew, its CPU time and lock waits did not", at(top), 100*top.Efficiency)
	default:
		fmt.Fprintf(&b, "no level above the first within the %d CPUs: how it scales on them is not told", sc.CPUs)
	}
	if sc.LosesBeyond > 0 {
		fmt.Fprintf(&b, "; beyond %s=%d more concurrency lost throughput", sc.Param, sc.LosesBeyond)
	}
	var over []string
	for _, p := range sc.Points {
		if p.OverCPUs {
			over = append(over, fmt.Sprint(p.N))
		}
	}
	if len(over) > 0 {
		fmt.Fprintf(&b, "; %s=%s: more threads than the %d CPUs, which they share", sc.Param, strings.Join(over, ","), sc.CPUs)
	}
	if f := sc.Fit; f != nil {
		fmt.Fprintf(&b, "; USL fit: contention sigma %.3f [%.3f, %.3f], coherency kappa %.4f [%.4f, %.4f]", f.Sigma, f.SigmaInterval[0], f.SigmaInterval[1], f.Kappa, f.KappaInterval[0], f.KappaInterval[1])
		if f.PeakN > 0 {
			fmt.Fprintf(&b, ", peak at N=%.1f", f.PeakN)
		}
	}
	return b.String()
}

// fmtMeasure writes a measure's value with its unit.
func fmtMeasure(v float64, m model.Measure) string {
	return strings.TrimSpace(fmt.Sprintf("%.4g %s", v, cmp.Or(m.Unit, "")))
}
