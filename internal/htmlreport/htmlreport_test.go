package htmlreport

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"flag"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

var update = flag.Bool("update", false, "rewrite the golden files from the current renderer")

var chartAttr = regexp.MustCompile(`data-chart="([^"]*)"`)

// chartNames lists the data-chart names of a page, in order.
func chartNames(page []byte) []string {
	var out []string
	for _, m := range chartAttr.FindAllSubmatch(page, -1) {
		out = append(out, string(m[1]))
	}
	return out
}

// pageCase is a record and what its page must hold: the charts it must draw
// and, for the sections it has no data for, the line that says why.
type pageCase struct {
	name   string
	run    func(testing.TB) *model.Run
	charts []string
	why    []string
}

// cases covers every fixture, and the full record for the sections no saved
// record has yet (on-CPU stacks, storage).
func cases() []pageCase {
	fixture := func(name string) func(testing.TB) *model.Run {
		return func(t testing.TB) *model.Run { return load(t, name) }
	}
	timelines := []string{"timeline-cpu-busy", "timeline-cpu-iowait", "timeline-process-cpu", "timeline-process-ctxsw",
		"timeline-disk-vda-iops", "timeline-disk-vda-util", "timeline-disk-vda-await"}
	return []pageCase{
		{"observe-fileio", fixture("observe-fileio"),
			append([]string{"latency-read", "latency-write", "latency-fsync"}, timelines...),
			[]string{"no time accounting in this record", "no stacks:", "no experiments:", "no storage view:"}},
		{"bench-sqlite", fixture("bench-sqlite"),
			[]string{"latency-insert", "latency-update", "latency-select", "latency-delete"},
			[]string{"no verdict: this run was only measured", "no findings: the rules need an observed run",
				"no time accounting: this run was only measured", "no /proc observation:", "no experiments:"}},
		{"observe-command", fixture("observe-command"), nil,
			[]string{"no latency histogram: a command", "no timeline: 1 sample(s)", "no storage view:"}},
		{"diagnose-lock", fixture("diagnose-lock"),
			[]string{"time-total", "time-threads"}, []string{"syscalls not counted", "no on-CPU samples", "no experiments:"}},
		{"observe-sqlite", fixture("observe-sqlite"),
			append([]string{"time-total", "time-threads", "sync-fdatasync", "latency-insert"}, timelines...),
			[]string{"no off-CPU stacks: observe with --stacks", "no experiments:"}},
		{"observe-detail", fixture("observe-detail"),
			[]string{"time-total", "time-threads", "sync-fdatasync", "syscall-futex", "flame-offcpu-storage-sync", "flame-offcpu-lock"},
			[]string{"no on-CPU samples", "no timeline: 1 sample(s)"}},
		{"diagnose-sqlite", fixture("diagnose-sqlite"),
			[]string{"time-total", "experiments", "experiment-accounting"}, nil},
		{storageFixture, fixture(storageFixture),
			append([]string{"time-total", "time-threads", "latency-insert", "sync-fdatasync", "flame-oncpu", "flame-offcpu-storage-sync",
				"block-vda-write-service", "block-vda-flush-service"}, timelines...),
			[]string{"no experiments:"}},
		{"full", fullRun,
			append([]string{"time-total", "time-threads", "latency-insert", "sync-fdatasync", "syscall-futex", "flame-oncpu",
				"flame-offcpu-storage-sync", "experiments", "experiment-accounting", "block-vda-write-service",
				"block-vda-write-queue", "block-vda-write-size", "block-vda-write-depth", "block-vda-flush-service"}, timelines...),
			nil},
	}
}

func TestEveryFixtureRendersItsSections(t *testing.T) {
	for _, c := range cases() {
		t.Run(c.name, func(t *testing.T) {
			page, err := Render(c.run(t))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(page, []byte("<!DOCTYPE html>")) {
				t.Errorf("page does not start with a doctype: %.40q", page)
			}
			for _, id := range []string{"verdict", "findings", "workload", "time", "stacks", "experiments", "storage", "observation"} {
				if !bytes.Contains(page, []byte(`<section id="`+id+`"`)) {
					t.Errorf("no section %q", id)
				}
			}
			if o, c := bytes.Count(page, []byte("<svg ")), bytes.Count(page, []byte("</svg>")); o != c {
				t.Errorf("%d <svg> opened, %d closed", o, c)
			}
			names := chartNames(page)
			for _, want := range c.charts {
				if !slices.Contains(names, want) {
					t.Errorf("no chart %q; the page has %v", want, names)
				}
			}
			seen := map[string]bool{}
			for _, n := range names {
				if seen[n] {
					t.Errorf("chart name %q is used twice", n)
				}
				seen[n] = true
			}
			for _, why := range c.why {
				if !bytes.Contains(page, []byte(esc(why))) {
					t.Errorf("the page does not say %q", why)
				}
			}
			// A page without charts has none; one with charts must draw
			// shapes in every one of them.
			for _, svg := range strings.Split(string(page), "<svg ")[1:] {
				body, _, _ := strings.Cut(svg, "</svg>")
				if !strings.Contains(body, "<rect") && !strings.Contains(body, "<polyline") && !strings.Contains(body, "<circle") {
					t.Errorf("a chart has no shapes: %.120s", body)
				}
			}
		})
	}
}

// goldens are the pages checked byte for byte: a bench record, a small
// observed command, and the full record with every chart kind.
var goldens = []string{"bench-sqlite", "observe-command", "full"}

func TestGolden(t *testing.T) {
	for _, c := range cases() {
		if !slices.Contains(goldens, c.name) {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			got, err := Render(c.run(t))
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", c.name+".html.golden")
			checkGolden(t, golden, got)
		})
	}
}

// lineDiff shows the first lines that differ, with their numbers.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	shown := 0
	for i := 0; i < max(len(w), len(g)) && shown < 20; i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "line %d\n  - %.300s\n  + %.300s\n", i+1, wl, gl)
			shown++
		}
	}
	if shown == 0 && want != got {
		// Only the line breaks at the end differ, which the loop above
		// cannot show.
		fmt.Fprintf(&b, "the lines are the same, the endings differ: %d bytes, want %d (%q at the end, want %q)\n",
			len(got), len(want), got[max(len(got)-10, 0):], want[max(len(want)-10, 0):])
	}
	return b.String()
}

func TestRenderIsDeterministic(t *testing.T) {
	// Maps (categories, sensitivity, merged stacks) must not leak their
	// iteration order into the page.
	a, err := Render(fullRun(t))
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		b, err := Render(fullRun(t))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Fatalf("two renders of one record differ:\n%s", lineDiff(string(a), string(b)))
		}
	}
}

func TestContentSecurityPolicyAllowsOnlyThePagesOwnStyleAndScript(t *testing.T) {
	page, err := Render(fullRun(t))
	if err != nil {
		t.Fatal(err)
	}
	between := func(open, close string) string {
		_, rest, ok := strings.Cut(string(page), open)
		if !ok {
			t.Fatalf("no %s in the page", open)
		}
		body, _, _ := strings.Cut(rest, close)
		return body
	}
	meta := between(`<meta http-equiv="Content-Security-Policy" content="`, `"`)
	meta = html.UnescapeString(meta) // as the browser reads the attribute
	for _, want := range []string{"default-src 'none'", "base-uri 'none'", "form-action 'none'"} {
		if !strings.Contains(meta, want) {
			t.Errorf("the policy %q lacks %q", meta, want)
		}
	}
	for _, part := range []struct{ directive, body string }{
		{"style-src", between("<style>", "</style>")},
		{"script-src", between("<script>", "</script>")},
	} {
		sum := sha256.Sum256([]byte(part.body))
		want := part.directive + " 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
		if !strings.Contains(meta, want) {
			t.Errorf("the policy %q does not allow the page's own %s (%s): the browser would refuse it", meta, part.directive, want)
		}
	}
	if strings.Contains(meta, "unsafe-inline") || strings.Contains(meta, "http") {
		t.Errorf("the policy %q allows inline code or the network", meta)
	}
}

func TestSaveWritesAtomically(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "report.html")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	run := load(t, "observe-sqlite")
	if err := Save(run, path); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := Render(run)
	if !bytes.Equal(got, want) {
		t.Errorf("the saved page is not the rendered one (%d bytes, want %d)", len(got), len(want))
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
		t.Errorf("saved with mode %v, want 0644", fi.Mode().Perm())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("the directory holds %d entries after a save, want only the page: %v", len(entries), entries)
	}
	if err := Save(run, filepath.Join(dir, "missing", "report.html")); err == nil {
		t.Error("saving into a directory that does not exist did not fail")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("a failed save left files behind: %v", entries)
	}
}

// TestSparseRecordsRender feeds records with parts present but empty, or
// odd (what an interrupted or older run can save): the page must render,
// with no NaN or Inf in a chart, and say why a section is empty.
func TestSparseRecordsRender(t *testing.T) {
	cases := map[string]*model.Run{
		"empty": {SchemaVersion: 1},
		"empty parts": {SchemaVersion: 1, Interrupted: true,
			Result:         &model.Result{},
			Observation:    &model.Observation{Timeline: []model.Sample{{TSec: 0}, {TSec: 0}}},
			TimeAccounting: &model.TimeAccounting{Source: "ebpf", OffCPU: []model.OffCPUStack{}, Syscalls: []model.SyscallStat{}, OnCPUNote: "no perf events here"},
			Storage:        &model.StorageIO{Files: []model.FileIO{}},
			Verdict:        &model.Verdict{Summary: "nothing"},
			Experiments:    &model.Experiments{Conditions: []model.Condition{{Name: "cpu-half", Class: "sensitive"}}},
		},
		"zero weights": {SchemaVersion: 1,
			Target: model.Target{Kind: "fileio", FileIO: &model.FileIOConfig{}},
			Result: &model.Result{FileIO: &model.FileIOResult{Ops: []model.OpStats{{Op: "read"}}, ThreadOps: []int64{0, 0}}},
			TimeAccounting: &model.TimeAccounting{Source: "ebpf",
				Threads:  []model.ThreadTime{{TID: 1, Comm: "a"}},
				OnCPU:    []model.OnCPUStack{{Comm: "a", Samples: 0}},
				OffCPU:   []model.OffCPUStack{{Category: "lock", Seconds: 0}},
				Syncs:    []model.SyncCalls{{Kind: "fsync"}},
				Syscalls: []model.SyscallStat{{Name: "read"}}},
			Storage: &model.StorageIO{Devices: []model.BlockDevice{{Name: "sda", Ops: []model.BlockOp{{Op: "read", Service: []model.Range{{Low: 0, High: 0, Count: 0}}}}}},
				Cache: &model.PageCache{HitRatio: -1, Throttled: 2, ThrottledSec: -1}},
			Experiments: &model.Experiments{Conditions: []model.Condition{
				{Name: "baseline", Runs: []model.ExperimentRun{{Value: 0}}},
				{Name: "cpu-half", Class: "inconclusive", Runs: []model.ExperimentRun{{Value: 5}}}}},
		},
	}
	for name, run := range cases {
		t.Run(name, func(t *testing.T) {
			page, err := Render(run)
			if err != nil {
				t.Fatal(err)
			}
			for _, bad := range []string{"NaN", "Inf", "%!"} {
				if bytes.Contains(page, []byte(bad)) {
					i := bytes.Index(page, []byte(bad))
					t.Errorf("%q on the page: ...%s...", bad, page[max(i-100, 0):min(i+40, len(page))])
				}
			}
			if o, c := bytes.Count(page, []byte("<svg ")), bytes.Count(page, []byte("</svg>")); o != c {
				t.Errorf("%d <svg> opened, %d closed", o, c)
			}
		})
	}
}

// checkGolden compares a rendered page with its golden file, which
// -update rewrites.
func checkGolden(t *testing.T, golden string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/htmlreport -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("page differs from %s (go test ./internal/htmlreport -update accepts it):\n%s", golden, lineDiff(string(want), string(got)))
	}
}
