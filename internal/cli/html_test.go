package cli_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestHTMLPageFromTheRunAndFromTheRecord: observe --html writes the page
// beside the terminal report, report --html writes the same page from the
// saved record and prints nothing, and diagnose has the flag too.
func TestHTMLPageFromTheRunAndFromTheRecord(t *testing.T) {
	work := t.TempDir()
	rec, page := filepath.Join(work, "run.json"), filepath.Join(work, "run.html")
	r := run(t, work, "observe", "--interval", "100ms", "--json", rec, "--html", page, "--",
		"sh", "-c", "dd if=/dev/zero of=x bs=1M count=8 2>/dev/null; sleep 0.4; rm x")
	if r.code != 0 {
		t.Fatalf("observe --html failed (%d): %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "perfsleuth observe") {
		t.Errorf("observe --html should still print the terminal report (on stderr: the command owns stdout):\n%s", r.stderr)
	}
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<!DOCTYPE html>", `<section id="verdict"`, `data-chart="timeline-cpu-busy"`, "command: sh -c &#39;dd if=/dev/zero"} {
		if !bytes.Contains(html, []byte(want)) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if l := listing(t, work); !slices.Equal(l, []string{"run.html", "run.json"}) {
		t.Errorf("left in the directory: %v, want only the record and the page", l)
	}

	again := filepath.Join(work, "again.html")
	r = run(t, work, "report", rec, "--html", again)
	if r.code != 0 || r.stdout != "" || r.stderr != "" {
		t.Fatalf("report --html: status %d, stdout %q, stderr %q; want 0 and silence", r.code, r.stdout, r.stderr)
	}
	got, err := os.ReadFile(again)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, html) {
		t.Errorf("report --html renders the record differently from the run's page (%d bytes, the run's %d)", len(got), len(html))
	}

	quick := filepath.Join(work, "quick.html")
	if r := run(t, work, "diagnose", "--quick", "--html", quick, "--", "true"); r.code != 0 {
		t.Fatalf("diagnose --quick --html failed (%d): %s", r.code, r.stderr)
	}
	if fi, err := os.Stat(quick); err != nil || fi.Size() == 0 {
		t.Errorf("diagnose --html wrote no page: %v", err)
	}
}

func TestHTMLFlagErrors(t *testing.T) {
	work := t.TempDir()
	rec := filepath.Join(work, "run.json")
	if r := run(t, work, "observe", "--json", rec, "--", "true"); r.code != 0 {
		t.Fatalf("observe failed (%d): %s", r.code, r.stderr)
	}
	before, _ := os.ReadFile(rec)
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		// Checked before the workload runs: nothing is left behind.
		{"html dir not writable", []string{"observe", "--html", "/nonexistent/x.html", "--", "true"}, "--html /nonexistent/x.html"},
		{"html to stdout", []string{"observe", "--html", "-", "--", "true"}, "needs a file name"},
		{"html over the json", []string{"observe", "--json", "same", "--html", "same", "--", "true"}, "its own file"},
		{"diagnose html dir", []string{"diagnose", "--quick", "--html", "/nonexistent/x.html", "--", "true"}, "--html"},
		{"report html over its record", []string{"report", rec, "--html", rec}, "its own file"},
		{"report html dir", []string{"report", rec, "--html", "/nonexistent/x.html"}, "not writable"},
	} {
		t.Run(c.name, func(t *testing.T) {
			line := oneError(t, run(t, work, c.args...))
			if !strings.Contains(line, c.want) {
				t.Errorf("error %q does not mention %q", line, c.want)
			}
			if l := listing(t, work); !slices.Equal(l, []string{"run.json"}) {
				t.Errorf("left behind: %v", l)
			}
		})
	}
	if after, _ := os.ReadFile(rec); !bytes.Equal(before, after) {
		t.Error("the record changed")
	}
}
