package report

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/perfsleuth/perfsleuth/internal/compare"
	"github.com/perfsleuth/perfsleuth/internal/report/rows"
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
	for _, r := range rows.Runs(c) {
		d.blank()
		d.wrapped("  "+r.Side+"  ", "     ", r.What)
		from := r.From
		if r.Path != "" {
			from += " (" + r.Path + ")"
		}
		d.wrapped("     ", "     ", from)
	}
}

func (d *doc) comparability(c *compare.Comparison) {
	notComparable, keep := rows.Issues(c)
	for _, g := range []struct {
		issues             []compare.Issue
		title, mark, color string
	}{
		{notComparable, "not comparable like for like: the difference may come from these alone", "✗", ansiRed},
		{keep, "differs, keep in mind", "~", ansiYellow},
	} {
		if len(g.issues) > 0 {
			d.heading(g.title)
		}
		for _, is := range g.issues {
			d.wrapped(fmt.Sprintf("  %s %-22s A ", d.paint(g.color, g.mark), fit(is.Aspect, 22)), strings.Repeat(" ", 29), is.A)
			d.wrapped(fmt.Sprintf("    %-22s B ", ""), strings.Repeat(" ", 29), is.B)
			d.wrapped("      ", "      ", is.Why)
		}
	}
	if len(c.Issues) == 0 {
		d.heading("comparable: " + rows.Comparable)
	}
}

func (d *doc) compareHeadline(h compare.Headline) {
	m := h.Measure
	switch {
	case h.MeasureB != nil:
		d.heading(fmt.Sprintf("headline: A %s, B %s", rows.OrDash(m.Name), rows.OrDash(h.MeasureB.Name)))
	case m.Name == "":
		d.heading("headline")
	default:
		d.heading(fmt.Sprintf("headline: %s, %s", m.Name, rows.BetterWords(m)))
	}
	x := rows.HeadlineOf(h)
	row := "  %-8s %14s %14s  %s"
	d.row(row, "", "A", "B", "")
	d.row(row, "median", x.MedianA, x.MedianB, x.Change)
	d.row(row, "runs", fmt.Sprint(x.RunsA), fmt.Sprint(x.RunsB), "")
	d.row(row, "noise", x.NoiseA, x.NoiseB, "")
	for _, l := range x.Runs {
		d.wrapped(fmt.Sprintf("  %s's runs ", l.Side), "          ", strings.Join(l.Runs, " ")+" ("+l.From+")")
	}
	if x.Machine != "" {
		d.wrapped("  machine speed ", "    ", x.Machine)
	}
	answer := x.Answer
	if h.Significance == compare.Significant {
		answer = d.paint(ansiBold, answer)
	}
	d.wrapped("  beyond the noise? ", "    ", answer+": "+h.Reason)
	for _, a := range h.Advice {
		d.wrapped("    -> ", "       ", a)
	}
}

// compareAccounting draws the time accounting of both runs as bars, one
// pair per category: the picture of where each run's time went.
func (d *doc) compareAccounting(c *compare.Comparison) {
	shares := rows.AccountingShares(c)
	if len(shares) == 0 {
		return
	}
	d.heading("where the time goes, share of the busy threads' time")
	const width = 40
	bar := func(v float64) string {
		n := int(v*width + 0.5)
		return strings.Repeat("#", n) + strings.Repeat(" ", width-n)
	}
	for _, x := range shares {
		mark := " "
		if x.Differs {
			mark = d.paint(ansiRed, "*")
		}
		d.line("  %s %-13s A %s %4.0f%%", mark, x.Name, bar(x.A), x.A*100)
		d.line("    %-13s B %s %4.0f%%", "", bar(x.B), x.B*100)
	}
	if shares[0].Note != "" {
		d.wrapped("  - ", "    ", shares[0].Note)
	} else {
		d.wrapped("  (", "   ", "* marks a share that "+shares[0].Rule+")")
	}
}

// compareDifferences lists the measured quantities beyond their thresholds,
// by group; the JSON has every row compared.
func (d *doc) compareDifferences(c *compare.Comparison) {
	differs, rest := rows.Differences(c)
	compared := len(differs) + len(rest)
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
	for _, x := range rows.DiffRows(differs) {
		if x.First {
			d.line("  %-40s %10s %10s", x.Group, "A", "B")
		}
		d.line(row, fit(x.Name, 38), x.ValueA, x.ValueB, x.Factor)
	}
	d.line("  %d of %d measures compared differ; the rest and every rule are in --json", len(differs), compared)
}

// row prints a table row without the padding of its empty last columns.
func (d *doc) row(format string, args ...any) {
	d.line("%s", strings.TrimRight(fmt.Sprintf(format, args...), " "))
}

func (d *doc) compareExplanation(e compare.Explanation) {
	d.heading("why")
	d.wrapped("  ", "  ", e.Summary)
	basis, causes := rows.Causes(e)
	if basis != "" {
		d.wrapped("  ", "  ", basis)
	}
	for _, x := range causes {
		if x.Rank > 1 {
			d.wrapped(fmt.Sprintf("  %d. ", x.Rank), "     ", x.Says)
		} else {
			d.line("  1. %s, accounting for %s of the difference", x.Name, x.Share)
		}
		for _, ev := range x.Evidence {
			d.wrapped("       - ", "         ", ev)
		}
	}
	for _, n := range e.Notes {
		d.wrapped("  - ", "    ", n)
	}
}
