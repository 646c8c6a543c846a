package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDirCreatedAndRemoved(t *testing.T) {
	cwd := t.TempDir()
	t.Chdir(cwd)
	cfg := testConfig(t)
	cfg.Dir = ""
	b, err := New(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.DirCreated || filepath.Dir(cfg.Dir) != cwd || !strings.HasPrefix(filepath.Base(cfg.Dir), "perfsleuth-sqlite-") {
		t.Errorf("dir %q (created %v), want a new perfsleuth-sqlite-* in %s", cfg.Dir, cfg.DirCreated, cwd)
	}
	if err := b.Prepare(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ { // a second Cleanup is harmless
		if err := b.Cleanup(); err != nil {
			t.Fatalf("Cleanup %d: %v", i+1, err)
		}
	}
	assertEmpty(t, cwd)
}

// Every journal mode leaves its own files (-journal, -wal, -shm); none may
// survive Cleanup.
func TestCleanupLeavesNothing(t *testing.T) {
	for _, j := range JournalModes {
		cfg := testConfig(t)
		cfg.Journal = j
		cfg.Phases = []string{"insert"}
		b, err := New(&cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Prepare(context.Background()); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Run(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
		if err := b.Cleanup(); err != nil {
			t.Fatal(err)
		}
		assertEmpty(t, cfg.Dir)
	}
}

func TestForeignFilesRefused(t *testing.T) {
	cfg := testConfig(t)
	mine := filepath.Join(cfg.Dir, "perfsleuth.db")
	if err := os.WriteFile(mine, []byte("someone's data"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := New(&cfg)
	if err == nil {
		t.Fatal("New on a directory with someone's perfsleuth.db succeeded, want refusal")
	}
	for _, w := range []string{cfg.Dir, "holds files perfsleuth did not create (perfsleuth.db)", "--force"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
	if b, _ := os.ReadFile(mine); string(b) != "someone's data" {
		t.Error("the refused run touched the file")
	}
	if _, err := os.Stat(filepath.Join(cfg.Dir, MarkerName)); !os.IsNotExist(err) {
		t.Error("the refused run left a marker")
	}
}

func TestForceAccepted(t *testing.T) {
	cfg := testConfig(t)
	other := filepath.Join(cfg.Dir, "notes.txt")
	if err := os.WriteFile(other, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg.Force = true
	b, err := New(&cfg)
	if err != nil {
		t.Fatalf("New with Force: %v", err)
	}
	if err := b.Prepare(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if err := b.Cleanup(); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(cfg.Dir)
	if len(entries) != 1 || entries[0].Name() != "notes.txt" {
		t.Errorf("after cleanup %s holds %v, want only notes.txt", cfg.Dir, entries)
	}
	if cfg.DirCreated {
		t.Error("a given --dir was marked as created")
	}
}

func TestKeepThenReuse(t *testing.T) {
	cfg := testConfig(t)
	cfg.Keep = true
	cfg.Phases = []string{"insert"}
	b := newBench(t, cfg)
	run(t, b)
	if err := b.Cleanup(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{DBName, MarkerName} {
		if _, err := os.Stat(filepath.Join(cfg.Dir, f)); err != nil {
			t.Errorf("keep: %s is gone: %v", f, err)
		}
	}
	// The marker lets a second run use the directory without --force, and
	// Prepare starts from an empty database (else the inserts would collide).
	cfg.Keep = false
	b2 := newBench(t, cfg)
	res := run(t, b2)
	if res.Phases[0].RowsAfter != int64(cfg.Rows) {
		t.Errorf("second run: %d rows after insert, want %d", res.Phases[0].RowsAfter, cfg.Rows)
	}
	if err := b2.Cleanup(); err != nil {
		t.Fatal(err)
	}
	assertEmpty(t, cfg.Dir)
}

func TestKeepCreatedDir(t *testing.T) {
	cwd := t.TempDir()
	t.Chdir(cwd)
	cfg := testConfig(t)
	cfg.Dir, cfg.Keep = "", true
	cfg.Phases = []string{"insert"}
	b := newBench(t, cfg)
	run(t, b)
	if err := b.Cleanup(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(b.Config().Dir, DBName)); err != nil {
		t.Errorf("keep: database gone: %v", err)
	}
}

// The runner may create the directory itself and pass it with DirCreated
// set (internal/runner resolveDir): Cleanup removes it, and the record keeps
// saying perfsleuth created it.
func TestDirCreatedByCaller(t *testing.T) {
	for _, keep := range []bool{false, true} {
		cfg := testConfig(t)
		cfg.Dir = filepath.Join(cfg.Dir, "perfsleuth-sqlite-123")
		if err := os.Mkdir(cfg.Dir, 0o755); err != nil {
			t.Fatal(err)
		}
		cfg.DirCreated, cfg.Keep = true, keep
		cfg.Phases = []string{"insert"}
		b := newBench(t, cfg)
		run(t, b)
		if !b.Config().DirCreated {
			t.Error("DirCreated was reset")
		}
		if err := b.Cleanup(); err != nil {
			t.Fatal(err)
		}
		_, err := os.Stat(filepath.Join(cfg.Dir, DBName))
		if keep != (err == nil) {
			t.Errorf("keep %v: database exists: %v", keep, err == nil)
		}
		if _, err := os.Stat(cfg.Dir); !keep && !os.IsNotExist(err) {
			t.Errorf("the created directory survived Cleanup: %v", err)
		}
	}
}
