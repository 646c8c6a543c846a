// Package htmlreport renders a model.Run as one self-contained HTML page:
// the verdict and findings first, then the charts and tables behind them,
// in the order the terminal report shows them. RenderCompare does the same
// for a comparison of two runs (compare.go), in the order of compare's
// terminal view. The rows of every table come from report/rows, as the
// terminal's do: this package only lays them out.
//
// Self-contained means nothing is fetched to view it: the styles and the one
// small script (flame-graph zoom) are inline, the charts are SVG drawn here
// in Go from the record's numbers, and a Content-Security-Policy that allows
// only that script and that style (by hash) and no network at all is part of
// the page. Everything from the workload (paths, command lines, thread
// names, stack frames) is escaped: by html/template in the page, by esc in
// the charts, and the policy stops any script that escaping missed.
//
// The chart functions (StackedBars, Histogram, LineChart, IntervalChart,
// FlameGraph) take plain numbers and strings and return SVG, so that a page
// that sets two runs side by side (the comparison page) can draw the same
// charts on shared scales.
package htmlreport

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"strings"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/report/rows"
)

//go:embed templates/report.html.tmpl templates/compare.html.tmpl templates/blocks.html.tmpl
//go:embed templates/style.css templates/compare.css templates/zoom.js
var assets embed.FS

var (
	pageTmpl = parsePage("report.html.tmpl")
	styleCSS = mustRead("templates/style.css") + categoryCSS()
	zoomJS   = mustRead("templates/zoom.js")
)

// parsePage parses a page's template with the section blocks every page
// shares.
func parsePage(name string) *template.Template {
	return template.Must(template.New(name).Funcs(template.FuncMap{"path": breakablePath}).
		ParseFS(assets, "templates/"+name, "templates/blocks.html.tmpl"))
}

func mustRead(name string) string {
	b, err := assets.ReadFile(name)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// breakablePath escapes a path and lets the browser break it after a
// slash (<wbr>), instead of anywhere in a name.
func breakablePath(p string) template.HTML {
	parts := strings.Split(p, "/")
	for i := range parts {
		parts[i] = template.HTMLEscapeString(parts[i])
	}
	return template.HTML(strings.Join(parts, "/<wbr>"))
}

// categoryCSS gives each category and experiment class its colour as a CSS
// class, from the same tables the charts use.
func categoryCSS() string {
	var b strings.Builder
	for _, c := range model.Categories {
		fmt.Fprintf(&b, ".cat-%s{background:%s;color:%s}\n", c, CategoryColor(c), textOn(CategoryColor(c)))
	}
	for _, c := range []string{"sensitive", "insensitive", "inconclusive"} {
		fmt.Fprintf(&b, ".cls-%s{background:%s;color:#fff}\n", c, ClassColor(c))
	}
	return b.String()
}

// csp is the run page's policy: its own style and script.
func csp() string { return policy(styleCSS, zoomJS) }

// policy allows a page's own style and script, by hash, and nothing else:
// no network, no other script, no inline event handler. A page without a
// script (script "") allows none.
func policy(style, script string) string {
	hash := func(s string) string {
		sum := sha256.Sum256([]byte(s))
		return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
	}
	scripts := "'none'"
	if script != "" {
		scripts = hash(script)
	}
	return "default-src 'none'; img-src data:; style-src " + hash(style) + "; script-src " + scripts +
		"; base-uri 'none'; form-action 'none'"
}

// Render returns the HTML page of a run.
func Render(run *model.Run) ([]byte, error) {
	p := build(run)
	var buf bytes.Buffer
	if err := pageTmpl.Execute(&buf, p); err != nil {
		return nil, fmt.Errorf("render html report: %w", err)
	}
	return buf.Bytes(), nil
}

// Save renders the run and writes it to path atomically (a temporary file
// in the same directory, then a rename), so that an interrupted write
// never leaves half a page behind.
func Save(run *model.Run, path string) error {
	b, err := Render(run)
	if err != nil {
		return err
	}
	return model.WriteAtomic(path, b)
}

// page is what the template shows.
type page struct {
	CSP       string
	CSS       template.CSS
	Script    template.JS
	Verb      string
	What      string
	Meta      []kv
	Verdict   *verdictView
	NoVerdict string
	Findings  []findingView
	NoFind    string
	Warnings  []string
	Sections  []*section
	Footer    string
}

type kv struct{ K, V string }

type verdictView struct {
	Primary, Secondary string
	Summary            string
	Conclusion         string
	Bottleneck         string
	Sensitivity        []sensView
	Chart              template.HTML
	ChartNote          string
}

type sensView struct{ Resource, Class, Text string }

type findingView struct {
	ID, Severity, Summary string
	Evidence              []string
}

// section is one part of the page; Why, when set, says in one line why it
// has no data.
type section struct {
	ID, Title string
	Why       string
	Blocks    []block
}

// block is one piece of a section; Kind picks how the template shows it.
type block struct {
	Kind  string // "h3", "p", "why", "warn", "kv", "settings", "list", "table", "figs", "code"
	Text  string
	KV    []kv
	Items []string
	Table *table
	Figs  []figure
}

type table struct {
	Head []string
	// Num marks the columns to right-align (numbers).
	Num  []bool
	Rows [][]cell
	Foot string
}

type cell struct {
	Text string
	// Class styles the cell ("mono", "cat-cpu", ...).
	Class string
	Tip   string
	// Path lets a long path break after its slashes only.
	Path bool
}

type figure struct {
	Caption, Sub string
	Chart        template.HTML
	// Wide figures take the whole row of a grid.
	Wide bool
}

func (s *section) h3(t string)     { s.Blocks = append(s.Blocks, block{Kind: "h3", Text: t}) }
func (s *section) p(t string)      { s.Blocks = append(s.Blocks, block{Kind: "p", Text: t}) }
func (s *section) why(t string)    { s.Blocks = append(s.Blocks, block{Kind: "why", Text: t}) }
func (s *section) warn(t string)   { s.Blocks = append(s.Blocks, block{Kind: "warn", Text: t}) }
func (s *section) kvs(k []kv)      { s.Blocks = append(s.Blocks, block{Kind: "kv", KV: k}) }
func (s *section) settings(k []kv) { s.Blocks = append(s.Blocks, block{Kind: "settings", KV: k}) }
func (s *section) list(items []string) {
	s.Blocks = append(s.Blocks, block{Kind: "list", Items: items})
}
func (s *section) table(t *table)   { s.Blocks = append(s.Blocks, block{Kind: "table", Table: t}) }
func (s *section) figs(f ...figure) { s.Blocks = append(s.Blocks, block{Kind: "figs", Figs: f}) }
func (s *section) code(lines []string) {
	s.Blocks = append(s.Blocks, block{Kind: "code", Items: lines})
}

func (s *section) listIf(items []string) {
	if len(items) > 0 {
		s.list(items)
	}
}

// build turns the run into the page, section by section in the terminal
// report's order.
func build(run *model.Run) *page {
	p := &page{CSP: csp(), CSS: template.CSS(styleCSS), Script: template.JS(zoomJS)}
	header(p, run)
	p.Sections = []*section{
		workloadSection(run),
		accountingSection(run),
		stacksSection(run),
		experimentsSection(run),
		storageSection(run),
		observationSection(run),
	}
	p.Warnings = run.Warnings
	p.Footer = fmt.Sprintf("%s %s · run record schema_version %d · this page loads nothing from the network",
		rows.OrDash(run.Tool.Name), rows.OrDash(run.Tool.Version), run.SchemaVersion)
	return p
}
