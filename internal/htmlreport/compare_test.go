package htmlreport

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"html"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/perfsleuth/perfsleuth/internal/compare"
	"github.com/perfsleuth/perfsleuth/internal/model"
)

// compareCase is a pair of the terminal report's real records and what the
// comparison page of the pair must hold. The pairs are the ones of the
// terminal view's golden tests (internal/report/compare_test.go):
//   - sync: observe sqlite --rows 2000, WAL+NORMAL against DELETE+FULL,
//     single runs (noise unknown), the sync calls the cause;
//   - same: diagnose --conditions baseline --repeat 5 sqlite --rows 500
//     twice, DELETE+FULL both: comparable, not significant;
//   - repeats: the same diagnose with WAL+NORMAL against the first of
//     those: significant, with an interval;
//   - kinds: fileio against sqlite: different workloads, no headline change.
type compareCase struct {
	name, a, b string
	charts     []string
	says       []string
}

var compareCases = []compareCase{
	{"sync", "compare-sync-a", "compare-sync-b",
		[]string{"headline-measure", "time-compare", "cause-time"},
		[]string{"not comparable like for like", "sync behaviour", "noise unknown", "A and B are each a single run",
			"to learn A&#39;s noise, repeat it:", "perfsleuth diagnose --conditions baseline --repeat 5 --json A-baseline.json",
			"fdatasync calls per transaction", "sync calls</strong>, accounting for 81% of the difference", "not judged: the busy threads"}},
	{"same", "compare-same-a", "compare-same-b",
		[]string{"headline-measure", "headline-change", "time-compare"},
		[]string{"the same settings, host, file system and observer", "within the noise", "[-23%, +4%]",
			"nothing beyond its threshold: 20 measures compared", "no significant difference: nothing to explain",
			"nothing else differs to keep in mind"}},
	{"repeats", "compare-repeats-a", "compare-same-a",
		[]string{"headline-measure", "headline-change", "time-compare", "cause-time"},
		[]string{"beyond the noise", "B is 47x slower (-98%), 95% interval [-98%, -97%]", "61,057 · 60,115",
			"A&#39;s noise (±15%)", "6 of 17 measures compared differ"}},
	{"kinds", "observe-fileio", "observe-sqlite",
		[]string{},
		[]string{"workload", "no change to compute", "no time accounting side by side: A has none: /proc sampling only, B eBPF",
			"involuntary switches per second", "no headline change to explain"}},
}

// comparePair compares two of the terminal report's records, with the
// paths the terminal view's golden tests give them.
func comparePair(t testing.TB, a, b string) *compare.Comparison {
	t.Helper()
	c := compare.Compare(load(t, a), load(t, b))
	c.A.Path, c.B.Path = a+".json", b+".json"
	return c
}

// compareSections are the page's sections in the order a conclusion
// needs: comparability before any number, the cause last.
var compareSections = []string{"comparability", "headline", "time", "differences", "environment", "why"}

func TestComparePagesShowTheComparisonInOrder(t *testing.T) {
	for _, cc := range compareCases {
		t.Run(cc.name, func(t *testing.T) {
			page, err := RenderCompare(comparePair(t, cc.a, cc.b))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(page, []byte("<!DOCTYPE html>")) {
				t.Errorf("page does not start with a doctype: %.40q", page)
			}
			last := -1
			for _, id := range compareSections {
				i := bytes.Index(page, []byte(`<section id="`+id+`"`))
				if i < 0 {
					t.Errorf("no section %q", id)
					continue
				}
				if i < last {
					t.Errorf("section %q is out of order", id)
				}
				last = i
			}
			if names := chartNames(page); !slices.Equal(names, cc.charts) {
				t.Errorf("charts %v, want %v", names, cc.charts)
			}
			for _, want := range cc.says {
				if !bytes.Contains(page, []byte(want)) {
					t.Errorf("the page does not say %q", want)
				}
			}
			if o, c := bytes.Count(page, []byte("<svg ")), bytes.Count(page, []byte("</svg>")); o != c {
				t.Errorf("%d <svg> opened, %d closed", o, c)
			}
			for _, svg := range strings.Split(string(page), "<svg ")[1:] {
				body, _, _ := strings.Cut(svg, "</svg>")
				if !strings.Contains(body, "<rect") && !strings.Contains(body, "<circle") {
					t.Errorf("a chart has no shapes: %.120s", body)
				}
			}
			for _, bad := range []string{"NaN", "Inf", "%!", "<script"} {
				if i := bytes.Index(page, []byte(bad)); i >= 0 {
					t.Errorf("%q on the page: ...%s...", bad, page[max(i-100, 0):min(i+40, len(page))])
				}
			}
		})
	}
}

// The first case: the sync behaviour that makes WAL+NORMAL and
// DELETE+FULL not comparable is named before the headline's numbers, and
// the cause after them.
func TestComparePageNamesTheSyncBehaviourBeforeTheHeadline(t *testing.T) {
	page, err := RenderCompare(comparePair(t, "compare-sync-a", "compare-sync-b"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(page)
	sync, median, cause := strings.Index(s, "sync behaviour"), strings.Index(s, "76,023"), strings.Index(s, "the most likely cause is")
	if sync < 0 || median < 0 || cause < 0 || !(sync < median && median < cause) {
		t.Errorf("sync behaviour at %d, A's median at %d, the cause at %d: want them in that order", sync, median, cause)
	}
}

func TestCompareGolden(t *testing.T) {
	for _, cc := range compareCases {
		t.Run(cc.name, func(t *testing.T) {
			got, err := RenderCompare(comparePair(t, cc.a, cc.b))
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "compare-"+cc.name+".html.golden")
			checkGolden(t, golden, got)
			again, _ := RenderCompare(comparePair(t, cc.a, cc.b))
			if !bytes.Equal(got, again) {
				t.Errorf("two renders of one comparison differ:\n%s", lineDiff(string(got), string(again)))
			}
		})
	}
}

// The comparison page has no script: its policy allows its own style, by
// hash, and no script at all.
func TestComparePolicyAllowsOnlyThePagesOwnStyle(t *testing.T) {
	page, err := RenderCompare(comparePair(t, "compare-repeats-a", "compare-same-a"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(page), `<meta http-equiv="Content-Security-Policy" content="`)
	meta, _, _ := strings.Cut(rest, `"`)
	meta = html.UnescapeString(meta)
	_, rest, _ = strings.Cut(string(page), "<style>")
	style, _, _ := strings.Cut(rest, "</style>")
	sum := sha256.Sum256([]byte(style))
	for _, want := range []string{"default-src 'none'", "script-src 'none'", "base-uri 'none'", "form-action 'none'",
		"style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"} {
		if !strings.Contains(meta, want) {
			t.Errorf("the policy %q lacks %q", meta, want)
		}
	}
	if strings.Contains(meta, "unsafe-inline") || strings.Contains(meta, "http") {
		t.Errorf("the policy %q allows inline code or the network", meta)
	}
	if n := strings.Count(string(page), "<script"); n != 0 {
		t.Errorf("%d <script elements, want none", n)
	}
}

func TestSaveCompareWritesAtomically(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "compare.html")
	c := comparePair(t, "compare-sync-a", "compare-sync-b")
	if err := SaveCompare(c, path); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := RenderCompare(c); !bytes.Equal(got, want) {
		t.Errorf("the saved page is not the rendered one (%d bytes, want %d)", len(got), len(want))
	}
	if err := SaveCompare(c, filepath.Join(dir, "missing", "compare.html")); err == nil {
		t.Error("saving into a directory that does not exist did not fail")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the directory holds %v, want only the page", entries)
	}
}

// A comparison of records with nothing in common (empty records, a pid
// against a command) renders, says why its sections are empty, and draws
// no NaN.
func TestSparseComparisonsRender(t *testing.T) {
	empty := &model.Run{SchemaVersion: 1, Target: model.Target{Kind: "command", Command: &model.CommandConfig{Argv: []string{"true"}}}}
	pid := &model.Run{SchemaVersion: 1, Target: model.Target{Kind: "pid", PID: &model.PIDConfig{PID: 1, Comm: "init"}}}
	for name, pair := range map[string][2]*model.Run{
		"empty":          {empty, empty},
		"pid vs command": {pid, load(t, "observe-command")},
	} {
		t.Run(name, func(t *testing.T) {
			page, err := RenderCompare(compare.Compare(pair[0], pair[1]))
			if err != nil {
				t.Fatal(err)
			}
			for _, bad := range []string{"NaN", "Inf", "%!"} {
				if i := bytes.Index(page, []byte(bad)); i >= 0 {
					t.Errorf("%q on the page: ...%s...", bad, page[max(i-100, 0):min(i+40, len(page))])
				}
			}
			for _, why := range []string{"no time accounting side by side", "nothing measured in both records"} {
				if !bytes.Contains(page, []byte(why)) {
					t.Errorf("the page does not say %q", why)
				}
			}
		})
	}
}
