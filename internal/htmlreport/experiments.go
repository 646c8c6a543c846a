package htmlreport

import (
	"fmt"
	"strings"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/stats"
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
	better := "higher is better"
	if !m.HigherIsBetter {
		better = "lower is better"
	}
	s.p(fmt.Sprintf("measure: %s (%s, %s); %d runs per condition, %d runs in all, interleaved",
		m.Name, orDash(m.Unit), better, ex.Repeat, len(ex.Order)))
	value := func(v float64) string {
		if m.Unit == "s" {
			return durSec(v)
		}
		return rate(v) + " " + m.Unit
	}
	var base float64
	for _, c := range ex.Conditions {
		if c.Name == "baseline" {
			base = c.Median
		}
	}
	change := changeFrom(m, base)
	var rows []IntervalRow
	tb := newTable("condition", "~resource", "median", "change", "~95% interval", "~class", "~why")
	runs := newTable("condition", "~runs, in the order of their condition (the runs were interleaved)")
	for _, c := range ex.Conditions {
		var vals []string
		var points []float64
		for _, r := range c.Runs {
			vals = append(vals, value(r.Value))
			points = append(points, change(r.Value))
		}
		if len(c.Runs) > 0 {
			runs.add(cell{Text: c.Name}, cell{Text: strings.Join(vals, " · ")})
		}
		switch {
		case len(c.Runs) == 0:
			tb.add(cell{Text: c.Name}, cell{Text: c.Resource}, cell{Text: "-"}, cell{}, cell{}, cell{Text: "no run finished"})
		case c.Name == "baseline":
			tb.add(cell{Text: c.Name}, cell{}, cell{Text: value(c.Median)}, cell{}, cell{},
				cell{Text: fmt.Sprintf("its noise: ±%.0f%%", ex.BaselineNoise*100)})
			rows = append(rows, IntervalRow{Label: c.Name, Points: points, Note: "median " + value(c.Median)})
		default:
			iv := fmt.Sprintf("[%s, %s]", pct(c.Interval[0]), pct(c.Interval[1]))
			tb.add(cell{Text: c.Name}, cell{Text: c.Resource}, cell{Text: value(c.Median)}, cell{Text: pct(c.Change)},
				cell{Text: iv}, cell{Text: c.Class, Class: classCell(c.Class)}, cell{Text: c.Reason})
			rows = append(rows, IntervalRow{Label: c.Name, Change: c.Change, Lo: c.Interval[0], Hi: c.Interval[1],
				Points: points, Class: c.Class, Note: fmt.Sprintf("%s %s %s", pct(c.Change), iv, c.Class)})
		}
	}
	if len(rows) > 0 {
		s.figs(figure{Caption: "Change in performance against baseline", Wide: true,
			Sub:   "median with its 95% bootstrap interval, each run as a ring; left of zero is slower",
			Chart: IntervalChart("experiments", rows, IntervalOptions{Title: "experiment conditions", Noise: ex.BaselineNoise})})
	}
	s.table(tb.t)
	s.table(runs.t)
	if ex.Warmup > 0 {
		s.p(fmt.Sprintf("warm-up run: %s (not counted)", value(ex.Warmup)))
	}
	runAccounting(s, ex)
	var settings []kv
	for _, c := range ex.Conditions {
		if len(c.Settings) > 0 {
			settings = append(settings, kv{c.Name, strings.Join(c.Settings, "; ")})
		}
	}
	for _, sk := range ex.Skipped {
		settings = append(settings, kv{sk.Name, "skipped: " + sk.Reason})
	}
	if len(settings) > 0 {
		s.h3("How each condition was applied")
		s.kvs(settings)
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
func runAccounting(s *section, ex *model.Experiments) {
	var rows []BarRow
	seen := false
	longest := 0.0
	for _, c := range ex.Conditions {
		if len(c.Runs) == 0 {
			continue
		}
		var cpu, wait, st []float64
		for _, r := range c.Runs {
			cpu, wait, st = append(cpu, r.CPUSec), append(wait, r.CPUWaitSec), append(st, r.StorageSec)
			if r.CPUSec+r.CPUWaitSec+r.StorageSec > 0 {
				seen = true
			}
		}
		mc, mw, ms := stats.Median(cpu), stats.Median(wait), stats.Median(st)
		longest = max(longest, mc+mw+ms)
		rows = append(rows, BarRow{Label: c.Name, Note: durSec(mc + mw + ms), Segments: []Segment{
			{Label: model.CatCPU, Value: mc, Color: CategoryColor(model.CatCPU)},
			{Label: model.CatCPUWait, Value: mw, Color: CategoryColor(model.CatCPUWait)},
			{Label: "storage", Value: ms, Color: CategoryColor(model.CatStorageWrite)},
		}})
	}
	if !seen {
		return
	}
	s.figs(figure{Caption: "What the busy threads did under each condition", Wide: true,
		Sub: "median of each condition's runs, from the eBPF accounting (storage: read, write and sync)",
		Chart: StackedBars("experiment-accounting", rows, BarOptions{Title: "busy-thread time per condition", Max: longest,
			Format: durSec, Legend: LegendItems(model.CatCPU, CategoryColor(model.CatCPU), model.CatCPUWait,
				CategoryColor(model.CatCPUWait), "storage", CategoryColor(model.CatStorageWrite))})})
}

// changeFrom returns a run's change in performance against base (a
// median), as Condition.Change is defined for the medians: positive is
// better whichever way m goes; 0 when either is 0.
func changeFrom(m model.Measure, base float64) func(float64) float64 {
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
