package htmlreport

import (
	"bytes"
	"fmt"
	"html/template"
	"strings"

	"github.com/perfsleuth/perfsleuth/internal/compare"
	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/report/rows"
)

// The comparison page shows what the terminal view of compare shows
// (report.CompareTerminal), in its order: what makes the runs not
// comparable first, then the headline and whether its change is beyond the
// noise, then side by side what differs (time accounting, the measured
// differences, the environment), and last the most likely cause. It is
// built from the Comparison alone, so the terminal, the JSON and the page
// always say the same. It needs no script: its charts are SVG, their
// tooltips SVG titles, so its policy allows no script at all.

var (
	compareTmpl = parsePage("compare.html.tmpl")
	compareCSS  = styleCSS + mustRead("templates/compare.css")
)

// RenderCompare returns the HTML page of a comparison.
func RenderCompare(c *compare.Comparison) ([]byte, error) {
	var buf bytes.Buffer
	if err := compareTmpl.Execute(&buf, buildCompare(c)); err != nil {
		return nil, fmt.Errorf("render html comparison: %w", err)
	}
	return buf.Bytes(), nil
}

// SaveCompare renders the comparison and writes it to path atomically, as
// Save does for a run.
func SaveCompare(c *compare.Comparison, path string) error {
	b, err := RenderCompare(c)
	if err != nil {
		return err
	}
	return model.WriteAtomic(path, b)
}

// comparePage is what the comparison template shows.
type comparePage struct {
	CSP   string
	CSS   template.CSS
	Title string
	Runs  []runView
	// Comparable is false when an issue is not comparable; NotComparable
	// lists those issues, KeepInMind names the others (shown in full in
	// the environment section).
	Comparable     bool
	ComparableText string
	NotComparable  []compare.Issue
	KeepInMind     string
	Headline       headlineView
	Sections       []*section
	Explanation    explanationView
	Footer         string
}

// runView is one side in the header.
type runView struct {
	Side, What, From, Command string
}

type headlineView struct {
	Measure string
	// Rows are the median, runs and noise of each side.
	Rows []abRow
	// Runs lists each repeated side's runs.
	Runs     []kv
	Change   string
	SigClass string
	SigLabel string
	Answer   string
	Reason   string
	Advice   []advice
	Figs     []figure
}

type abRow struct{ K, A, B string }

// advice is one thing to run: the sentence, and the command line to copy.
type advice struct{ Text, Code string }

type explanationView struct {
	Summary, Basis string
	Causes         []causeView
	Chart          template.HTML
	ChartNote      string
	Notes          []string
}

type causeView struct {
	Rank, Name, Share, Summary string
	Evidence                   []string
}

// buildCompare turns the comparison into the page, part by part in the
// terminal view's order.
func buildCompare(c *compare.Comparison) *comparePage {
	p := &comparePage{CSP: policy(compareCSS, ""), CSS: template.CSS(compareCSS), Comparable: c.Comparable}
	p.Title = "B against A: " + c.B.Description + " against " + c.A.Description
	for _, r := range rows.Runs(c) {
		v := runView{Side: r.Side, What: r.What, From: r.From, Command: r.Command}
		if r.Path != "" {
			v.From += " · " + r.Path
		}
		p.Runs = append(p.Runs, v)
	}
	notComparable, keep := rows.Issues(c)
	p.NotComparable = notComparable
	var aspects []string
	for _, is := range keep {
		aspects = append(aspects, is.Aspect)
	}
	p.KeepInMind = strings.Join(aspects, ", ")
	if len(c.Issues) == 0 {
		p.ComparableText = rows.Comparable
	} else if len(p.NotComparable) == 0 {
		p.ComparableText = "nothing makes the runs not comparable like for like"
	}
	p.Headline = headlineOf(c.Headline)
	p.Sections = []*section{
		compareTimeSection(c),
		compareDifferencesSection(c),
		environmentSection(c),
	}
	p.Explanation = explanationOf(c.Explanation)
	p.Footer = fmt.Sprintf("perfsleuth compare · comparison schema_version %d · this page loads nothing from the network", c.SchemaVersion)
	return p
}

// significance maps a headline's significance to its pill: the colour of
// the experiment class that means the same (a real change, none, not yet
// known), and the words.
var significance = map[string]struct{ class, label string }{
	compare.Significant:          {"cls-sensitive", "beyond the noise"},
	compare.NotSignificant:       {"cls-insensitive", "within the noise"},
	compare.Unknown:              {"cls-inconclusive", "noise unknown"},
	compare.NotComparableMeasure: {"", "no change to compute"},
}

func headlineOf(h compare.Headline) headlineView {
	m := h.Measure
	mb := m
	if h.MeasureB != nil {
		mb = *h.MeasureB
	}
	var v headlineView
	switch {
	case h.MeasureB != nil:
		v.Measure = fmt.Sprintf("A measured %s, B %s: there is no change to compute", measureWords(m), measureWords(mb))
	case m.Name == "":
		v.Measure = "no measure"
	default:
		v.Measure = "measure: " + measureWords(m)
	}
	x := rows.HeadlineOf(h)
	v.Rows = []abRow{
		{"median" + unitSuffix(m, mb), x.MedianA, x.MedianB},
		{"runs", fmt.Sprint(x.RunsA), fmt.Sprint(x.RunsB)},
		{"noise", x.NoiseA, x.NoiseB},
	}
	for _, l := range x.Runs {
		v.Runs = append(v.Runs, kv{l.Side + "'s runs", strings.Join(l.Runs, " · ") + " (" + l.From + ")"})
	}
	if x.Machine != "" {
		v.Runs = append(v.Runs, kv{"machine speed", x.Machine})
	}
	v.Change = x.Change
	if x.Change != "" && h.Interval != nil {
		v.Change += fmt.Sprintf(", 95%% interval [%s, %s]", rows.Pct(h.Interval[0]), rows.Pct(h.Interval[1]))
	}
	sig, ok := significance[h.Significance]
	if !ok {
		sig.label = h.Significance
	}
	v.SigClass, v.SigLabel, v.Answer, v.Reason = sig.class, sig.label, x.Answer, h.Reason
	for _, a := range h.Advice {
		// The advice ends in the command line to run: shown as code, to
		// copy.
		if i := strings.Index(a, ": perfsleuth "); i >= 0 {
			v.Advice = append(v.Advice, advice{Text: a[:i+1], Code: a[i+2:]})
		} else {
			v.Advice = append(v.Advice, advice{Text: a})
		}
	}
	if h.MeasureB == nil && len(h.A.Runs) > 0 && len(h.B.Runs) > 0 {
		v.Figs = append(v.Figs, figure{Caption: "Each run's " + rows.OrDash(m.Name), Sub: rows.BetterWords(m), Wide: true,
			Chart: measureChart(m, h)})
		if h.Interval != nil {
			v.Figs = append(v.Figs, changeFigure(m, h))
		}
	}
	return v
}

func measureWords(m model.Measure) string {
	s := rows.OrDash(m.Name)
	if m.Unit != "" && m.Unit != m.Name {
		s += " (" + m.Unit + ")"
	}
	return s + ", " + rows.BetterWords(m)
}

// unitSuffix names the unit of the medians, when both sides share it.
func unitSuffix(a, b model.Measure) string {
	if a.Unit == "" || a.Unit != b.Unit {
		return ""
	}
	return " (" + a.Unit + ")"
}

// measureChart draws both sides' medians on one scale.
func measureChart(m model.Measure, h compare.Headline) template.HTML {
	format := func(v float64) string {
		if v == 0 {
			return "0" // the axis's origin, not "0.0"
		}
		return rows.Rate(v)
	}
	if m.Unit == "s" {
		format = durSec
	}
	const colorA, colorB = "#8a9bb0", "#2f6fbf"
	row := func(side, color string, x compare.Value) BarRow {
		return BarRow{Label: side, Note: format(x.Median), Tip: fmt.Sprintf("%s: median of %s", side, x.From),
			Segments: []Segment{{Label: "median " + m.Name, Value: x.Median, Color: color}}}
	}
	return StackedBars("headline-measure", []BarRow{row("A", colorA, h.A), row("B", colorB, h.B)},
		BarOptions{Title: "each side's median " + m.Name, Max: max(h.A.Median, h.B.Median), Format: format})
}

// changeFigure draws the change with its interval beside A's own runs, each
// run against A's median, over A's noise band.
func changeFigure(m model.Measure, h compare.Headline) figure {
	base := h.A.Median
	change := rows.ChangeFrom(m, base)
	var pa, pb []float64
	for _, r := range h.A.Runs {
		pa = append(pa, change(r))
	}
	for _, r := range h.B.Runs {
		pb = append(pb, change(r))
	}
	class := "insensitive"
	if h.Significance == compare.Significant {
		class = "sensitive"
	}
	noiseA, sub := 0.0, "median change with its 95% bootstrap interval, each run as a ring against A's median; left of zero B is slower"
	if h.A.Noise != nil {
		noiseA = *h.A.Noise
		sub += fmt.Sprintf("; grey band: A's noise (±%.0f%%)", noiseA*100)
	}
	if h.B.Noise != nil {
		sub += fmt.Sprintf("; B's noise ±%.0f%%", *h.B.Noise*100)
	}
	ivs := []IntervalRow{
		{Label: "A", Points: pa, Note: "A's runs against their median"},
		{Label: "B", Change: h.Change, Lo: h.Interval[0], Hi: h.Interval[1], Points: pb, Class: class,
			Note: fmt.Sprintf("%s [%s, %s] %s", rows.Pct(h.Change), rows.Pct(h.Interval[0]), rows.Pct(h.Interval[1]), significance[h.Significance].label)},
	}
	return figure{Caption: "Change of B against A", Sub: sub, Wide: true,
		Chart: IntervalChart("headline-change", ivs, IntervalOptions{Title: "change of B against A", Noise: noiseA})}
}

func explanationOf(e compare.Explanation) explanationView {
	v := explanationView{Summary: e.Summary, Notes: e.Notes}
	basis, causes := rows.Causes(e)
	v.Basis = basis
	var bars []BarRow
	longest := 0.0
	for _, x := range causes {
		v.Causes = append(v.Causes, causeView{Rank: fmt.Sprint(x.Rank), Name: x.Name, Share: x.Share, Summary: x.Says, Evidence: x.Evidence})
		color := causeColor(x.ID)
		for _, side := range []struct {
			name string
			sec  float64
		}{{"A", x.ASec}, {"B", x.BSec}} {
			bars = append(bars, BarRow{Label: x.Name + " · " + side.name, Note: durSec(side.sec),
				Segments: []Segment{{Label: side.name, Value: side.sec, Color: color}}})
			longest = max(longest, side.sec)
		}
	}
	if longest > 0 {
		v.Chart = StackedBars("cause-time", bars, BarOptions{Title: "each cause's time in A and in B", Max: longest, Format: durSec})
		v.ChartNote = fmt.Sprintf("for B's amount of work; B took %s longer in all", durSec(e.TimeDiffSec))
		if e.TimeDiffSec < 0 {
			v.ChartNote = fmt.Sprintf("for B's amount of work; B took %s less in all", durSec(-e.TimeDiffSec))
		}
	}
	return v
}

// causeColor colours a cause as its category; the sync calls as
// storage-sync, whose place they take.
func causeColor(id string) string {
	if id == "sync" {
		return CategoryColor(model.CatStorageSync)
	}
	return CategoryColor(id)
}
