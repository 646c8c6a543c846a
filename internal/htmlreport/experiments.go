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
	x := rows.ExperimentsOf(ex)
	var intervals []IntervalRow
	tb := newTable("condition", "~resource", "median", "change", "~95% interval", "~class", "~why")
	runs := newTable("condition", "~runs, in the order of their condition (the runs were interleaved)")
	for _, c := range x.Conditions {
		var vals []string
		for _, v := range c.Values {
			vals = append(vals, value(v))
		}
		if c.Finished {
			runs.add(cell{Text: c.Name}, cell{Text: strings.Join(vals, " · ")})
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
	if len(settings) > 0 {
		s.h3("How each condition was applied")
		s.kvs(settings)
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
