package htmlreport

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/report"
	"github.com/perfsleuth/perfsleuth/internal/units"
)

// severities are the finding severities the page colours; another value
// is shown as info.
var severities = map[string]bool{"info": true, "warning": true, "critical": true}

// header fills the top of the page: what ran, where, the verdict and the
// findings.
func header(p *page, run *model.Run) {
	p.Verb, p.What = title(run)
	if run.Interrupted {
		p.What += " · INTERRUPTED"
	}
	m := []kv{}
	if !run.StartedAt.IsZero() {
		// A numeric offset, not a zone name: a record loaded from JSON has
		// only the offset, and its page must match the run's.
		m = append(m, kv{"started", run.StartedAt.Format("2006-01-02 15:04:05 -07:00")})
		if d := run.EndedAt.Sub(run.StartedAt); d > 0 {
			m = append(m, kv{"took", secs(d.Seconds())})
		}
	}
	h := run.Host
	host := fmt.Sprintf("%s, Linux %s %s, %d CPUs", orDash(h.Hostname), firstWord(h.Kernel), h.Arch, h.CPUsOnline)
	if h.MemTotalBytes > 0 {
		host += ", " + units.FormatSize(h.MemTotalBytes) + " memory"
	}
	m = append(m, kv{"host", host})
	if c := report.CPUGroups(h.CPUs); c != "" {
		m = append(m, kv{"cpus", c})
	}
	if s := h.Storage; s != nil {
		m = append(m, kv{"storage", storageDesc(s)})
	}
	if len(run.Tool.Args) > 0 {
		m = append(m, kv{"command", "perfsleuth " + strings.Join(run.Tool.Args, " ")})
	}
	p.Meta = m

	if v := run.Verdict; v != nil {
		vv := &verdictView{Primary: knownCategory(v.Primary), Secondary: knownCategory(v.Secondary), Summary: v.Summary,
			Conclusion: v.Conclusion, Bottleneck: v.Bottleneck}
		var rs []string
		for r := range v.Sensitivity {
			rs = append(rs, r)
		}
		sort.Strings(rs)
		for _, r := range rs {
			s := v.Sensitivity[r]
			vv.Sensitivity = append(vv.Sensitivity, sensView{Resource: r, Class: s.Class,
				Text: fmt.Sprintf("%s changed the result %s [%s, %s]", s.Condition, pct(s.Change), pct(s.Interval[0]), pct(s.Interval[1]))})
		}
		if ta := run.TimeAccounting; ta != nil {
			vv.Chart, vv.ChartNote = totalChart(ta)
		}
		p.Verdict = vv
	} else {
		p.NoVerdict = "no verdict: this run was only measured (bench); observe or diagnose it to see where its time goes"
		if !measuredOnly(run) {
			p.NoVerdict = "no verdict in this record: it has no time accounting to decide one from"
		}
	}
	for _, f := range run.Findings {
		sev := f.Severity
		if !severities[sev] {
			sev = "info"
		}
		p.Findings = append(p.Findings, findingView{ID: f.ID, Severity: sev, Summary: f.Summary, Evidence: f.Evidence})
	}
	if len(run.Findings) == 0 {
		p.NoFind = "no findings: no rule found anything to point out"
		if measuredOnly(run) {
			p.NoFind = "no findings: the rules need an observed run (observe or diagnose)"
		}
	}
}

// measuredOnly is true for a bench run: nothing observed, so no accounting,
// verdict or findings.
func measuredOnly(run *model.Run) bool {
	return run.Observation == nil && run.TimeAccounting == nil
}

// knownCategory keeps a category id that has a colour class; another
// value is shown without one.
func knownCategory(c string) string {
	for _, k := range model.Categories {
		if c == k {
			return c
		}
	}
	return ""
}

// title says what ran, as the terminal report's first line does.
func title(run *model.Run) (verb, what string) {
	verb = "bench"
	if run.Observation != nil {
		verb = "observe"
	}
	if ex := run.Experiments; ex != nil {
		verb = "diagnose"
	}
	return verb, report.Describe(run.Target)
}

func firstWord(s string) string {
	w, _, _ := strings.Cut(s, " ")
	return w
}

func storageDesc(s *model.Storage) string {
	desc := report.StorageDesc(s)
	if s.MountPoint != "" {
		desc += "; mounted on " + s.MountPoint + " (" + s.MountOptions + ")"
	}
	return desc
}

func pct(x float64) string { return units.FormatChange(x) }

func secs(s float64) string {
	return units.FormatDuration(time.Duration(s * float64(time.Second)))
}

// rate prints a throughput: whole numbers from 100 up, one decimal below.
func rate(v float64) string {
	if v >= 100 {
		return units.FormatCount(int64(v + 0.5))
	}
	return fmt.Sprintf("%.1f", v)
}

func ns(v float64) string { return units.FormatNs(v) }
