package report

import (
	"fmt"
	"sort"
	"strings"

	"github.com/perfsleuth/perfsleuth/internal/model"
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
	d.heading(fmt.Sprintf("experiments (%s, %s; %d runs per condition, interleaved)", m.Name, better, ex.Repeat))
	value := func(v float64) string {
		if m.Unit == "s" {
			return secs(v)
		}
		return rate(v)
	}
	d.line("  %-15s %10s %7s  %-16s %-13s %s", "condition", "median", "change", "95% interval", "class", "runs")
	for _, c := range ex.Conditions {
		var runs []string
		for _, r := range c.Runs {
			runs = append(runs, value(r.Value))
		}
		if len(c.Runs) == 0 {
			d.line("  %-15s %10s %7s  %-16s %-13s %s", c.Name, "-", "", "", c.Class, "none finished")
			continue
		}
		if c.Name == "baseline" {
			d.line("  %-15s %10s %7s  %-16s %-13s %s (noise ±%.0f%%)", c.Name, value(c.Median), "", "", "", strings.Join(runs, " "), ex.BaselineNoise*100)
			continue
		}
		iv := fmt.Sprintf("[%s, %s]", pct(c.Interval[0]), pct(c.Interval[1]))
		class := c.Class
		switch c.Class {
		case "sensitive":
			class = d.paint(ansiRed, fmt.Sprintf("%-13s", class))
		default:
			class = fmt.Sprintf("%-13s", class)
		}
		d.line("  %-15s %10s %7s  %-16s %s %s", c.Name, value(c.Median), pct(c.Change), iv, class, strings.Join(runs, " "))
	}
	if ex.Warmup > 0 {
		d.line("  %-15s %10s %7s  %-16s %-13s %s", "(warm-up)", value(ex.Warmup), "", "", "", "not counted")
	}
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

func pct(x float64) string { return fmt.Sprintf("%+.0f%%", x*100) }
