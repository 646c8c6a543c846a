//go:build amd64

package sqlitetrace_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/probe/storage"
	"github.com/perfsleuth/perfsleuth/internal/probe/timeacct"
	"github.com/perfsleuth/perfsleuth/internal/sqlitetrace"
	"github.com/perfsleuth/perfsleuth/internal/workload/sqlite/capi"
)

// observe runs work in this process under the storage probe (with files)
// and returns what the tracer made of it.
func observe(t *testing.T, work func()) *model.SQLiteIO {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("not root: the storage eBPF probe needs root, run the tests with sudo")
	}
	ta, err := timeacct.Start(timeacct.Config{Roots: []int{os.Getpid()}})
	if err != nil {
		t.Skipf("eBPF time accounting unavailable here: %v", err)
	}
	defer ta.Stop()
	tr := sqlitetrace.New()
	p, err := storage.Start(storage.Config{Files: true, OnEvent: tr.Add}, ta.SharedMaps())
	if err != nil {
		t.Fatal(err)
	}
	work()
	st, err := p.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if st.Dropped.SQLiteEvents != 0 {
		t.Errorf("%d SQLite events dropped", st.Dropped.SQLiteEvents)
	}
	io := tr.Finish(st.Files)
	if io == nil {
		t.Fatalf("no SQLite file seen; files: %+v", st.Files)
	}
	return io
}

func exec(t *testing.T, c *capi.Conn, sql ...string) {
	t.Helper()
	for _, s := range sql {
		if err := c.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

func query(t *testing.T, c *capi.Conn, sql string) [][]any {
	t.Helper()
	rows, err := c.Query(sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return rows
}

// TestPagesAgreeWithDBStat reads every table, index and overflow page of a
// database once, under the probe, and checks the page types and owners the
// tracer reports against SQLite's own dbstat view of the same file.
func TestPagesAgreeWithDBStat(t *testing.T) {
	path := filepath.Join(t.TempDir(), "test.db")
	c, err := capi.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	exec(t, c, "PRAGMA journal_mode=DELETE",
		"CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, b BLOB)",
		"CREATE INDEX t_name ON t(name)",
		"CREATE TABLE u (k TEXT PRIMARY KEY, v TEXT) WITHOUT ROWID",
		"BEGIN")
	for i := 0; i < 3000; i++ {
		size := 100
		if i%100 == 0 {
			size = 20000 // overflow chains
		}
		exec(t, c, fmt.Sprintf("INSERT INTO t(name, b) VALUES ('name-%06d', randomblob(%d))", (i*7919)%3000, size),
			fmt.Sprintf("INSERT INTO u VALUES ('key-%06d', 'value-%d')", (i*104729)%3000, i))
	}
	exec(t, c, "COMMIT", "DELETE FROM t WHERE id % 10 = 0") // a freelist
	// dbstat's view: pages per owner and type.
	want := map[[2]string]int64{}
	indexes := map[string]bool{"u": true} // a WITHOUT ROWID table is an index b-tree
	for _, r := range query(t, c, "SELECT name FROM sqlite_schema WHERE type = 'index'") {
		indexes[r[0].(string)] = true
	}
	for _, r := range query(t, c, "SELECT name, pagetype, count(*) FROM dbstat WHERE name NOT IN ('sqlite_schema', 'sqlite_master') GROUP BY name, pagetype") {
		name, typ := r[0].(string), r[1].(string)
		kind := "table"
		if indexes[name] {
			kind = "index"
		}
		switch typ {
		case "internal":
			typ = kind + "-interior"
		case "leaf":
			typ = kind + "-leaf"
		}
		want[[2]string{name, typ}] = r[2].(int64)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	io := observe(t, func() {
		c, err := capi.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		exec(t, c, "PRAGMA cache_size = -100000") // every page read once
		query(t, c, "SELECT sum(length(hex(b))), count(name) FROM t NOT INDEXED")
		query(t, c, "SELECT count(name) FROM t INDEXED BY t_name WHERE name > ''")
		query(t, c, "SELECT count(*), sum(length(v)) FROM u")
	})
	// Reads per owner and type, counted by the tracer. The types come from
	// the flag byte each read moved (b-tree pages) or the parse (overflow).
	got := map[[2]string]int64{}
	for _, p := range io.ByObject {
		if p.Object == "sqlite_schema" {
			continue
		}
		got[[2]string{p.Object, "*"}] = p.Reads
	}
	byType := map[string]int64{}
	for _, p := range io.ByType {
		if p.Kind == "db" {
			byType[p.Type] = p.Reads
		}
	}
	perOwner := map[string]int64{}
	perType := map[string]int64{}
	for k, n := range want {
		perOwner[k[0]] += n
		perType[k[1]] += n
	}
	for owner, n := range perOwner {
		if g := got[[2]string{owner, "*"}]; g != n {
			t.Errorf("%s: %d page reads seen, dbstat has %d pages", owner, g, n)
		}
	}
	for typ, n := range perType {
		if byType[typ] != n {
			t.Errorf("%s: %d page reads seen, dbstat has %d such pages", typ, byType[typ], n)
		}
	}
	if t.Failed() {
		t.Logf("dbstat %v\nby type %+v\nby object %+v\nnotes %v", want, io.ByType, io.ByObject, io.Notes)
	}
}

// TestTransactionSequences: one insert into a table with an index, in
// DELETE and in WAL mode, shows the files and page types it writes, in order.
func TestTransactionSequences(t *testing.T) {
	cases := []struct {
		mode string
		want []string // the most common transaction's steps
	}{
		{"delete", []string{"journal header", "journal record ×3", "sync journal", "journal header", "sync journal",
			"db header+table-leaf sqlite_schema", "db table-leaf t", "db index-leaf t_name", "sync db"}},
		{"wal", []string{"wal frame-header", "wal frame (table-leaf t)", "wal commit-frame-header", "wal frame (index-leaf t_name)", "sync wal"}},
	}
	for _, tc := range cases {
		t.Run(tc.mode, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "tx.db")
			c, err := capi.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			exec(t, c, "PRAGMA journal_mode="+tc.mode, "PRAGMA synchronous=FULL", "PRAGMA wal_autocheckpoint=0",
				"CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT)", "CREATE INDEX t_name ON t(name)")
			io := observe(t, func() {
				for i := 0; i < 50; i++ {
					exec(t, c, fmt.Sprintf("INSERT INTO t(name) VALUES ('n%d')", i))
				}
			})
			if len(io.Patterns) == 0 {
				t.Fatalf("no transactions; notes %v", io.Notes)
			}
			top := io.Patterns[0]
			// The table's and the index's pages may be written in either
			// order (SQLite writes dirty pages by page number).
			norm := func(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }
			if !slices.Equal(norm(top.Steps), norm(tc.want)) || top.Count < 40 {
				t.Errorf("most common transaction (%d of 50): %s\nwant: %s", top.Count, strings.Join(top.Steps, " → "), strings.Join(tc.want, " → "))
			}
		})
	}
}
