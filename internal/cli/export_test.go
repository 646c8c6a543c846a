package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/perfsleuth/perfsleuth/internal/analyze"
	"github.com/perfsleuth/perfsleuth/internal/export"
	"github.com/perfsleuth/perfsleuth/internal/model"
)

// copyRecord puts a saved record into dir and returns its path.
func copyRecord(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "export", "testdata", name+".json"))
	if os.IsNotExist(err) {
		b, err = os.ReadFile(filepath.Join("..", "report", "testdata", name+".json"))
	}
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name+".json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestExportWritesEveryFormat(t *testing.T) {
	work := t.TempDir()
	rec := copyRecord(t, work, "observe-stacks")
	r := run(t, work, "export", rec, "--folded", "on.folded", "--folded-offcpu", "off.folded",
		"--pprof", "stacks.pb.gz", "--trace", "-", "--prometheus", "metrics.prom")
	if r.code != 0 {
		t.Fatalf("export failed (%d): %s", r.code, r.stderr)
	}
	var trace struct {
		TraceEvents []map[string]any `json:"traceEvents"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &trace); err != nil || len(trace.TraceEvents) == 0 {
		t.Fatalf("stdout is not the trace (%v): %.200s", err, r.stdout)
	}
	// The files hold exactly what the library renders from the record,
	// analysed as every command analyses a record it loads.
	loaded, err := model.Load(rec)
	if err != nil {
		t.Fatal(err)
	}
	analyze.Run(loaded)
	for file, render := range map[string]func(*model.Run) ([]byte, error){
		"on.folded": export.FoldedOnCPU, "off.folded": export.FoldedOffCPU,
		"stacks.pb.gz": export.Pprof, "metrics.prom": export.Prometheus,
	} {
		got, err := os.ReadFile(filepath.Join(work, file))
		if err != nil {
			t.Fatal(err)
		}
		want, err := render(loaded)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("%s differs from what the export package renders", file)
		}
		if !strings.Contains(r.stderr, "wrote "+file) {
			t.Errorf("stderr does not say %s was written:\n%s", file, r.stderr)
		}
	}
	want := []string{"metrics.prom", "observe-stacks.json", "off.folded", "on.folded", "stacks.pb.gz"}
	if l := listing(t, work); strings.Join(l, " ") != strings.Join(want, " ") {
		t.Errorf("directory holds %v, want %v (no temporary files)", l, want)
	}
}

func TestExportErrors(t *testing.T) {
	work := t.TempDir()
	detail := copyRecord(t, work, "observe-detail")
	bench := copyRecord(t, work, "bench-sqlite")
	before := listing(t, work)
	cases := []struct {
		name string
		args []string
		want []string // phrases the error line must contain
	}{
		{"no output", []string{"export", detail}, []string{"nothing to export", "--folded", "--prometheus"}},
		{"two on stdout", []string{"export", detail, "--trace", "-", "--prometheus", "-"}, []string{"--trace and --prometheus both write to stdout"}},
		{"one file twice", []string{"export", detail, "--trace", "x", "--prometheus", "./x"}, []string{"both write to ./x"}},
		{"no record", []string{"export", filepath.Join(work, "none.json"), "--trace", "t.json"}, []string{"none.json"}},
		{"no record argument", []string{"export", "--trace", "t.json"}, []string{"arg"}},
		// The record has off-CPU stacks only: the on-CPU export fails, and
		// the exports that could be made are not written either.
		{"no on-CPU stacks", []string{"export", detail, "--folded", "on.folded", "--prometheus", "m.prom"}, []string{"--folded:", "no on-CPU samples", "nothing written"}},
		{"bench record", []string{"export", bench, "--pprof", "p.pb.gz", "--trace", "t.json"}, []string{"--pprof:", "--stacks", "--trace:", "perfsleuth observe"}},
		{"unwritable directory", []string{"export", detail, "--trace", "/nonexistent/dir/t.json"}, []string{"--trace", "/nonexistent/dir"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			line := oneError(t, run(t, work, c.args...))
			for _, w := range c.want {
				if !strings.Contains(line, w) {
					t.Errorf("error %q does not mention %q", line, w)
				}
			}
			if l := listing(t, work); strings.Join(l, " ") != strings.Join(before, " ") {
				t.Errorf("directory changed: %v, was %v", l, before)
			}
		})
	}
}
