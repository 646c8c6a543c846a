package compare

import (
	"fmt"
	"math"
	"strings"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/stats"
	"github.com/perfsleuth/perfsleuth/internal/units"
)

// Headline significance.
const (
	// Significant: both sides have repeats, the bootstrap interval of the
	// change excludes zero and the change exceeds both sides' noise.
	Significant = "significant"
	// NotSignificant: both sides have repeats and the change is not beyond
	// them.
	NotSignificant = "not_significant"
	// Unknown: a side is a single run, whose noise is unknown.
	Unknown = "unknown"
	// NotComparableMeasure: the runs measured different things (or nothing).
	NotComparableMeasure = "not_comparable"
)

// Headline is each run's measure, the change and whether it is beyond the
// noise of the repeats.
type Headline struct {
	// Measure is what both runs measured; MeasureB is B's when it differs
	// (there is then no change).
	Measure  model.Measure  `json:"measure"`
	MeasureB *model.Measure `json:"measure_b,omitempty"`
	A        Value          `json:"a"`
	B        Value          `json:"b"`
	// Change is B's performance against A's, from the medians (paired
	// runs: the median of the rounds' changes): negative when B is slower.
	// For a time measure it is A/B - 1, so that -0.5 means half the speed
	// either way (as diagnose's conditions).
	Change float64 `json:"change"`
	// Interval is the 95% bootstrap confidence interval of Change, when both
	// sides have repeats.
	Interval *[2]float64 `json:"interval,omitempty"`
	// Paired is true when A's and B's runs were made interleaved (compare
	// --run A --run B): the interval then resamples rounds, each pair of
	// runs made back to back, and drift between batches cannot be in it.
	Paired bool `json:"paired,omitempty"`
	// RoundNoise is, for paired runs, two robust standard deviations of
	// the rounds' own changes: how much one round's change moves.
	RoundNoise float64 `json:"round_noise,omitempty"`
	// BatchDrift is, for two batches of repeats made one after the other
	// (not paired), how far the machine drifts between them at the rate
	// the faster-drifting batch drifted within itself: its Theil-Sen slope
	// per run times the runs between the two batches' middles. The change
	// must exceed twice it (batchDriftMargin) to be significant.
	BatchDrift   float64 `json:"batch_drift,omitempty"`
	Significance string  `json:"significance"`
	Reason       string  `json:"reason"`
	// Words says the change in words: "is 64x slower", "is 3% faster".
	Words string `json:"words"`
	// Advice says what to run to settle what is unknown.
	Advice []string `json:"advice,omitempty"`
	// Machine is, for paired runs that timed the canary, how the machine's
	// own speed moved from A's runs to B's (a fixed CPU loop timed just
	// before each run, model.ExperimentRun.CanaryMs), as Change moves:
	// negative when the machine was slower during B's runs.
	Machine *MachineSpeed `json:"machine,omitempty"`
}

// MachineSpeed is the canary's paired change between the two sides.
type MachineSpeed struct {
	Change   float64    `json:"change"`
	Interval [2]float64 `json:"interval"`
}

// Value is one side's measure.
type Value struct {
	Median float64   `json:"median"`
	Runs   []float64 `json:"runs"`
	// Noise is how far one of its runs lands from their median, relative
	// to it: two robust standard deviations (1.4826 × MAD), diagnose's
	// baseline_noise; nil when it is a single run.
	Noise *float64 `json:"noise"`
	// From says where the runs come from.
	From string `json:"from"`
	// Drift is, for repeats, how far the runs moved over their batch in
	// the order they ran (Sen's slope times the span, over their median)
	// with the Mann-Kendall p-value of the trend; nil for a single run.
	Drift *model.Drift `json:"drift,omitempty"`
	// perRun is Sen's slope over the median: the drift from one run to
	// the next.
	perRun float64
	// seqs are the runs' places in the order all runs were made, when the
	// record has them.
	seqs []int
	// pair is the interleaved comparison the runs belong to, if any.
	pair *model.Pair
	// canary is each run's CanaryMs, when every run has one.
	canary []float64
}

// measureOf is what a record's number is: diagnose's own measure, or for a
// single run the one diagnose would take (experiment.measureOf): a built-in
// benchmark's throughput over its measured phase, a command's wall time.
func measureOf(r *model.Run) model.Measure {
	if ex := r.Experiments; ex != nil {
		return ex.Measure
	}
	switch r.Target.Kind {
	case "fileio":
		rw := "read/write"
		if r.Target.FileIO != nil {
			rw = r.Target.FileIO.RW
		}
		return model.Measure{Name: rw + " ops/s", Unit: "ops/s", Source: "throughput", HigherIsBetter: true}
	case "sqlite":
		return model.Measure{Name: "transactions/s", Unit: "tx/s", Source: "throughput", HigherIsBetter: true}
	case "command":
		if res := r.Result; res != nil && res.Command != nil {
			if p, ok := res.Command.Reported.PrimaryMetric(); ok {
				return p.Measure()
			}
		}
		return model.Measure{Name: "wall time", Unit: "s", Source: "wall_time"}
	}
	// An observed process (-p PID) ran before and after the window: the
	// window's length is not its performance.
	return model.Measure{}
}

func sameMeasure(a, b model.Measure) bool {
	if a.Source == "" || b.Source == "" || a.Source != b.Source || a.Unit != b.Unit || a.HigherIsBetter != b.HigherIsBetter {
		return false
	}
	return (a.Source != "metric" && a.Source != "reported") || a.Name == b.Name
}

// valueOf is a record's measure: the baseline runs of a diagnose record,
// otherwise its one run's measure as diagnose computes it.
func valueOf(r *model.Run) (Value, bool) {
	if ex := r.Experiments; ex != nil {
		for _, c := range ex.Conditions {
			if c.Name != "baseline" || len(c.Runs) == 0 {
				continue
			}
			v := Value{From: fmt.Sprintf("%d diagnose baseline runs", len(c.Runs))}
			for _, run := range c.Runs {
				v.Runs, v.seqs = append(v.Runs, run.Value), append(v.seqs, run.Seq)
				v.canary = append(v.canary, run.CanaryMs)
			}
			if !positive(v.canary) {
				v.canary = nil
			}
			v.Median = stats.Median(v.Runs)
			v.pair = ex.Pair
			if len(v.Runs) >= 2 {
				// From the runs, not the record's baseline_drift:
				// that is set only when the trend passes a p-value,
				// which five runs with one out of order cannot.
				tr := stats.TrendOf(v.Runs)
				v.Drift, v.perRun = &model.Drift{Change: tr.Change, P: tr.P}, tr.PerRun
			}
			if p := ex.Pair; p != nil {
				other := map[string]string{"A": "B", "B": "A"}[p.Side]
				v.From = fmt.Sprintf("%d runs interleaved with %s's", len(c.Runs), other)
			}
			if len(v.Runs) >= 2 {
				noise := ex.BaselineNoise
				v.Noise = &noise
			} else {
				v.From = "1 diagnose baseline run"
			}
			return v, true
		}
	}
	if res := r.Result; res != nil && res.Command != nil {
		if p, ok := res.Command.Reported.PrimaryMetric(); ok && r.Target.Kind == "command" {
			by := res.Command.Reported.Tool + " reported it"
			if res.Command.Reported.Tool == "metric" {
				by = "--metric read it"
			}
			return Value{Median: p.Value, Runs: []float64{p.Value}, From: "1 " + verb(r) + " run, as " + by}, true
		}
	}
	w, ok := workOf(r)
	if !ok || measureOf(r).Source == "" {
		return Value{}, false
	}
	x := w.sec
	if w.unit != "run" {
		x = w.units / w.sec
	}
	return Value{Median: x, Runs: []float64{x}, From: "1 " + verb(r) + " run"}, true
}

func headline(a, b *model.Run) Headline {
	ma, mb := measureOf(a), measureOf(b)
	h := Headline{Measure: ma}
	va, okA := valueOf(a)
	vb, okB := valueOf(b)
	h.A, h.B = va, vb
	switch {
	case !okA || !okB:
		h.Significance = NotComparableMeasure
		h.Reason = "a record has no measure: " + missingMeasure(a, okA, b, okB)
		return h
	case !sameMeasure(ma, mb) || a.Target.Kind != b.Target.Kind:
		h.Significance = NotComparableMeasure
		h.MeasureB = &mb
		h.Reason = fmt.Sprintf("A measured %s, B %s", measureWords(ma), measureWords(mb))
		return h
	}
	if !positive(va.Runs) || !positive(vb.Runs) {
		// A rate of 0 (or a time of 0) has no relative change.
		h.Significance = NotComparableMeasure
		h.Reason = "a run measured 0: there is no relative change to compute"
		return h
	}
	change := func(ma, mb float64) float64 {
		if h.Measure.HigherIsBetter {
			return mb/ma - 1
		}
		return ma/mb - 1
	}
	h.Change = change(va.Median, vb.Median)
	h.Words = changeWords(h.Change)
	if va.Noise == nil || vb.Noise == nil {
		h.Significance = Unknown
		var single []string
		for _, s := range []struct {
			name string
			v    Value
			r    *model.Run
		}{{"A", va, a}, {"B", vb, b}} {
			if s.v.Noise == nil {
				single = append(single, s.name)
				h.Advice = append(h.Advice, adviceFor(s.name, s.r))
			}
		}
		h.Reason = fmt.Sprintf("%s %s a single run: how much a run moves by itself is unknown, so no change can be called beyond the noise", strings.Join(single, " and "), pluralIs(len(single)))
		return h
	}
	if pa, pb := va.pair, vb.pair; pa != nil && pb != nil && pa.ID == pb.ID && pa.Side != pb.Side {
		// Each round's two runs ran back to back: what moves the rounds
		// moves both, and the noise that matters is that of the rounds'
		// own changes. Each B run is set against A as it was then
		// (between the A runs around it), which takes out the drift of
		// the run between them too.
		h.Paired = true
		p := stats.PairedInTime(va.seqs, va.Runs, vb.seqs, vb.Runs, change, 1)
		h.Change, h.Words = p.Change, changeWords(p.Change)
		h.Interval = &p.Interval
		h.RoundNoise = noiseSigmas * p.Spread
		h.Significance, h.Reason = pairedSignificance(h.Change, *h.Interval, h.RoundNoise)
		if len(va.canary) == len(va.Runs) && len(vb.canary) == len(vb.Runs) {
			// The canary is a time: slower is longer, as for a time measure.
			m := stats.PairedInTime(va.seqs, va.canary, vb.seqs, vb.canary, func(a, b float64) float64 { return a/b - 1 }, 1)
			h.Machine = &MachineSpeed{Change: m.Change, Interval: m.Interval}
			if h.Significance == Significant && machineMoved(h.Change, *h.Machine) {
				h.Significance = NotSignificant
				h.Reason = fmt.Sprintf("changed %s, interval %s, but the machine itself was %s during B's runs (a fixed CPU loop timed before each run: %s, interval [%s, %s]): a change this size can be the machine's, not B's; compare again when the machine is steady",
					pct(h.Change), fmt.Sprintf("[%s, %s]", pct(h.Interval[0]), pct(h.Interval[1])), strings.TrimPrefix(changeWords(m.Change), "is "), pct(m.Change), pct(m.Interval[0]), pct(m.Interval[1]))
			}
		}
		return h
	}
	lo, hi := stats.ChangeInterval(va.Runs, vb.Runs, change)
	h.Interval = &[2]float64{lo, hi}
	h.BatchDrift = batchDrift(va, vb)
	h.Significance, h.Reason = significance(h.Change, *h.Interval, *va.Noise, *vb.Noise, h.BatchDrift, driftWords(va, vb))
	h.Reason += "; " + batchesNote
	h.Advice = append(h.Advice, interleaveAdvice(a, b))
	return h
}

// pairedSignificance is significance for interleaved runs: the interval
// over rounds must exclude zero, the change must exceed the noise of the
// rounds' own changes (two robust standard deviations, as diagnose's
// baseline noise) and be material, as a condition's loss must be to make a
// bottleneck.
func pairedSignificance(change float64, iv [2]float64, noise float64) (class, reason string) {
	ivs := fmt.Sprintf("[%s, %s]", pct(iv[0]), pct(iv[1]))
	switch {
	case iv[0] <= 0 && iv[1] >= 0:
		return NotSignificant, fmt.Sprintf("changed %s but the 95%% interval over the rounds %s reaches zero: use more --repeat to tell a small change from none", pct(change), ivs)
	case math.Abs(change) <= noise:
		return NotSignificant, fmt.Sprintf("changed %s, interval %s, but the rounds' own changes move ±%.0f%%: use more --repeat", pct(change), ivs, noise*100)
	case math.Abs(change) < materialChange:
		return NotSignificant, fmt.Sprintf("changed %s, interval %s, beyond the rounds' noise (±%.0f%%), but under the %.0f%% that compare sets out to explain (the change that makes a bottleneck in diagnose)",
			pct(change), ivs, noise*100, materialChange*100)
	}
	return Significant, fmt.Sprintf("changed %s, interval over the interleaved rounds %s excludes zero, beyond the rounds' noise (±%.0f%%)", pct(change), ivs, noise*100)
}

// machineMoved says whether the machine's own speed moved the same way as
// the workload, beyond the canary's noise (its interval excludes zero) and
// by at least half the workload's change: as much as a CPU-bound
// workload's change would need to be the machine's. A workload that needs
// less CPU moves less with the machine, so half is generous to the
// workload's change, never to the machine's.
func machineMoved(change float64, m MachineSpeed) bool {
	beyond := m.Interval[0] > 0 || m.Interval[1] < 0
	return beyond && m.Change*change > 0 && math.Abs(m.Change) >= math.Abs(change)/2
}

// batchDriftMargin: a change between two batches made one after the other
// is called only when it is more than twice the drift the batches' own
// trends predict between them (batchDrift). Twice, because each trend is
// Sen's slope of a handful of runs, uncertain by about as much again: on
// five runs of independent noise σ the slope's drift over the batch moves
// by about 1.3σ. The two identical batches were 16% apart with A
// falling 17% over its five runs (15% with two of them swapped, which
// Mann-Kendall's p of 0.08 would have called steady).
const batchDriftMargin = 2

// batchDrift is how far the machine drifts between two batches made one
// after the other, at the rate the faster-drifting batch drifted within
// itself (Sen's slope per run, relative to its median): the middles of two
// batches of nA and nB runs are (nA+nB)/2 runs apart.
func batchDrift(va, vb Value) float64 {
	rate := math.Max(math.Abs(va.perRun), math.Abs(vb.perRun))
	return rate * float64(len(va.Runs)+len(vb.Runs)) / 2
}

// driftWords says how far each batch moved over its runs.
func driftWords(va, vb Value) string {
	var parts []string
	for _, s := range []struct {
		name string
		v    Value
	}{{"A", va}, {"B", vb}} {
		if d := s.v.Drift; d != nil {
			parts = append(parts, fmt.Sprintf("%s %s over its %d runs", s.name, pct(d.Change), len(s.v.Runs)))
		}
	}
	return strings.Join(parts, ", ") + ", along Sen's slope"
}

// batchesNote is what every comparison of two batches made one after the
// other says: no statistic of the two can rule out drift between them.
const batchesNote = "A and B were made one batch after the other, not interleaved: a change between them can be drift between the batches"

// interleaveAdvice is the command that compares A's and B's workloads
// interleaved, paired by round, from the records' own command lines.
func interleaveAdvice(a, b *model.Run) string {
	cmd := "perfsleuth compare"
	if m := measureOf(a); m.Source == "metric" {
		cmd += " --metric " + units.ShellJoin([]string{m.Name})
		if !m.HigherIsBetter {
			cmd += " --metric-lower"
		}
	}
	for _, s := range []struct {
		name string
		r    *model.Run
	}{{"A", a}, {"B", b}} {
		if w := workloadArgs(s.r); len(w) > 0 {
			cmd += " --run " + units.ShellJoin([]string{units.ShellJoin(w)})
		} else {
			cmd += ` --run "<` + s.name + `'s workload and its flags>"`
		}
	}
	return "to tell a change from drift between batches, run A and B interleaved, paired by round: " + cmd
}

// workloadArgs are the workload and its flags from the record's command
// line, as compare --run takes them ("sqlite --journal wal", "-- ./bench").
func workloadArgs(r *model.Run) []string {
	args := r.Tool.Args
	for i, a := range args {
		if a == "--" || (i > 0 && a == r.Target.Kind) {
			return args[i:]
		}
	}
	return nil
}

// significance decides whether a change between two batches of repeats,
// made one after the other, is real. It mirrors diagnose's classify
// (internal/analyze/sensitivity.go): the interval must exclude zero, the
// change must exceed the noise, here of both sides, since either may be
// the one that moved, and it must be material (materialChange), as a
// condition's loss must be to make a bottleneck. Unlike a condition, which
// takes a resource away, a comparison may go either way. Unlike diagnose's
// conditions, which run interleaved with the baseline and are paired with
// it round by round, A's and B's repeats were made one batch after the
// other, and the machine's drift between two batches is in neither side's
// noise: the change must also exceed twice the drift the batches' own
// trends predict between them (drift, batchDriftMargin), and be material
// however steady the batches were (driftNote).
func significance(change float64, iv [2]float64, noiseA, noiseB, drift float64, drifts string) (class, reason string) {
	noise := math.Max(noiseA, noiseB)
	ivs := fmt.Sprintf("[%s, %s]", pct(iv[0]), pct(iv[1]))
	switch {
	case iv[0] <= 0 && iv[1] >= 0:
		return NotSignificant, fmt.Sprintf("changed %s but the 95%% interval %s reaches zero: use more --repeat on both sides to tell a small change from none", pct(change), ivs)
	case math.Abs(change) <= noise:
		return NotSignificant, fmt.Sprintf("changed %s, interval %s, but one side's own runs move ±%.0f%% (A ±%.0f%%, B ±%.0f%%): use more --repeat", pct(change), ivs, noise*100, noiseA*100, noiseB*100)
	case math.Abs(change) <= batchDriftMargin*drift:
		return NotSignificant, fmt.Sprintf("changed %s, interval %s, but the runs drifted within their batches (%s): at that rate two batches made one after the other drift %.0f%% apart, and a change under twice that (%.0f%%) can be the drift",
			pct(change), ivs, drifts, drift*100, batchDriftMargin*drift*100)
	case math.Abs(change) < materialChange:
		return NotSignificant, fmt.Sprintf("changed %s, interval %s, beyond both sides' noise (A ±%.0f%%, B ±%.0f%%), but under the %.0f%% %s",
			pct(change), ivs, noiseA*100, noiseB*100, materialChange*100, driftNote)
	}
	return Significant, fmt.Sprintf("changed %s, interval %s excludes zero, beyond both sides' noise (A ±%.0f%%, B ±%.0f%%) and twice the %.0f%% the batches' own drift (%s) predicts between them",
		pct(change), ivs, noiseA*100, noiseB*100, drift*100, drifts)
}

func positive(xs []float64) bool {
	for _, x := range xs {
		if !(x > 0) || math.IsInf(x, 0) {
			return false
		}
	}
	return len(xs) > 0
}

func missingMeasure(a *model.Run, okA bool, b *model.Run, okB bool) string {
	var parts []string
	for _, s := range []struct {
		name string
		ok   bool
		r    *model.Run
	}{{"A", okA, a}, {"B", okB, b}} {
		switch {
		case s.ok:
		case s.r.Target.Kind == "pid":
			parts = append(parts, s.name+" observed a running process, which has no measure of its own")
		default:
			parts = append(parts, s.name+" has no result (the run ended before its measured phase)")
		}
	}
	return strings.Join(parts, "; ")
}

func pluralIs(n int) string {
	if n > 1 {
		return "are each"
	}
	return "is"
}

// changeWords says a performance change in words.
func changeWords(change float64) string {
	switch {
	case math.Abs(change) < 0.005:
		return "performs the same"
	case change <= -0.5:
		return fmt.Sprintf("is %s slower", times(1/(1+change)))
	case change < 0:
		return fmt.Sprintf("is %.0f%% slower", -change*100)
	case change >= 1:
		return fmt.Sprintf("is %s faster", times(1+change))
	}
	return fmt.Sprintf("is %.0f%% faster", change*100)
}

// times formats a factor: "2x", "1.5x", "64x".
func times(f float64) string {
	if f >= 10 {
		return fmt.Sprintf("%.0fx", f)
	}
	return strings.TrimSuffix(strings.TrimSuffix(fmt.Sprintf("%.1f", f), "0"), ".") + "x"
}

func pct(x float64) string { return units.FormatChange(x) }

// adviceFor says how to learn a single run's noise: the same workload as
// diagnose baseline repeats, from the record's own command line.
func adviceFor(name string, r *model.Run) string {
	if r.Target.Kind == "pid" {
		return fmt.Sprintf("%s observed a running process, which cannot be rerun: observe it %d times at the same point of its work, or run its work as a command under diagnose", name, adviceRepeat)
	}
	cmd := fmt.Sprintf("perfsleuth diagnose --conditions baseline --repeat %d --json %s-baseline.json", adviceRepeat, name)
	if w := rerunArgs(r); len(w) > 0 {
		cmd += " " + units.ShellJoin(w)
	} else {
		cmd += " <" + name + "'s workload and its flags>"
	}
	return fmt.Sprintf("to learn %s's noise, repeat it: %s", name, cmd)
}

// rerunArgs are the record's command line without its verb and output:
// the observe options, then the workload and its flags (or -- and the
// command).
func rerunArgs(r *model.Run) []string {
	args := r.Tool.Args
	if len(args) == 0 {
		return nil
	}
	start := -1
	for i, a := range args {
		if a == "--" || (i > 0 && a == r.Target.Kind) {
			start = i
			break
		}
	}
	if start < 0 {
		return nil
	}
	var out []string
	// Options of the verb, minus the ones diagnose sets here or rejects,
	// and the record's own outputs (the advice must not write over the
	// report or page the record came with).
	valued := map[string]bool{"--json": true, "--repeat": true, "--conditions": true, "--budget": true, "--output": true, "--html": true}
	for i := 1; i < start; i++ {
		a := args[i]
		name, _, hasValue := strings.Cut(a, "=")
		switch {
		case valued[name] && !hasValue:
			i++
			continue
		case valued[name] || name == "--quick":
			continue
		}
		out = append(out, a)
	}
	return append(out, args[start:]...)
}
