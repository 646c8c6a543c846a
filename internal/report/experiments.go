package report

import (
	"fmt"
	"sort"
	"strings"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/stats"
	"github.com/perfsleuth/perfsleuth/internal/units"
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
	better := "higher is better"
	if !m.HigherIsBetter {
		better = "lower is better"
	}
	d.heading(fmt.Sprintf("experiments: %s, %s, %d runs per condition", m.Name, better, ex.Repeat))
	value := func(v float64) string {
		if m.Unit == "s" {
			return secs(v)
		}
		return rate(v)
	}
	const row = "  %-15s %9s %7s  %-15s %s"
	d.line(row, "condition", "median", "change", "95% interval", "class")
	for _, c := range ex.Conditions {
		switch {
		case len(c.Runs) == 0:
			d.line(row, c.Name, "-", "", "", "no run finished")
		case c.Name == "baseline":
			d.line(row, c.Name, value(c.Median), "", "", fmt.Sprintf("(its noise: ±%.0f%%)", ex.BaselineNoise*100))
		default:
			class := c.Class
			if class == "sensitive" {
				class = d.paint(ansiRed, class)
			}
			d.line(row, c.Name, value(c.Median), pct(c.Change), fmt.Sprintf("[%s, %s]", pct(c.Interval[0]), pct(c.Interval[1])), class)
		}
	}
	d.line("  every run, in the order of its condition (the runs were interleaved):")
	for _, c := range ex.Conditions {
		var runs []string
		for _, r := range c.Runs {
			runs = append(runs, value(r.Value))
		}
		if len(runs) > 0 {
			d.wrapped(fmt.Sprintf("  %-15s ", c.Name), strings.Repeat(" ", 18), strings.Join(runs, " "))
		}
	}
	if ex.Warmup > 0 {
		d.line("  %-15s %s (not counted)", "warm-up", value(ex.Warmup))
	}
	d.runAccounting(ex)
	for _, c := range ex.Conditions {
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
	for _, c := range ex.Conditions {
		if c.Class == "inconclusive" && c.Reason != "" {
			d.wrapped("  "+c.Name+" is inconclusive: ", "      ", c.Reason)
		}
	}
	if ex.Incomplete {
		d.wrapped("  "+d.paint(ansiRed, "!")+" ", "    ", "the experiment stopped early: the conditions hold only the runs that finished")
	}
	v := run.Verdict
	if v == nil {
		return
	}
	if len(v.Sensitivity) > 0 {
		var rs []string
		for r := range v.Sensitivity {
			rs = append(rs, r)
		}
		sort.Strings(rs)
		var parts []string
		for _, r := range rs {
			s := v.Sensitivity[r]
			parts = append(parts, fmt.Sprintf("%s %s (%s %s)", r, s.Class, s.Condition, pct(s.Change)))
		}
		d.blank()
		d.field("sensitivity", strings.Join(parts, "; "))
	}
	if v.Conclusion != "" {
		d.field("conclusion", v.Conclusion)
	}
}

func pct(x float64) string { return units.FormatChange(x) }

// runAccounting shows, per condition, what the busy threads did in a
// median run: the mechanism behind a change (under cpu-contention, cpu-wait
// appears; under io-pressure, the storage time grows).
func (d *doc) runAccounting(ex *model.Experiments) {
	seen := false
	for _, c := range ex.Conditions {
		for _, r := range c.Runs {
			if r.CPUSec+r.CPUWaitSec+r.StorageSec > 0 {
				seen = true
			}
		}
	}
	if !seen {
		return
	}
	d.line("  what the busy threads did, median of each condition's runs (eBPF accounting):")
	d.line("  %-15s %10s %10s %10s", "", "cpu", "cpu-wait", "storage")
	for _, c := range ex.Conditions {
		if len(c.Runs) == 0 {
			continue
		}
		var cpu, wait, st []float64
		for _, r := range c.Runs {
			cpu, wait, st = append(cpu, r.CPUSec), append(wait, r.CPUWaitSec), append(st, r.StorageSec)
		}
		d.line("  %-15s %10s %10s %10s", c.Name, secs(stats.Median(cpu)), secs(stats.Median(wait)), secs(stats.Median(st)))
	}
}
