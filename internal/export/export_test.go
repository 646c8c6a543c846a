package export

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

func TestWriteFileIsAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.folded")
	if err := os.WriteFile(path, []byte("old contents\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, []byte("new\n")); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "new\n" {
		t.Fatalf("read back %q, %v", b, err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644 like a saved record", fi.Mode().Perm())
	}
	if es, _ := os.ReadDir(dir); len(es) != 1 {
		t.Errorf("left behind: %v", es)
	}
	// A directory that is not there: an error, and nothing written.
	if err := WriteFile(filepath.Join(dir, "no", "such", "x"), []byte("x")); err == nil {
		t.Error("no error writing into a missing directory")
	}
	// A path that is a directory: the rename fails, the temporary file goes.
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o755)
	os.WriteFile(filepath.Join(sub, "keep"), nil, 0o644)
	if err := WriteFile(sub, []byte("x")); err == nil {
		t.Error("no error replacing a directory")
	}
	if es, _ := os.ReadDir(dir); len(es) != 2 {
		t.Errorf("after failures, the directory holds %v", es)
	}
	// A bare file name goes to the working directory.
	t.Chdir(dir)
	if err := WriteFile("here.json", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "here.json")); err != nil {
		t.Error(err)
	}
}

func TestFormatsAreComplete(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range Formats {
		if f.Flag == "" || f.Usage == "" || f.Render == nil || f.Opens == "" || seen[f.Flag] {
			t.Errorf("format %+v: flag, usage, render and opens are all needed, flags unique", f.Flag)
		}
		seen[f.Flag] = true
	}
	for _, want := range []string{"folded", "folded-offcpu", "pprof", "trace", "prometheus"} {
		if !seen[want] {
			t.Errorf("no --%s", want)
		}
	}
}

// Half-filled and odd records give an error or a non-empty export, never a
// panic or an empty file.
func TestOddRecordsNeverPanic(t *testing.T) {
	odd := []*model.Run{
		{},
		{TimeAccounting: &model.TimeAccounting{Source: "ebpf"}},
		{TimeAccounting: &model.TimeAccounting{Source: "ebpf", OnCPU: []model.OnCPUStack{{}}, OffCPU: []model.OffCPUStack{{}}}},
		{TimeAccounting: &model.TimeAccounting{Source: "ebpf", OnCPU: []model.OnCPUStack{{Samples: 1, Kernel: []string{"", "+0x", "0x"}, User: []string{" ()", "(", ")"}}}}},
		{TimeAccounting: &model.TimeAccounting{Source: "ebpf", OffCPU: []model.OffCPUStack{{Seconds: -1}}}},
		{Observation: &model.Observation{}},
		{Observation: &model.Observation{Timeline: []model.Sample{{}}}, Result: &model.Result{SQLite: &model.SQLiteResult{}}},
		{Storage: &model.StorageIO{Devices: []model.BlockDevice{{}}, Cache: &model.PageCache{HitRatio: -1}}},
		{Experiments: &model.Experiments{Conditions: []model.Condition{{}}}},
		{Result: &model.Result{FileIO: &model.FileIOResult{Ops: []model.OpStats{{}}}, Command: &model.CommandResult{}}},
	}
	for i, run := range odd {
		for _, f := range Formats {
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Errorf("record %d, --%s: panic %v", i, f.Flag, r)
					}
				}()
				b, err := f.Render(run)
				if err == nil && len(b) == 0 {
					t.Errorf("record %d, --%s: empty output and no error", i, f.Flag)
				}
				if err != nil && b != nil {
					t.Errorf("record %d, --%s: output with the error %v", i, f.Flag, err)
				}
			}()
		}
	}
}
