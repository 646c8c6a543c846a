package capi

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func open(t *testing.T) *Conn {
	t.Helper()
	c, err := Open(filepath.Join(t.TempDir(), "t.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	})
	return c
}

// The library the binary runs is the one whose header it was built with: a
// mismatch means the linker found another libsqlite3 than the compiler.
func TestVersionMatchesHeader(t *testing.T) {
	if v, h := Version(), headerVersion(); v != h || !strings.HasPrefix(v, "3.") {
		t.Errorf("sqlite3_libversion %q, SQLITE_VERSION %q", v, h)
	}
}

func TestExecBindsAndReads(t *testing.T) {
	c := open(t)
	if err := c.Exec("CREATE TABLE t(id INTEGER PRIMARY KEY, a TEXT, b TEXT, n INTEGER)"); err != nil {
		t.Fatal(err)
	}
	ins, err := c.Prepare("INSERT INTO t VALUES(?, ?, ?, ?)", Int, Text, Text, Int)
	if err != nil {
		t.Fatal(err)
	}
	for i, row := range []struct {
		a, b string
	}{{"hello", "world"}, {"", "x"}, {"é\x00z", ""}} {
		text := []byte(row.a + row.b)
		r, err := ins.Exec([]int64{int64(i + 1), int64(len(row.a)), int64(len(row.b)), -7}, text)
		if err != nil || r.Changes != 1 || r.Rows != 0 {
			t.Fatalf("insert %d: %+v, %v", i, r, err)
		}
	}
	got, err := c.Query("SELECT id, a, b, n, 1.5, NULL, x'0102' FROM t ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	want := [][]any{
		{int64(1), "hello", "world", int64(-7), 1.5, nil, []byte{1, 2}},
		{int64(2), "", "x", int64(-7), 1.5, nil, []byte{1, 2}},
		{int64(3), "é\x00z", "", int64(-7), 1.5, nil, []byte{1, 2}},
	}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if !slices.EqualFunc(got[i], want[i], func(x, y any) bool {
			if xb, ok := x.([]byte); ok {
				yb, _ := y.([]byte)
				return string(xb) == string(yb)
			}
			return x == y
		}) {
			t.Errorf("row %d: %v, want %v", i, got[i], want[i])
		}
	}

	sel, err := c.Prepare("SELECT * FROM t WHERE id >= ?", Int)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ from, rows int64 }{{1, 3}, {3, 1}, {4, 0}} {
		if r, err := sel.Exec([]int64{tc.from}, nil); err != nil || r.Rows != tc.rows {
			t.Errorf("select from %d: %+v, %v; want %d rows", tc.from, r, err, tc.rows)
		}
	}
	del, err := c.Prepare("DELETE FROM t WHERE id = ?", Int)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ id, changes int64 }{{2, 1}, {2, 0}} {
		if r, err := del.Exec([]int64{tc.id}, nil); err != nil || r.Changes != tc.changes {
			t.Errorf("delete %d: %+v, %v; want %d changes", tc.id, r, err, tc.changes)
		}
	}
	if !c.AutoCommit() {
		t.Error("a transaction is open after the statements")
	}
}

func TestErrors(t *testing.T) {
	c := open(t)
	if err := c.Exec("CREATE TABLE t(id INTEGER PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	ins, err := c.Prepare("INSERT INTO t VALUES(?)", Int)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ins.Exec([]int64{1}, nil); err != nil {
		t.Fatal(err)
	}
	_, err = ins.Exec([]int64{1}, nil)
	var se *Error
	if !errors.As(err, &se) || se.Primary() != 19 || se.Code == 19 { // SQLITE_CONSTRAINT, extended
		t.Fatalf("duplicate insert: %v, want an extended SQLITE_CONSTRAINT", err)
	}
	for _, w := range []string{"INSERT INTO t VALUES(?)", c.Path(), "UNIQUE constraint failed"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
	// The statement was reset: it runs again.
	if _, err := ins.Exec([]int64{2}, nil); err != nil {
		t.Errorf("insert after an error: %v", err)
	}

	txt, err := c.Prepare("SELECT ?, ?", Text, Text)
	if err != nil {
		t.Fatal(err)
	}
	for _, vals := range [][]int64{{3, 3}, {-1, 1}, {1}} {
		if _, err := txt.Exec(vals, []byte("abcde")); err == nil {
			t.Errorf("Exec(%v, 5 bytes) succeeded", vals)
		}
	}
	if _, err := c.Prepare("SELECT ?", Int, Int); err == nil {
		t.Error("Prepare with more kinds than parameters succeeded")
	}
	if _, err := c.Prepare("SELECT 1; SELECT 2"); err == nil {
		t.Error("Prepare of two statements succeeded")
	}
	if err := c.Exec("SELEC 1"); err == nil || !strings.Contains(err.Error(), "syntax error") {
		t.Errorf("bad SQL: %v", err)
	}
	if _, err := Open(filepath.Join(t.TempDir(), "no", "such", "dir.db")); err == nil || !strings.Contains(err.Error(), "open on") {
		t.Errorf("open in a missing directory: %v", err)
	}
	if _, err := Open("a\x00b"); err == nil {
		t.Error("open of a path with NUL succeeded")
	}
}

// A file name that looks like a URI is still a file name.
func TestOpenURILikeName(t *testing.T) {
	t.Chdir(t.TempDir())
	c, err := Open("file:x.db?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Exec("CREATE TABLE t(a)"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("file:x.db?mode=ro"); err != nil {
		t.Errorf("the database is not the file named: %v", err)
	}
}

func TestCloseTwice(t *testing.T) {
	c := open(t)
	s, err := c.Prepare("SELECT 1")
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Exec(nil, nil); err == nil {
		t.Error("Exec after Close succeeded")
	}
	if err := c.Exec("SELECT 1"); err == nil {
		t.Error("Conn.Exec after Close succeeded")
	}
}

// The timed loop relies on Exec allocating nothing: the garbage collector
// would otherwise run during the measurement.
func TestExecDoesNotAllocate(t *testing.T) {
	c := open(t)
	if err := c.Exec("CREATE TABLE t(id INTEGER PRIMARY KEY, a TEXT); INSERT INTO t VALUES(1, 'x')"); err != nil {
		t.Fatal(err)
	}
	upd, err := c.Prepare("UPDATE t SET a = ? WHERE id = ?", Text, Int)
	if err != nil {
		t.Fatal(err)
	}
	sel, err := c.Prepare("SELECT id, a FROM t WHERE id = ?", Int)
	if err != nil {
		t.Fatal(err)
	}
	vals, text, id := []int64{5, 1}, []byte("hello"), []int64{1}
	if n := testing.AllocsPerRun(100, func() {
		if r, err := upd.Exec(vals, text); err != nil || r.Changes != 1 {
			t.Fatal(r, err)
		}
		if r, err := sel.Exec(id, nil); err != nil || r.Rows != 1 {
			t.Fatal(r, err)
		}
	}); n != 0 {
		t.Errorf("Exec allocates %.1f times per call pair, want 0", n)
	}
}
