package htmlreport

import (
	"fmt"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/report/rows"
	"github.com/perfsleuth/perfsleuth/internal/units"
)

// severities are the finding severities the page colours; another value
// is shown as info.
var severities = map[string]bool{"info": true, "warning": true, "critical": true}

// header fills the top of the page: what ran, where, the verdict and the
// findings.
func header(p *page, run *model.Run) {
	t := rows.TitleOf(run)
	p.Verb, p.What = t.Verb, t.What
	if t.Interrupted {
		p.What += " · INTERRUPTED"
	}
	m := []kv{}
	if !run.StartedAt.IsZero() {
		// A numeric offset, not a zone name: a record loaded from JSON has
		// only the offset, and its page must match the run's.
		m = append(m, kv{"started", run.StartedAt.Format("2006-01-02 15:04:05 -07:00")})
		if d := run.EndedAt.Sub(run.StartedAt); d > 0 {
			m = append(m, kv{"took", rows.Secs(d.Seconds())})
		}
	}
	h := run.Host
	m = append(m, kv{"host", rows.HostLine(h)})
	if c := rows.CPUGroups(h.CPUs); c != "" {
		m = append(m, kv{"cpus", c})
	}
	if s := h.Storage; s != nil {
		m = append(m, kv{"storage", storageDesc(s)})
	}
	if len(run.Tool.Args) > 0 {
		m = append(m, kv{"command", "perfsleuth " + units.ShellJoin(run.Tool.Args)})
	}
	p.Meta = m

	if v := run.Verdict; v != nil {
		vv := &verdictView{Primary: knownCategory(v.Primary), Secondary: knownCategory(v.Secondary), Summary: v.Summary,
			Conclusion: v.Conclusion, Bottleneck: v.Bottleneck}
		for _, s := range rows.Sensitivity(v) {
			vv.Sensitivity = append(vv.Sensitivity, sensView{Resource: s.Resource, Class: s.Class,
				Text: fmt.Sprintf("%s changed the result %s [%s, %s]", s.Condition, rows.Pct(s.Change), rows.Pct(s.Interval[0]), rows.Pct(s.Interval[1]))})
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

func storageDesc(s *model.Storage) string {
	desc := rows.StorageDesc(s)
	if s.MountPoint != "" {
		desc += "; mounted on " + s.MountPoint + " (" + s.MountOptions + ")"
	}
	return desc
}
