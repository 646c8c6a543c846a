//go:build amd64

package sqlprobe

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/probe/storage"
	"github.com/perfsleuth/perfsleuth/internal/probe/timeacct"
	"github.com/perfsleuth/perfsleuth/internal/sqlitetrace"
	"github.com/perfsleuth/perfsleuth/internal/workload/sqlite/capi"
)

// observeSQL runs work under the time accounting, storage (files and
// SQLite events) and the statement probe, following this process, and
// returns the joined statements.
func observeSQL(t *testing.T, work func()) *model.SQLStatements {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("not root: the statement probe needs uprobes, run the tests with sudo")
	}
	ta, err := timeacct.Start(timeacct.Config{Roots: []int{os.Getpid()}})
	if err != nil {
		t.Skipf("eBPF time accounting unavailable here: %v", err)
	}
	defer ta.Stop()
	tracked, threads := ta.SharedMaps()
	tr := sqlitetrace.New()
	st, err := storage.Start(storage.Config{Files: true, OnEvent: tr.Add}, tracked, threads)
	if err != nil {
		tr.Close()
		t.Fatal(err)
	}
	p, err := Start([]int{os.Getpid()}, tracked, st.SQLThreads())
	if err != nil {
		st.Stop()
		tr.Close()
		t.Fatal(err)
	}
	work()
	res, err := p.Stop()
	if err != nil {
		t.Fatal(err)
	}
	sio, err := st.Stop()
	if err != nil {
		t.Fatal(err)
	}
	q := tr.Finish(sio.Files)
	if q == nil {
		t.Fatal("no SQLite file event")
	}
	return Join(res, q.ByStatement, sio.StatementCalls, 0)
}

func find(q *model.SQLStatements, text string) *model.SQLStatement {
	for i := range q.Statements {
		if q.Statements[i].Text == text {
			return &q.Statements[i]
		}
	}
	return nil
}

// TestStatementsJoined: 50 autocommit INSERTs in rollback-journal mode,
// each its own transaction with its syncs, then a SELECT: each statement
// is named with its executions, and the SQLite file IO is charged to them.
func TestStatementsJoined(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.db")
	conn, err := capi.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.Exec("PRAGMA journal_mode=DELETE; PRAGMA synchronous=FULL; CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT)"); err != nil {
		t.Fatal(err)
	}
	const n = 50
	q := observeSQL(t, func() {
		ins, err := conn.Prepare("INSERT INTO t(b) VALUES (?)", capi.Text)
		if err != nil {
			t.Fatal(err)
		}
		defer ins.Close()
		text := []byte(strings.Repeat("x", 100))
		for i := 0; i < n; i++ {
			if _, err := ins.Exec([]int64{int64(len(text))}, text); err != nil {
				t.Fatal(err)
			}
		}
		rows, err := conn.Query("SELECT count(*) FROM t WHERE b LIKE 'x%'")
		if err != nil || len(rows) != 1 || rows[0][0] != int64(n) {
			t.Fatalf("count: %v, %v", rows, err)
		}
	})
	for _, s := range q.Statements {
		t.Logf("%s pid %d: execs %d done %d steps %d autocommit %d, %.3f ms, reads %d writes %d syncs %d",
			s.Text, s.PID, s.Execs, s.Done, s.Steps, s.Autocommit, s.Sec*1e3, s.Reads, s.Writes, s.Syncs)
	}
	ins := find(q, "INSERT INTO t(b) VALUES (?)")
	if ins == nil {
		t.Fatalf("the INSERT is not among the statements")
	}
	if ins.PID != os.Getpid() || ins.Execs != n || ins.Done != n || ins.Autocommit != n {
		t.Errorf("INSERT: pid %d, %d executions, %d done, %d in autocommit; want %d, %d each", ins.PID, ins.Execs, ins.Done, ins.Autocommit, os.Getpid(), n)
	}
	// DELETE + FULL: each transaction syncs its journal and the database.
	if ins.Syncs < 2*n || ins.Writes < 2*n {
		t.Errorf("INSERT: %d syncs, %d writes; want at least %d each (a journal and a database sync per transaction)", ins.Syncs, ins.Writes, 2*n)
	}
	if ins.Sec <= 0 || ins.P50Sec <= 0 || ins.P99Sec < ins.P50Sec {
		t.Errorf("INSERT: times %g s, p50 %g, p99 %g", ins.Sec, ins.P50Sec, ins.P99Sec)
	}
	sel := find(q, "SELECT count(*) FROM t WHERE b LIKE ?")
	if sel == nil || sel.Execs != 1 || sel.Steps != 2 {
		t.Errorf("the SELECT: %+v, want one execution of two steps (a row, then done)", sel)
	}
	if q.AttributedShare < 0.95 {
		t.Errorf("%.1f%% of the SQLite file calls charged to a statement, want >= 95%% (unattributed %+v)", q.AttributedShare*100, q.Unattributed)
	}
	if q.UprobeHits == 0 || len(q.Libraries) == 0 || q.Libraries[0].SQLOffset <= 0 {
		t.Errorf("hits %d, libraries %+v", q.UprobeHits, q.Libraries)
	}
}
