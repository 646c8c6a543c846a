package sqlprobe

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLoadOffset(t *testing.T) {
	for _, c := range []struct {
		name string
		code []byte
		want byte
		off  int64 // -1: an error
	}{
		// Debian 12's libsqlite3 3.40.1: sqlite3_sql and sqlite3_get_autocommit.
		{"null test, disp32", []byte{0x48, 0x85, 0xff, 0x74, 0x0b, 0x48, 0x8b, 0x87, 0xf8, 0x00, 0x00, 0x00, 0xc3}, 0x8b, 0xf8},
		{"movzbl disp8", []byte{0x0f, 0xb6, 0x47, 0x65, 0xc3}, 0xb6, 0x65},
		{"endbr64, disp8", []byte{0xf3, 0x0f, 0x1e, 0xfa, 0x48, 0x8b, 0x47, 0x10, 0xc3}, 0x8b, 0x10},
		{"no displacement", []byte{0x48, 0x8b, 0x07, 0xc3}, 0x8b, 0},
		{"null test, je rel32", []byte{0x48, 0x85, 0xff, 0x0f, 0x84, 1, 0, 0, 0, 0x48, 0x8b, 0x87, 0x00, 0x01, 0x00, 0x00}, 0x8b, 0x100},
		// SQLITE_ENABLE_API_ARMOR: a call before the load.
		{"a call first", []byte{0x53, 0x48, 0x89, 0xfb, 0xe8, 0, 0, 0, 0}, 0x8b, -1},
		{"into another register", []byte{0x48, 0x8b, 0x57, 0x10}, 0x8b, -1},
		{"from another register", []byte{0x48, 0x8b, 0x46, 0x10}, 0x8b, -1},
		{"cut short", []byte{0x48, 0x8b, 0x87, 0xf8}, 0x8b, -1},
		{"empty", nil, 0xb6, -1},
	} {
		off, err := loadOffset(c.code, c.want)
		switch {
		case c.off < 0 && err == nil:
			t.Errorf("%s: offset %#x, want an error", c.name, off)
		case c.off >= 0 && (err != nil || off != c.off):
			t.Errorf("%s: %#x, %v; want %#x", c.name, off, err, c.off)
		}
	}
}

// TestInspectSystemLibrary reads the machine's libsqlite3: the API the
// probe hooks is there, and both offsets decode (Debian's 3.40.1: zSql at
// 0xf8, autoCommit at 0x65; other builds differ, so only their presence
// and range are asserted).
func TestInspectSystemLibrary(t *testing.T) {
	path := systemLibrary()
	if path == "" {
		t.Skip("no libsqlite3.so.0 in ldconfig's cache (install libsqlite3-0)")
	}
	lib, err := Inspect(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, sym := range []string{"sqlite3_prepare_v2", "sqlite3_step", "sqlite3_reset", "sqlite3_finalize"} {
		if lib.Symbols[sym] == 0 {
			t.Errorf("%s: %s not found", path, sym)
		}
	}
	if lib.SQLOffset <= 0 || lib.SQLOffset > 4096 || lib.AutoCommitOffset <= 0 || lib.AutoCommitOffset > 4096 {
		t.Errorf("%s: offsets zSql %d, autoCommit %d (%s)", path, lib.SQLOffset, lib.AutoCommitOffset, lib.OffsetsNote)
	}
	if lib.BuildID == "" {
		t.Errorf("%s: no build id", path)
	}
	t.Logf("%s build %s: zSql at %#x, autoCommit at %#x", path, lib.BuildID, lib.SQLOffset, lib.AutoCommitOffset)
}

func TestInspectNotSQLite(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Inspect(exe); err == nil {
		t.Errorf("%s: taken for SQLite", exe)
	}
	if _, err := Inspect("/nonexistent"); err == nil {
		t.Error("a missing file gave no error")
	}
}

// TestInspectStrippedPostgres: a PostgreSQL server whose symbols are
// gone (here a program with none of them, named postgres) is said to be
// one, with where to get its symbols, instead of being passed over as a
// file without SQL (Find keeps such an error among its notes, which the
// record shows).
func TestInspectStrippedPostgres(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	pg := filepath.Join(t.TempDir(), "postgres")
	if err := os.WriteFile(pg, b, 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = Inspect(pg)
	if err == nil || errors.Is(err, ErrNoSQLite) || !strings.Contains(err.Error(), "PostgreSQL server without the symbol pgstat_report_activity") || !strings.Contains(err.Error(), "dbgsym") {
		t.Errorf("a server without its symbols: %v", err)
	}
}

// TestFindInProcess: a process that maps its own copy of SQLite (here the
// sqlite3 shell given a copy of the library by LD_LIBRARY_PATH) has that
// copy found through its mappings, beside ldconfig's library.
func TestFindInProcess(t *testing.T) {
	shell, err := exec.LookPath("sqlite3")
	sys := systemLibrary()
	if err != nil || sys == "" {
		t.Skip("no sqlite3 shell or libsqlite3 (install sqlite3)")
	}
	dir := t.TempDir()
	data, err := os.ReadFile(sys)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "libsqlite3.so.0"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(shell, ":memory:")
	cmd.Env = append(os.Environ(), "LD_LIBRARY_PATH="+dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); cmd.Wait() }()
	var libs []*Library
	var notes []string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if libs, notes = Find([]int{cmd.Process.Pid}); len(libs) > 1 {
			break
		}
	}
	var paths []string
	copyFound := false
	for _, l := range libs {
		paths = append(paths, l.Path)
		copyFound = copyFound || strings.HasSuffix(l.Path, filepath.Join(dir, "libsqlite3.so.0")) && l.Symbols["sqlite3_step"] != 0
	}
	if len(libs) != 2 || !copyFound {
		t.Errorf("libraries %v (notes %v), want ldconfig's and the copy in %s", paths, notes, dir)
	}
}

// TestInspectTranslatedSQLite: a Go program whose SQLite is translated to
// Go (modernc.org/sqlite: lib.Xsqlite3_step, a Go function) is told apart
// from one without SQLite, and the error says why its statements cannot be
// named. A stand-in program defines main.Xsqlite3_step.
func TestInspectTranslatedSQLite(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build the stand-in")
	}
	dir := t.TempDir()
	src := "package main\n\n//go:noinline\nfunc Xsqlite3_step(p uintptr) int { return int(p) + 1 }\n\nfunc main() { println(Xsqlite3_step(1)) }\n"
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "prog")
	cmd := exec.Command(goBin, "build", "-o", bin, "main.go")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GO111MODULE=off", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	_, err = Inspect(bin)
	if err == nil || errors.Is(err, ErrNoSQLite) || !strings.Contains(err.Error(), "translated to Go (main)") {
		t.Errorf("Inspect of a Go-translated SQLite: %v", err)
	}
}
