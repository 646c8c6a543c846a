package htmlreport

import (
	"fmt"
	"strings"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/report/rows"
)

// experimentsSection shows diagnose's conditions: each one's change against
// baseline with its interval and runs, what the busy threads did under it,
// and how each condition was applied.
func experimentsSection(run *model.Run) *section {
	s := &section{ID: "experiments", Title: "Experiments"}
	ex := run.Experiments
	if ex == nil {
		s.Why = "no experiments: diagnose reruns the workload under conditions that each take one resource away, and says which one its result depends on"
		return s
	}
	m := ex.Measure
	s.p(fmt.Sprintf("measure: %s (%s, %s); %d runs per condition, %d runs in all, interleaved",
		m.Name, rows.OrDash(m.Unit), rows.BetterWords(m), ex.Repeat, len(ex.Order)))
	value := func(v float64) string {
		if m.Unit == "s" {
			return durSec(v)
		}
		return rows.Rate(v) + " " + m.Unit
	}
	values := func(vs []float64) []string {
		var out []string
		for _, v := range vs {
			out = append(out, value(v))
		}
		return out
	}
	if ex.Scaling != nil {
		scalingSection(s, ex.Scaling, m, value)
		return s
	}
	x := rows.ExperimentsOf(ex)
	var intervals []IntervalRow
	tb := newTable("condition", "~resource", "median", "change", "~95% interval", "~class", "~why")
	runs := newTable("condition", "~runs, in the order of their condition (the runs were interleaved)")
	for _, c := range x.Conditions {
		if c.Finished {
			runs.add(cell{Text: c.Name}, cell{Text: strings.Join(values(c.Values), " · ")})
		}
		switch {
		case !c.Finished:
			tb.add(cell{Text: c.Name}, cell{Text: c.Resource}, cell{Text: "-"}, cell{}, cell{}, cell{Text: "no run finished"})
		case c.Baseline:
			tb.add(cell{Text: c.Name}, cell{}, cell{Text: value(c.Median)}, cell{}, cell{},
				cell{Text: "its noise: " + rows.Noise(ex.BaselineNoise)})
			intervals = append(intervals, IntervalRow{Label: c.Name, Points: c.Points, Note: "median " + value(c.Median)})
		default:
			tb.add(cell{Text: c.Name}, cell{Text: c.Resource}, cell{Text: value(c.Median)}, cell{Text: rows.Pct(c.Change)},
				cell{Text: c.IntervalText}, cell{Text: c.Class, Class: classCell(c.Class)}, cell{Text: c.Reason})
			intervals = append(intervals, IntervalRow{Label: c.Name, Change: c.Change, Lo: c.Interval[0], Hi: c.Interval[1],
				Points: c.Points, Class: c.Class, Note: fmt.Sprintf("%s %s %s", rows.Pct(c.Change), c.IntervalText, c.Class)})
		}
	}
	if len(intervals) > 0 {
		s.figs(figure{Caption: "Change in performance against baseline", Wide: true,
			Sub:   "median with its 95% bootstrap interval, each run as a ring; left of zero is slower",
			Chart: IntervalChart("experiments", intervals, IntervalOptions{Title: "experiment conditions", Noise: ex.BaselineNoise})})
	}
	s.table(tb.t)
	s.table(runs.t)
	if ex.Warmup > 0 {
		s.p(fmt.Sprintf("warm-up run: %s (not counted)", value(ex.Warmup)))
	}
	if len(ex.Rewarms) > 0 {
		s.p(fmt.Sprintf("re-warm runs: %s (not counted: each before a run that followed one that left the workload's files out of the page cache)", strings.Join(values(ex.Rewarms), " ")))
	}
	runAccounting(s, x.Accounting)
	var settings []kv
	for _, c := range x.Conditions {
		if len(c.Settings) > 0 {
			settings = append(settings, kv{c.Name, strings.Join(c.Settings, "; ")})
		}
	}
	for _, sk := range ex.Skipped {
		settings = append(settings, kv{sk.Name, "skipped: " + sk.Reason})
	}
	if c := ex.DeviceCurve; c != nil {
		w := rows.CurveOf(c)
		if c.Placement != "" {
			w += "; " + c.Placement
		}
		settings = append(settings, kv{"device curve", w})
	} else if ex.DeviceCurveNote != "" {
		settings = append(settings, kv{"device curve", ex.DeviceCurveNote})
	}
	if len(settings) > 0 {
		s.h3("How each condition was applied")
		s.kvs(settings)
	}
	// What a condition took besides its own resource (docs/experiments.md,
	// side effects); a confounded one's loss does not count.
	var side []kv
	for _, c := range ex.Conditions {
		if se := c.SideEffect; se != nil {
			verdict := "its own resource's rise is the larger, so its change counts"
			if se.Confounded {
				verdict = "confounded: its change is not counted for " + c.Resource
			}
			side = append(side, kv{c.Name, se.Summary + "; " + verdict})
		}
	}
	if len(side) > 0 {
		s.h3("What each condition took besides its own resource")
		s.kvs(side)
	}
	if len(x.Notes) > 0 {
		s.list(x.Notes)
	}
	if ex.Incomplete {
		s.warn("the experiment stopped early: the conditions hold only the runs that finished")
	}
	return s
}

// classCell is the colour class of an experiment class; none for another
// value.
func classCell(class string) string {
	switch class {
	case "sensitive", "insensitive", "inconclusive":
		return "cls-" + class
	}
	return ""
}

// runAccounting draws, per condition, what the busy threads did in its
// median run: the mechanism behind a change (cpu-wait appears under
// cpu-contention, storage time grows under io-pressure).
func runAccounting(s *section, acc []rows.CondAccounting) {
	if len(acc) == 0 {
		return
	}
	var bars []BarRow
	longest := 0.0
	for _, a := range acc {
		longest = max(longest, a.CPUSec+a.CPUWaitSec+a.StorageSec)
		bars = append(bars, BarRow{Label: a.Name, Note: durSec(a.CPUSec + a.CPUWaitSec + a.StorageSec), Segments: []Segment{
			{Label: model.CatCPU, Value: a.CPUSec, Color: CategoryColor(model.CatCPU)},
			{Label: model.CatCPUWait, Value: a.CPUWaitSec, Color: CategoryColor(model.CatCPUWait)},
			{Label: "storage", Value: a.StorageSec, Color: CategoryColor(model.CatStorageWrite)},
		}})
	}
	s.figs(figure{Caption: "What the busy threads did under each condition", Wide: true,
		Sub: "median of each condition's runs, from the eBPF accounting (storage: read, write and sync)",
		Chart: StackedBars("experiment-accounting", bars, BarOptions{Title: "busy-thread time per condition", Max: longest,
			Format: durSec, Legend: LegendItems(model.CatCPU, CategoryColor(model.CatCPU), model.CatCPUWait,
				CategoryColor(model.CatCPUWait), "storage", CategoryColor(model.CatStorageWrite))})})
}

// scalingSection shows diagnose --scale: the throughput and a unit of
// work's cost at each level, as charts (with linear scaling and the USL
// fit beside the measured) and a table, then every run.
func scalingSection(s *section, sc *model.Scaling, m model.Measure, value func(float64) string) {
	s.p(sc.Summary)
	var ns, thr, linear, busy, fitted, cpu []float64
	first := sc.Points[0]
	for _, p := range sc.Points {
		ns = append(ns, float64(p.N))
		thr = append(thr, p.Throughput)
		linear = append(linear, first.Throughput*float64(p.N)/float64(max(first.N, 1)))
		cpu = append(cpu, p.CPUSecPerUnit*1e9)
		busy = append(busy, model.BusyTime(p.TimePerUnit)*1e9)
		if f := sc.Fit; f != nil && f.Lambda > 0 {
			fitted = append(fitted, f.Cost(float64(p.N))*1e9)
		}
	}
	xLabel := sc.Param
	cost := []Series{{Label: "busy time per unit", Color: CategoryColor(model.CatSleep), Y: busy}, {Label: "cpu per unit", Color: CategoryColor(model.CatCPU), Y: cpu}}
	if len(fitted) == len(ns) {
		cost = append(cost, Series{Label: "USL fit", Color: "#888", Y: fitted})
	}
	s.figs(
		figure{Caption: "Throughput by " + sc.Param, Sub: fmt.Sprintf("medians of each level's runs, against linear scaling from the first level (%s)", rows.OrDash(m.Unit)),
			Chart: LineChart("scaling-throughput", ns, []Series{{Label: "measured", Color: CategoryColor(model.CatCPU), Y: thr, Bold: true}, {Label: "linear", Color: "#888", Y: linear}},
				LineOptions{Title: "throughput by " + sc.Param, YUnit: UnitCount, XLabel: xLabel, Legend: true})},
		figure{Caption: "Cost of a unit of work by " + sc.Param, Sub: "the workload's threads' time per unit (all states but the wait for a CPU), its CPU time, and the USL fitted to the first",
			Chart: LineChart("scaling-cost", ns, cost, LineOptions{Title: "cost per unit by " + sc.Param, YUnit: UnitNs, XLabel: xLabel, Legend: true})},
	)
	tb := newTable("level", "median", "~95% interval", "of linear", "cpu / unit", "lock / unit", "cpu-wait / unit", "~runs")
	for _, p := range sc.Points {
		name := fmt.Sprintf("%s=%d", sc.Param, p.N)
		if p.OverCPUs {
			name += fmt.Sprintf(" (over the %d CPUs)", sc.CPUs)
		}
		var runs []string
		for _, r := range p.Runs {
			runs = append(runs, value(r.Value))
		}
		if len(p.Runs) == 0 {
			tb.add(cell{Text: name}, cell{Text: "-"}, cell{Text: "no run finished"})
			continue
		}
		per := func(c string) string {
			if p.TimePerUnit == nil {
				return "-"
			}
			return rows.PerUnit(p.TimePerUnit[c])
		}
		tb.add(cell{Text: name}, cell{Text: value(p.Throughput)}, cell{Text: fmt.Sprintf("[%s, %s]", value(p.ThroughputInterval[0]), value(p.ThroughputInterval[1]))},
			cell{Text: fmt.Sprintf("%.0f%%", p.Efficiency*100)}, cell{Text: per(model.CatCPU)}, cell{Text: per(model.CatLock)}, cell{Text: per(model.CatCPUWait)},
			cell{Text: strings.Join(runs, " · ")})
	}
	s.table(tb.t)
	if sc.Fit == nil && sc.FitNote != "" {
		s.p("no USL fit: " + sc.FitNote)
	}
}
