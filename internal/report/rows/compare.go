package rows

import (
	"fmt"
	"math"
	"strings"

	"github.com/perfsleuth/perfsleuth/internal/compare"
	"github.com/perfsleuth/perfsleuth/internal/model"
)

// Comparable is what two runs share when nothing about them differs.
const Comparable = "the same settings, host, file system and observer"

// RunRow is one side of a comparison.
type RunRow struct {
	Side, What string
	// From is "VERB on HOST, DATE UTC"; Path the record's file, if known.
	From, Path string
	// Command is the perfsleuth command line that made it, if known.
	Command string
}

// Runs describes both sides, A first.
func Runs(c *compare.Comparison) []RunRow {
	var out []RunRow
	for _, s := range []struct {
		side string
		r    compare.RunRef
	}{{"A", c.A}, {"B", c.B}} {
		r := RunRow{Side: s.side, What: s.r.Description, Path: s.r.Path,
			From: fmt.Sprintf("%s on %s, %s", s.r.Verb, OrDash(s.r.Hostname), s.r.StartedAt.UTC().Format("2006-01-02 15:04 UTC"))}
		if len(s.r.Args) > 0 {
			r.Command = "perfsleuth " + strings.Join(s.r.Args, " ")
		}
		out = append(out, r)
	}
	return out
}

// Issues splits what differs around the runs: what makes them not
// comparable like for like, and the rest, to keep in mind.
func Issues(c *compare.Comparison) (notComparable, keep []compare.Issue) {
	for _, is := range c.Issues {
		if is.Severity == compare.NotComparable {
			notComparable = append(notComparable, is)
		} else {
			keep = append(keep, is)
		}
	}
	return notComparable, keep
}

// Headline is the measure on both sides and the change between them.
type Headline struct {
	// MedianA and MedianB are each side's median, "-" without runs.
	MedianA, MedianB string
	RunsA, RunsB     int
	// NoiseA and NoiseB are each side's noise, "unknown" from too few
	// runs, "-" without runs.
	NoiseA, NoiseB string
	// Runs lists the runs of each side that has more than one.
	Runs []RunList
	// Change says it in words, "B 2.1x faster (+110%)"; "" when there is
	// no change to compute.
	Change string
	// Answer says whether the change is beyond the noise: yes, no,
	// unknown, no change to compute.
	Answer string
	// Machine says how the machine's own speed (the CPU canary timed
	// before each run) moved from A's runs to B's; "" when not timed.
	Machine string
}

// RunList is one side's runs, and which runs they are.
type RunList struct {
	Side string
	Runs []string
	From string
}

var answers = map[string]string{
	compare.Significant:          "yes",
	compare.NotSignificant:       "no",
	compare.Unknown:              "unknown",
	compare.NotComparableMeasure: "no change to compute",
}

// HeadlineOf builds the headline's rows. A side's values are in its own
// measure's unit: seconds (Secs) or a rate (Rate).
func HeadlineOf(h compare.Headline) Headline {
	mb := h.Measure
	if h.MeasureB != nil {
		mb = *h.MeasureB
	}
	value := func(m model.Measure, v float64) string {
		if m.Unit == "s" {
			return Secs(v)
		}
		return Rate(v)
	}
	median := func(m model.Measure, x compare.Value) string {
		if len(x.Runs) == 0 {
			return "-"
		}
		return value(m, x.Median)
	}
	noise := func(x compare.Value) string {
		switch {
		case x.Noise != nil:
			return Noise(*x.Noise)
		case len(x.Runs) == 0:
			return "-"
		}
		return "unknown"
	}
	out := Headline{MedianA: median(h.Measure, h.A), MedianB: median(mb, h.B), RunsA: len(h.A.Runs), RunsB: len(h.B.Runs),
		NoiseA: noise(h.A), NoiseB: noise(h.B), Answer: answers[h.Significance]}
	if out.Answer == "" {
		out.Answer = h.Significance
	}
	for _, s := range []struct {
		side string
		m    model.Measure
		x    compare.Value
	}{{"A", h.Measure, h.A}, {"B", mb, h.B}} {
		if len(s.x.Runs) > 1 {
			l := RunList{Side: s.side, From: s.x.From}
			for _, r := range s.x.Runs {
				l.Runs = append(l.Runs, value(s.m, r))
			}
			out.Runs = append(out.Runs, l)
		}
	}
	if h.Significance != compare.NotComparableMeasure && h.Words != "" {
		out.Change = "B " + h.Words
		if strings.Contains(h.Words, "x ") {
			out.Change += " (" + Pct(h.Change) + ")"
		}
	}
	if m := h.Machine; m != nil {
		out.Machine = fmt.Sprintf("a fixed CPU loop timed before each run: %s in B's runs, interval [%s, %s]", Pct(m.Change), Pct(m.Interval[0]), Pct(m.Interval[1]))
	}
	return out
}

// AccountingShares is the time accounting's rows of a comparison: each
// category's share of the busy threads' time in A and in B.
func AccountingShares(c *compare.Comparison) []compare.Difference {
	var out []compare.Difference
	for _, x := range c.Differences {
		if x.Group == compare.GroupAccounting {
			out = append(out, x)
		}
	}
	return out
}

// DiffRow is a measured quantity compared, formatted.
type DiffRow struct {
	compare.Difference
	// First is true on its group's first row in the list.
	First bool
	// ValueA and ValueB are the values in the row's unit; Factor how far
	// apart they are.
	ValueA, ValueB, Factor string
}

// Differences splits the measured quantities compared (the time
// accounting aside) into those beyond their thresholds and the rest.
func Differences(c *compare.Comparison) (differs, rest []compare.Difference) {
	for _, x := range c.Differences {
		switch {
		case x.Group == compare.GroupAccounting:
		case x.Differs:
			differs = append(differs, x)
		default:
			rest = append(rest, x)
		}
	}
	return differs, rest
}

// DiffRows formats differences, marking each group's first row.
func DiffRows(xs []compare.Difference) []DiffRow {
	var out []DiffRow
	group := ""
	for _, x := range xs {
		out = append(out, DiffRow{Difference: x, First: x.Group != group,
			ValueA: x.Format(x.A), ValueB: x.Format(x.B), Factor: Factor(x)})
		group = x.Group
	}
	return out
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

// CauseRow is one likely cause of the difference.
type CauseRow struct {
	compare.Cause
	Rank int
	// Share is the part of the difference it accounts for, "62%".
	Share string
	// Says is its sentence; "" for the first, which the explanation's
	// summary already says.
	Says string
}

// Causes lists the explanation's causes, and its basis in parentheses
// (only with causes: it says what they were computed from).
func Causes(e compare.Explanation) (basis string, out []CauseRow) {
	if e.Basis != "" && len(e.Causes) > 0 {
		basis = "(" + e.Basis + ")"
	}
	for i, x := range e.Causes {
		r := CauseRow{Cause: x, Rank: i + 1, Share: fmt.Sprintf("%.0f%%", x.AccountsFor*100)}
		if i > 0 {
			r.Says = x.Summary
		}
		out = append(out, r)
	}
	return basis, out
}
