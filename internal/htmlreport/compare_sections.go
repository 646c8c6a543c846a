package htmlreport

import (
	"fmt"

	"github.com/perfsleuth/perfsleuth/internal/compare"
	"github.com/perfsleuth/perfsleuth/internal/report/rows"
)

// The side-by-side sections of the comparison page: the time accounting of
// both runs, the measured quantities compared, and the conditions around
// the workload that differ.

// compareTimeSection draws both runs' time accounting as one 100% bar per
// side on one scale, and the shares as a table.
func compareTimeSection(c *compare.Comparison) *section {
	s := &section{ID: "time", Title: "Where the time goes"}
	shares := rows.AccountingShares(c)
	if len(shares) == 0 {
		s.Why = "no time accounting side by side: both records need the same accounting (observe or diagnose both, as root for eBPF)"
		for _, is := range c.Issues {
			if is.ID == "observer.source" {
				s.Why = fmt.Sprintf("no time accounting side by side: A has %s, B %s; both records need the same accounting (observe or diagnose both, as root for eBPF)", is.A, is.B)
			}
		}
		return s
	}
	var segA, segB []Segment
	var legend []LegendItem
	sumA, sumB := 0.0, 0.0
	for _, x := range shares {
		color := CategoryColor(x.Name)
		segA = append(segA, Segment{Label: x.Name, Value: x.A, Color: color})
		segB = append(segB, Segment{Label: x.Name, Value: x.B, Color: color})
		legend = append(legend, LegendItem{Label: x.Name, Color: color})
		sumA, sumB = sumA+max(x.A, 0), sumB+max(x.B, 0)
	}
	share := func(v float64) string { return fmt.Sprintf("%.0f%%", v*100) }
	s.figs(figure{Caption: "Share of the busy threads' time per category", Sub: "A above, B below, on one scale", Wide: true,
		Chart: StackedBars("time-compare", []BarRow{{Label: "A", Segments: segA}, {Label: "B", Segments: segB}},
			BarOptions{Title: "busy threads' time per category, A and B", Max: max(1, sumA, sumB), Percent: true, Legend: legend, Format: share})})
	tb := newTable("~category", "A", "B", "B against A", "~differs")
	for _, x := range rows.DiffRows(shares) {
		tb.add(cell{Text: x.Name, Class: categoryClass(x.Name)}, cell{Text: x.ValueA}, cell{Text: x.ValueB},
			cell{Text: x.Factor}, verdictCell(x.Difference))
	}
	s.table(tb.t)
	if shares[0].Note != "" {
		s.why(shares[0].Note)
	} else {
		s.p("“differs” marks a share that " + shares[0].Rule)
	}
	return s
}

// categoryClass colours a category's cell; none for a category this
// version does not know.
func categoryClass(cat string) string {
	if c := knownCategory(cat); c != "" {
		return "cat-" + c
	}
	return ""
}

// verdictCell says whether a row differs beyond its threshold.
func verdictCell(x compare.Difference) cell {
	switch {
	case x.Differs:
		return cell{Text: "differs", Class: "differs", Tip: x.Rule}
	case !x.Judged:
		return cell{Text: "not judged", Tip: x.Note}
	}
	return cell{Text: "within", Tip: x.Rule}
}

// compareDifferencesSection lists the measured quantities that differ
// beyond their thresholds, then the others compared.
func compareDifferencesSection(c *compare.Comparison) *section {
	s := &section{ID: "differences", Title: "What differs"}
	differs, rest := rows.Differences(c)
	compared := len(differs) + len(rest)
	if compared == 0 {
		s.Why = "nothing measured in both records to set side by side: syncs, page cache, concurrency, context switches and block requests need both runs observed (observe or diagnose, as root for eBPF)"
		return s
	}
	if len(differs) == 0 {
		s.p(fmt.Sprintf("nothing beyond its threshold: %d measures compared (syncs, page cache, concurrency, context switches, block requests); the thresholds are in docs/compare.md", compared))
	} else {
		s.p(fmt.Sprintf("%d of %d measures compared differ beyond their thresholds (docs/compare.md); counts are per unit of work", len(differs), compared))
		s.table(differenceTable(differs, false))
	}
	if len(rest) > 0 {
		s.h3("Within their thresholds, or too few to judge")
		s.table(differenceTable(rest, true))
	}
	return s
}

// differenceTable shows rows by group, each group named on its first row;
// hover a measure for its rule.
func differenceTable(diffs []compare.Difference, notes bool) *table {
	head := []string{"~group", "~measure", "A", "B", "B against A"}
	if notes {
		head = append(head, "~note")
	}
	tb := newTable(head...)
	for _, x := range rows.DiffRows(diffs) {
		g := ""
		if x.First {
			g = x.Group
		}
		row := []cell{{Text: g}, {Text: x.Name, Tip: x.Rule}, {Text: x.ValueA}, {Text: x.ValueB}, {Text: x.Factor}}
		if notes {
			note := x.Note
			if note == "" {
				note = "within its threshold"
			}
			row = append(row, cell{Text: note})
		}
		tb.add(row...)
	}
	return tb.t
}

// environmentSection sets side by side what differs around the workload
// and is worth keeping in mind: the machine, kernel, file system,
// observer, and settings that do not decide the result.
func environmentSection(c *compare.Comparison) *section {
	s := &section{ID: "environment", Title: "Environment and other differences"}
	_, keep := rows.Issues(c)
	if len(keep) == 0 {
		s.Why = "nothing else differs to keep in mind: the same host, kernel, file system and observer"
		return s
	}
	tb := newTable("~what differs", "~A", "~B", "~why it matters", "~id")
	for _, is := range keep {
		tb.add(cell{Text: is.Aspect}, cell{Text: is.A, Class: "mono"}, cell{Text: is.B, Class: "mono"}, cell{Text: is.Why}, cell{Text: is.ID, Class: "mono"})
	}
	s.p("differences that do not by themselves make the comparison meaningless; often the very thing compared (another machine, kernel or file system)")
	s.table(tb.t)
	return s
}
