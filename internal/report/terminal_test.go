package report

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/sysinfo"
)

var update = flag.Bool("update", false, "rewrite the golden files from the current renderer")

// The fixtures are real run records (fileio observed, sqlite benched, a
// command observed, sqlite observed with --syscalls --stacks, sqlite diagnosed with experiments,
// sqlite observed with --stacks --syscalls --storage), and full: the HTML
// page's record with every section filled (htmlreport's fullRun, saved), whose
// on-CPU samples and storage view are made up in the shape the probes record
// them. The golden files are their text views.
var fixtures = []string{"observe-fileio", "bench-sqlite", "observe-command", "diagnose-lock", "observe-sqlite", "observe-detail", "diagnose-sqlite",
	"observe-storage", "full"}

// fixture is the path of a fixture's record: observe-storage is the HTML
// report's own.
func fixture(name string) string {
	if name == "observe-storage" {
		return filepath.Join("..", "htmlreport", "testdata", name+".json")
	}
	return filepath.Join("testdata", name+".json")
}

func TestTerminalGolden(t *testing.T) {
	for _, name := range fixtures {
		t.Run(name, func(t *testing.T) {
			run, err := model.Load(fixture(name))
			if err != nil {
				t.Fatal(err)
			}
			got := Terminal(run, Options{})
			golden := filepath.Join("testdata", name+".golden")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./internal/report -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("text view differs from %s (go test ./internal/report -update accepts it):\n%s", golden, lineDiff(string(want), string(got)))
			}
			for i, l := range strings.Split(string(got), "\n") {
				if n := len([]rune(l)); n > Width {
					t.Errorf("line %d is %d columns: %q", i+1, n, l)
				}
			}
		})
	}
}

// lineDiff shows the lines that differ, with their numbers.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "line %d\n  - %s\n  + %s\n", i+1, wl, gl)
		}
	}
	return b.String()
}

func TestSavedRecordRendersTheSame(t *testing.T) {
	for _, name := range fixtures {
		run, err := model.Load(fixture(name))
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "again.json")
		if err := model.Save(run, path); err != nil {
			t.Fatal(err)
		}
		again, err := model.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		if a, b := Terminal(run, Options{}), Terminal(again, Options{}); !bytes.Equal(a, b) {
			t.Errorf("%s renders differently after save and load:\n%s", name, lineDiff(string(a), string(b)))
		}
	}
}

func TestHostileNamesDoNotReachTheTerminal(t *testing.T) {
	run, err := model.Load(filepath.Join("testdata", "observe-command.json"))
	if err != nil {
		t.Fatal(err)
	}
	evil := "\x1b]0;pwned\x07\x1b[2J<script>"
	run.Target.Command.Argv = []string{"sh", "-c", evil}
	for i := range run.Observation.Totals.Threads {
		run.Observation.Totals.Threads[i].Comm = evil
	}
	run.Warnings = append(run.Warnings, evil)
	out := Terminal(run, Options{})
	if bytes.ContainsAny(out, "\x1b\x07") {
		t.Errorf("control characters from the workload reached the output:\n%q", out)
	}
	if !bytes.Contains(out, []byte(`\x1b`)) {
		t.Errorf("escaped form missing: the user should see that the name held an escape")
	}
}

func TestColorOnlyWhenAsked(t *testing.T) {
	run, err := model.Load(filepath.Join("testdata", "observe-fileio.json"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(Terminal(run, Options{}), []byte("\x1b[")) {
		t.Error("colour codes without Options.Color")
	}
	if !bytes.Contains(Terminal(run, Options{Color: true}), []byte("\x1b[")) {
		t.Error("no colour with Options.Color")
	}
}

func TestDoctorRendersEveryCheck(t *testing.T) {
	checks := []sysinfo.Check{
		{Name: "kernel_btf", Status: "ok", Detail: "present"},
		{Name: "bpf_kprobe", Status: "missing", Detail: "no kprobe PMU", Fix: "none needed"},
		{Name: "cgroup_v2", Status: "degraded", Detail: "hybrid", Fix: "boot with systemd.unified_cgroup_hierarchy=1"},
	}
	out := string(Doctor(model.Host{Hostname: "h", CPUsOnline: 2}, checks, nil, Options{}))
	for _, want := range []string{"kernel_btf: present", "bpf_kprobe: no kprobe PMU", "-> boot with", "1 ok, 1 degraded, 1 missing"} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, out)
		}
	}
}
