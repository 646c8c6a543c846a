package report

import (
	"fmt"
	"strings"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/report/rows"
)

// experiments shows diagnose's conditions: each one's runs, median, change
// against baseline with its interval and class, then what each resource's
// sensitivity is and the conclusion.
func (d *doc) experiments(run *model.Run) {
	ex := run.Experiments
	if ex == nil {
		return
	}
	m := ex.Measure
	d.heading(fmt.Sprintf("experiments: %s, %s, %d runs per condition", m.Name, rows.BetterWords(m), ex.Repeat))
	value := func(v float64) string {
		if m.Unit == "s" {
			return rows.Secs(v)
		}
		return rows.Rate(v)
	}
	values := func(vs []float64) []string {
		var out []string
		for _, v := range vs {
			out = append(out, value(v))
		}
		return out
	}
	if ex.Scaling != nil {
		d.scaling(ex.Scaling, value)
		return
	}
	x := rows.ExperimentsOf(ex)
	const row = "  %-15s %9s %7s  %-15s %s"
	d.line(row, "condition", "median", "change", "95% interval", "class")
	for _, c := range x.Conditions {
		switch {
		case !c.Finished:
			d.line(row, c.Name, "-", "", "", "no run finished")
		case c.Baseline:
			d.line(row, c.Name, value(c.Median), "", "", "(its noise: "+rows.Noise(ex.BaselineNoise)+")")
		default:
			class := c.Class
			if class == "sensitive" {
				class = d.paint(ansiRed, class)
			}
			d.line(row, c.Name, value(c.Median), rows.Pct(c.Change), c.IntervalText, class)
		}
	}
	d.line("  every run, in the order of its condition (the runs were interleaved):")
	for _, c := range x.Conditions {
		if runs := values(c.Values); len(runs) > 0 {
			d.wrapped(fmt.Sprintf("  %-15s ", c.Name), strings.Repeat(" ", 18), strings.Join(runs, " "))
		}
	}
	if ex.Warmup > 0 {
		d.line("  %-15s %s (not counted)", "warm-up", value(ex.Warmup))
	}
	if len(ex.Rewarms) > 0 {
		d.wrapped(fmt.Sprintf("  %-15s ", "re-warm"), strings.Repeat(" ", 18),
			strings.Join(values(ex.Rewarms), " ")+" (not counted: each before a run that followed one that left the workload's files out of the page cache)")
	}
	if len(x.Accounting) > 0 {
		d.line("  what the busy threads did, median of each condition's runs (eBPF accounting):")
		d.line("  %-15s %10s %10s %10s", "", "cpu", "cpu-wait", "storage")
		for _, a := range x.Accounting {
			d.line("  %-15s %10s %10s %10s", a.Name, rows.Secs(a.CPUSec), rows.Secs(a.CPUWaitSec), rows.Secs(a.StorageSec))
		}
	}
	for _, c := range x.Conditions {
		for i, s := range c.Settings {
			head := "    "
			if i == 0 {
				head = "  " + c.Name + ": "
			}
			d.wrapped(head, "      ", s)
		}
	}
	for _, s := range ex.Skipped {
		d.wrapped("  "+s.Name+": skipped: ", "      ", s.Reason)
	}
	if c := ex.DeviceCurve; c != nil {
		d.line("  device curve: %s", rows.CurveOf(c))
		if c.Placement != "" {
			d.wrapped("    ", "    ", c.Placement)
		}
	} else if ex.DeviceCurveNote != "" {
		d.wrapped("  device curve: ", "    ", ex.DeviceCurveNote)
	}
	for _, c := range x.Conditions {
		if c.Class == "inconclusive" && c.Reason != "" {
			d.wrapped("  "+c.Name+" is inconclusive: ", "      ", c.Reason)
		}
	}
	// A side effect that did not confound the condition (a confounded
	// one is in its reason and the conclusion).
	for _, c := range ex.Conditions {
		if se := c.SideEffect; se != nil && !se.Confounded {
			d.wrapped("  "+c.Name+": ", "      ", se.Summary+"; its own resource's rise is the larger, so its change counts")
		}
	}
	for _, n := range x.Notes {
		d.wrapped("  - ", "    ", n)
	}
	if ex.Incomplete {
		d.wrapped("  "+d.paint(ansiRed, "!")+" ", "    ", "the experiment stopped early: the conditions hold only the runs that finished")
	}
	v := run.Verdict
	if v == nil {
		return
	}
	if sens := rows.Sensitivity(v); len(sens) > 0 {
		var parts []string
		for _, s := range sens {
			parts = append(parts, fmt.Sprintf("%s %s (%s %s)", s.Resource, s.Class, s.Condition, rows.Pct(s.Change)))
		}
		d.blank()
		d.field("sensitivity", strings.Join(parts, "; "))
	}
	if v.Conclusion != "" {
		d.field("conclusion", v.Conclusion)
	}
}

// scaling shows diagnose --scale's levels: each one's median measure with
// its interval, against linear, and a unit of work's cost by state; then
// every run, and the USL fit.
func (d *doc) scaling(sc *model.Scaling, value func(float64) string) {
	d.line("  %s at each level, on %d CPUs (the runs were interleaved):", sc.Param, sc.CPUs)
	const row = "  %-12s %9s  %-21s %9s %10s %10s %10s"
	d.line(row, "level", "median", "95% interval", "of linear", "cpu/unit", "lock/unit", "wait/unit")
	for _, p := range sc.Points {
		name := fmt.Sprintf("%s=%d", sc.Param, p.N)
		if p.OverCPUs {
			name += "*"
		}
		if len(p.Runs) == 0 {
			d.line(row, name, "-", "no run finished", "", "", "", "")
			continue
		}
		iv := fmt.Sprintf("[%s, %s]", value(p.ThroughputInterval[0]), value(p.ThroughputInterval[1]))
		cost := func(c string) string {
			if p.TimePerUnit == nil {
				return "-"
			}
			return rows.PerUnit(p.TimePerUnit[c])
		}
		d.line(row, name, value(p.Throughput), iv, fmt.Sprintf("%.0f%%", p.Efficiency*100), cost("cpu"), cost("lock"), cost("cpu-wait"))
	}
	for _, p := range sc.Points {
		if p.OverCPUs {
			d.line("  * more threads than CPUs: they take turns, and a unit's wait for a CPU grows by design")
			break
		}
	}
	d.line("  every run:")
	for _, p := range sc.Points {
		var runs []string
		for _, r := range p.Runs {
			runs = append(runs, value(r.Value))
		}
		d.wrapped(fmt.Sprintf("  %-12s ", fmt.Sprintf("%s=%d", sc.Param, p.N)), strings.Repeat(" ", 15), strings.Join(runs, " "))
	}
	if sc.Fit == nil && sc.FitNote != "" {
		d.wrapped("  no USL fit: ", "      ", sc.FitNote)
	}
}
