package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/perfsleuth/perfsleuth/internal/workload/sqlite"
	"github.com/perfsleuth/perfsleuth/internal/workload/sqlite/capi"
)

// TestCLoopRunsTheSameStatements checks the premise of the benchmark: cloop.c
// and internal/workload/sqlite write the same rows in the same order. Both
// run a phase list that draws from every generator step (shuffles, inserted
// and updated values) and keep their databases, which must then be equal.
func TestCLoopRunsTheSameStatements(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not installed")
	}
	tmp := t.TempDir()
	cloop := filepath.Join(tmp, "cloop")
	if out, err := exec.Command("gcc", "-O2", "-o", cloop, "cloop.c", "-lsqlite3").CombinedOutput(); err != nil {
		t.Skipf("cannot build cloop.c (needs libsqlite3-dev): %v\n%s", err, out)
	}
	const rows = 40
	phases := "insert,update,select,delete,insert,update"
	for _, txSize := range []int{1, 7} {
		t.Run(fmt.Sprintf("tx_size_%d", txSize), func(t *testing.T) {
			cDB := filepath.Join(t.TempDir(), "c.db")
			out, err := exec.Command(cloop, "-d", cDB, "-r", fmt.Sprint(rows), "-j", "wal", "-s", "off",
				"-t", fmt.Sprint(txSize), "-P", phases, "-k").Output()
			if err != nil {
				t.Fatalf("cloop: %v", err)
			}
			if !strings.Contains(string(out), `"phase": "update", "statements": 40, "transactions": `) {
				t.Errorf("cloop printed %s", out)
			}

			cfg := sqlite.Defaults()
			cfg.Rows, cfg.TxSize, cfg.Journal, cfg.Sync = rows, txSize, "wal", "off"
			cfg.Phases = strings.Split(phases, ",")
			cfg.Dir, cfg.Keep = t.TempDir(), true
			b, err := sqlite.New(&cfg)
			if err != nil {
				t.Fatal(err)
			}
			// The same library on both sides (both link -lsqlite3).
			if v := `"sqlite_version": "` + cfg.SQLiteVersion + `"`; !strings.Contains(string(out), v) {
				t.Errorf("cloop printed %s, want %s", out, v)
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

			cRows, goRows := dump(t, cDB), dump(t, b.DBPath())
			if len(goRows) != rows {
				t.Fatalf("perfsleuth left %d rows, want %d", len(goRows), rows)
			}
			if !reflect.DeepEqual(cRows, goRows) {
				t.Errorf("the C loop and perfsleuth wrote different rows\n   C: %q\n  Go: %q", cRows[0], goRows[0])
			}
			for _, p := range []string{"page_size", "journal_mode"} {
				if c, g := pragma(t, cDB, p), pragma(t, b.DBPath(), p); c != g {
					t.Errorf("PRAGMA %s: C %s, perfsleuth %s", p, c, g)
				}
			}
		})
	}
}

func open(t *testing.T, path string) *capi.Conn {
	t.Helper()
	// capi.Open would create a missing file.
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
	c, err := capi.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// query returns q's rows with every value formatted as text.
func query(t *testing.T, path, q string) [][]string {
	t.Helper()
	rows, err := open(t, path).Query(q)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]string
	for _, r := range rows {
		s := make([]string, len(r))
		for i, v := range r {
			s[i] = fmt.Sprint(v)
		}
		out = append(out, s)
	}
	return out
}

func dump(t *testing.T, path string) [][]string {
	t.Helper()
	return query(t, path, "SELECT id, name, phone, email, address, updated FROM contacts ORDER BY id")
}

func pragma(t *testing.T, path, name string) string {
	t.Helper()
	r := query(t, path, "PRAGMA "+name)
	if len(r) != 1 {
		t.Fatalf("PRAGMA %s on %s: %d rows", name, path, len(r))
	}
	return r[0][0]
}
