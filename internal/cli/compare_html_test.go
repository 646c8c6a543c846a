package cli_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/perfsleuth/perfsleuth/internal/compare"
	"github.com/perfsleuth/perfsleuth/internal/htmlreport"
	"github.com/perfsleuth/perfsleuth/internal/model"
)

// compare --html writes the comparison's page and still prints the
// terminal view; the page is the one the renderer makes of the comparison,
// and with --json as well, of the very comparison the JSON holds.
func TestCompareHTMLWritesThePage(t *testing.T) {
	work := t.TempDir()
	a, b := copyRecord(t, work, "compare-sync-a"), copyRecord(t, work, "compare-sync-b")
	page := filepath.Join(work, "cmp.html")
	r := run(t, work, "compare", a, b, "--html", page)
	if r.code != 0 {
		t.Fatalf("compare --html failed (%d): %s", r.code, r.stderr)
	}
	if !strings.HasPrefix(r.stdout, "perfsleuth compare · B against A") {
		t.Errorf("compare --html should still print the terminal view; stdout:\n%s", r.stdout)
	}
	got, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<!DOCTYPE html>", `<section id="comparability"`, "sync behaviour", `data-chart="time-compare"`} {
		if !bytes.Contains(got, []byte(want)) {
			t.Errorf("the page lacks %q", want)
		}
	}
	ra, err := model.Load(a)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := model.Load(b)
	if err != nil {
		t.Fatal(err)
	}
	c := compare.Compare(ra, rb)
	c.A.Path, c.B.Path = a, b
	if want, _ := htmlreport.RenderCompare(c); !bytes.Equal(got, want) {
		t.Errorf("the page is not the rendering of the comparison (%d bytes, want %d)", len(got), len(want))
	}

	both, cmp := filepath.Join(work, "both.html"), filepath.Join(work, "cmp.json")
	if r := run(t, work, "compare", "--json", cmp, "--html", both, a, b); r.code != 0 {
		t.Fatalf("compare --json --html failed (%d): %s", r.code, r.stderr)
	}
	raw, err := os.ReadFile(cmp)
	if err != nil {
		t.Fatal(err)
	}
	var saved compare.Comparison
	if err := json.Unmarshal(raw, &saved); err != nil {
		t.Fatal(err)
	}
	fromJSON, err := htmlreport.RenderCompare(&saved)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(both); !bytes.Equal(got, fromJSON) {
		t.Errorf("the page and the JSON were not written from the same comparison (%d bytes, from the JSON %d)", len(got), len(fromJSON))
	}
	if l := listing(t, work); !slices.Equal(l, []string{"both.html", "cmp.html", "cmp.json", "compare-sync-a.json", "compare-sync-b.json"}) {
		t.Errorf("left in the directory: %v, want the records, the pages and the JSON", l)
	}
}

// A bad --html is refused before any record is loaded: with a record that
// does not exist, the error is still about --html, and nothing is written.
func TestCompareHTMLFlagErrors(t *testing.T) {
	work := t.TempDir()
	a, b := copyRecord(t, work, "compare-sync-a"), copyRecord(t, work, "compare-sync-b")
	missing := filepath.Join(work, "missing.json")
	before, _ := os.ReadFile(a)
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"html dir does not exist", []string{"compare", missing, b, "--html", "/nonexistent/cmp.html"}, "--html /nonexistent/cmp.html: directory /nonexistent is not writable"},
		{"html to stdout", []string{"compare", missing, b, "--html", "-"}, "--html needs a file name"},
		{"html over the json", []string{"compare", "--json", "same", "--html", "same", missing, b}, "its own file"},
		{"html over record A", []string{"compare", a, b, "--html", a}, "is run record A"},
		{"html over record B", []string{"compare", a, b, "--html", b}, "is run record B"},
		{"json over record B", []string{"compare", a, b, "--json", b}, "--json " + b + " is run record B"},
	} {
		t.Run(c.name, func(t *testing.T) {
			line := oneError(t, run(t, work, c.args...))
			if !strings.Contains(line, c.want) {
				t.Errorf("error %q does not mention %q", line, c.want)
			}
			if l := listing(t, work); !slices.Equal(l, []string{"compare-sync-a.json", "compare-sync-b.json"}) {
				t.Errorf("left behind: %v", l)
			}
		})
	}
	if after, _ := os.ReadFile(a); !bytes.Equal(before, after) {
		t.Error("record A changed")
	}
}
