package report

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/perfsleuth/perfsleuth/internal/compare"
	"github.com/perfsleuth/perfsleuth/internal/model"
)

// CompareTerminal renders a comparison for an 80-column terminal, in the
// order a conclusion needs: what makes the runs not comparable first, then
// the headline and its significance, the time accounting side by side, the
// measured differences, and the most likely cause.
func CompareTerminal(c *compare.Comparison, o Options) []byte {
	d := &doc{color: o.Color}
	d.line("perfsleuth compare · B against A")
	d.compareRuns(c)
	d.comparability(c)
	d.compareHeadline(c.Headline)
	d.compareAccounting(c)
	d.compareDifferences(c)
	d.compareExplanation(c.Explanation)
	return d.b.Bytes()
}

// CompareJSON renders a comparison as indented JSON.
func CompareJSON(c *compare.Comparison) ([]byte, error) {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

func (d *doc) compareRuns(c *compare.Comparison) {
	for _, s := range []struct {
		name string
		r    compare.RunRef
	}{{"A", c.A}, {"B", c.B}} {
		d.blank()
		d.wrapped("  "+s.name+"  ", "     ", s.r.Description)
		from := fmt.Sprintf("%s on %s, %s", s.r.Verb, orDash(s.r.Hostname), s.r.StartedAt.UTC().Format("2006-01-02 15:04 UTC"))
		if s.r.Path != "" {
			from += " (" + s.r.Path + ")"
		}
		d.wrapped("     ", "     ", from)
	}
}

func (d *doc) comparability(c *compare.Comparison) {
	groups := []struct {
		severity, title, mark, color string
	}{
		{compare.NotComparable, "not comparable like for like: the difference may come from these alone", "✗", ansiRed},
		{compare.KeepInMind, "differs, keep in mind", "~", ansiYellow},
	}
	for _, g := range groups {
		first := true
		for _, is := range c.Issues {
			if is.Severity != g.severity {
				continue
			}
			if first {
				d.heading(g.title)
				first = false
			}
			d.wrapped(fmt.Sprintf("  %s %-22s A ", d.paint(g.color, g.mark), fit(is.Aspect, 22)), strings.Repeat(" ", 29), is.A)
			d.wrapped(fmt.Sprintf("    %-22s B ", ""), strings.Repeat(" ", 29), is.B)
			d.wrapped("      ", "      ", is.Why)
		}
	}
	if len(c.Issues) == 0 {
		d.heading("comparable: the same settings, host, file system and observer")
	}
}

func (d *doc) compareHeadline(h compare.Headline) {
	m := h.Measure
	better := "higher is better"
	if !m.HigherIsBetter {
		better = "lower is better"
	}
	switch {
	case h.MeasureB != nil:
		d.heading(fmt.Sprintf("headline: A %s, B %s", orDash(m.Name), orDash(h.MeasureB.Name)))
	case m.Name == "":
		d.heading("headline")
	default:
		d.heading(fmt.Sprintf("headline: %s, %s", m.Name, better))
	}
	value := func(m model.Measure, v compare.Value) string {
		switch {
		case len(v.Runs) == 0:
			return "-"
		case m.Unit == "s":
			return secs(v.Median)
		}
		return rate(v.Median)
	}
	mb := m
	if h.MeasureB != nil {
		mb = *h.MeasureB
	}
	noise := func(v compare.Value) string {
		if v.Noise == nil {
			if len(v.Runs) == 0 {
				return "-"
			}
			return "unknown"
		}
		return fmt.Sprintf("±%.0f%%", *v.Noise*100)
	}
	row := "  %-8s %14s %14s  %s"
	d.row(row, "", "A", "B", "")
	change := ""
	if h.Significance != compare.NotComparableMeasure {
		change = "B " + h.Words
		if strings.Contains(h.Words, "x ") {
			change += " (" + pct(h.Change) + ")"
		}
	}
	d.row(row, "median", value(m, h.A), value(mb, h.B), change)
	d.row(row, "runs", fmt.Sprint(len(h.A.Runs)), fmt.Sprint(len(h.B.Runs)), "")
	d.row(row, "noise", noise(h.A), noise(h.B), "")
	for _, s := range []struct {
		name string
		v    compare.Value
	}{{"A", h.A}, {"B", h.B}} {
		if len(s.v.Runs) > 1 {
			var runs []string
			for _, r := range s.v.Runs {
				if m.Unit == "s" {
					runs = append(runs, secs(r))
				} else {
					runs = append(runs, rate(r))
				}
			}
			d.wrapped(fmt.Sprintf("  %s's runs ", s.name), "          ", strings.Join(runs, " ")+" ("+s.v.From+")")
		}
	}
	answer := map[string]string{
		compare.Significant:          d.paint(ansiBold, "yes"),
		compare.NotSignificant:       "no",
		compare.Unknown:              "unknown",
		compare.NotComparableMeasure: "no change to compute",
	}[h.Significance]
	d.wrapped("  beyond the noise? ", "    ", answer+": "+h.Reason)
	for _, a := range h.Advice {
		d.wrapped("    -> ", "       ", a)
	}
}

// compareAccounting draws the time accounting of both runs as bars, one
// pair per category: the picture of where each run's time went.
func (d *doc) compareAccounting(c *compare.Comparison) {
	var rows []compare.Difference
	for _, x := range c.Differences {
		if x.Group == compare.GroupAccounting {
			rows = append(rows, x)
		}
	}
	if len(rows) == 0 {
		return
	}
	d.heading("where the time goes, share of the busy threads' time")
	const width = 40
	bar := func(v float64) string {
		n := int(v*width + 0.5)
		return strings.Repeat("#", n) + strings.Repeat(" ", width-n)
	}
	for _, x := range rows {
		mark := " "
		if x.Differs {
			mark = d.paint(ansiRed, "*")
		}
		d.line("  %s %-13s A %s %4.0f%%", mark, x.Name, bar(x.A), x.A*100)
		d.line("    %-13s B %s %4.0f%%", "", bar(x.B), x.B*100)
	}
	if rows[0].Note != "" {
		d.wrapped("  - ", "    ", rows[0].Note)
	} else {
		d.wrapped("  (", "   ", "* marks a share that "+rows[0].Rule+")")
	}
}

// compareDifferences lists the measured quantities beyond their thresholds,
// by group; the JSON has every row compared.
func (d *doc) compareDifferences(c *compare.Comparison) {
	var differs []compare.Difference
	compared := 0
	for _, x := range c.Differences {
		if x.Group == compare.GroupAccounting {
			continue
		}
		compared++
		if x.Differs {
			differs = append(differs, x)
		}
	}
	if compared == 0 {
		return
	}
	if len(differs) == 0 {
		d.heading("what differs: nothing beyond its threshold")
		d.wrapped("  ", "  ", fmt.Sprintf("%d measures compared (syncs, page cache, concurrency, context switches, block requests); every one is in --json, the thresholds in docs/compare.md", compared))
		return
	}
	d.heading("what differs beyond its threshold (docs/compare.md)")
	const row = "    %-38s %10s %10s  %s"
	group := ""
	for _, x := range differs {
		if x.Group != group {
			group = x.Group
			d.line("  %-40s %10s %10s", group, "A", "B")
		}
		d.line(row, fit(x.Name, 38), x.Format(x.A), x.Format(x.B), Factor(x))
	}
	d.line("  %d of %d measures compared differ; the rest and every rule are in --json", len(differs), compared)
}

// row prints a table row without the padding of its empty last columns.
func (d *doc) row(format string, args ...any) {
	d.line("%s", strings.TrimRight(fmt.Sprintf(format, args...), " "))
}

// Factor says how far apart a row's values are: points for shares and
// ratios, else a factor, "none in A/B/either" where one side is zero.
func Factor(x compare.Difference) string {
	switch {
	case x.Unit == compare.UnitShare || x.Unit == compare.UnitRatio:
		pts := math.Round((x.B - x.A) * 100)
		if pts == 0 {
			pts = 0 // a negative zero, -0.3 rounded, would print "-0"
		}
		return fmt.Sprintf("%+.0f points", pts)
	case x.A == 0 && x.B == 0:
		return "none in either"
	case x.A == 0:
		return "none in A"
	case x.B == 0:
		return "none in B"
	case x.B >= x.A:
		return fmt.Sprintf("%s more", timesWord(x.B/x.A))
	}
	return fmt.Sprintf("%s less", timesWord(x.A/x.B))
}

func timesWord(f float64) string {
	if f >= 10 {
		return fmt.Sprintf("%.0fx", f)
	}
	return fmt.Sprintf("%.1fx", f)
}

func (d *doc) compareExplanation(e compare.Explanation) {
	d.heading("why")
	d.wrapped("  ", "  ", e.Summary)
	if e.Basis != "" && len(e.Causes) > 0 {
		d.wrapped("  ", "  ", "("+e.Basis+")")
	}
	for i, x := range e.Causes {
		if i > 0 {
			d.wrapped(fmt.Sprintf("  %d. ", i+1), "     ", x.Summary)
		} else {
			d.line("  1. %s, accounting for %.0f%% of the difference", x.Name, x.AccountsFor*100)
		}
		for _, ev := range x.Evidence {
			d.wrapped("       - ", "         ", ev)
		}
	}
	for _, n := range e.Notes {
		d.wrapped("  - ", "    ", n)
	}
}
