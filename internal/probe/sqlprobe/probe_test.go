//go:build amd64

package sqlprobe

import (
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
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
	taStopped := false
	defer func() {
		if !taStopped {
			ta.Stop()
		}
	}()
	tr := sqlitetrace.New()
	st, err := storage.Start(storage.Config{Files: true, OnEvent: tr.Add}, ta.SharedMaps())
	if err != nil {
		tr.Close()
		t.Fatal(err)
	}
	p, err := Start([]int{os.Getpid()}, ta.SharedMaps(), st.SQLThreads())
	if err != nil {
		st.Stop()
		tr.Close()
		t.Fatal(err)
	}
	// A statement is timed by state only when it begins and ends on one
	// thread (the probe's rule, said in its note), and a goroutine may move
	// to another thread between two cgo calls of one statement (its first
	// sqlite3_step and its last): after a 595 ms step, the spin query of
	// TestStatementTimeByState ended on another thread in one run of
	// issue 14's series. A program's thread does not move.
	runtime.LockOSThread()
	work()
	runtime.UnlockOSThread()
	res, err := p.Stop()
	if err != nil {
		t.Fatal(err)
	}
	sio, err := st.Stop()
	if err != nil {
		t.Fatal(err)
	}
	// Shown when a test fails: an execution is timed by state only when
	// the time accounting has its thread on the CPU at both ends, which a
	// switch-in the kernel's tracepoint left out (this VM's kernel leaves
	// some out) defeats.
	taStopped = true
	if tres, err := ta.Stop(); err == nil {
		t.Logf("time accounting: switches without an event %+v, dropped %d", tres.Unseen, tres.Dropped)
	}
	q := tr.Finish(sio.Files)
	if q == nil {
		t.Fatal("no SQLite file event")
	}
	return Join(res, q.ByStatement, sio.StatementCalls, 0)
}

// journaled opens a new database in rollback-journal mode with
// synchronous=FULL (each commit syncs its journal and the database) and
// a table t(a, b), closed with the test.
func journaled(t *testing.T) *capi.Conn {
	t.Helper()
	conn, err := capi.Open(filepath.Join(t.TempDir(), "t.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if err := conn.Exec("PRAGMA journal_mode=DELETE; PRAGMA synchronous=FULL; CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT)"); err != nil {
		t.Fatal(err)
	}
	return conn
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
	conn := journaled(t)
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

// TestStatementTimeByState: the time of each execution, by the time
// accounting's categories read at its start and end. Autocommit INSERTs in
// rollback-journal mode with synchronous=FULL wait on their syncs; a
// recursive SELECT that touches no file runs on the CPU. Each statement's
// categories add up to its time, and each is where it must be.
func TestStatementTimeByState(t *testing.T) {
	for i, c := range timeacct.Categories {
		if model.Categories[i] != c {
			t.Fatalf("model.Categories[%d] is %q, the time accounting's category %d is %q: the statement probe reads them by index", i, model.Categories[i], i, c)
		}
	}
	conn := journaled(t)
	const n = 40
	const spin = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x < 1000000) SELECT sum(x) FROM c"
	q := observeSQL(t, func() {
		ins, err := conn.Prepare("INSERT INTO t(b) VALUES (?)", capi.Text)
		if err != nil {
			t.Fatal(err)
		}
		defer ins.Close()
		text := []byte(strings.Repeat("y", 100))
		for range n {
			if _, err := ins.Exec([]int64{int64(len(text))}, text); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := conn.Query(spin); err != nil {
			t.Fatal(err)
		}
	})
	for _, s := range q.Statements {
		t.Logf("%s: %d done, %d timed, %.2f ms, by state %v", s.Text, s.Done, s.TimedExecs, s.Sec*1e3, s.Time)
	}
	for _, n := range q.Notes {
		t.Log("note:", n)
	}
	sum := func(s *model.SQLStatement, cats ...string) (v float64) {
		if len(cats) == 0 {
			cats = model.Categories
		}
		for _, c := range cats {
			v += s.Time[c]
		}
		return v
	}
	check := func(s *model.SQLStatement, want int64) {
		// Each ended execution is timed, or said to have run while the
		// time accounting had its thread off the CPU (a switch-in the
		// kernel's sched_switch left out: issue 14's series saw 38 of 40
		// INSERTs timed once in about 60 runs); and some are timed.
		if s.Done != want || s.TimedExecs+s.OffCPUExecs != want || s.TimedExecs == 0 {
			t.Fatalf("%s: %d executions ended, %d timed by state, %d not as their thread was off the CPU in the accounting; want %d ended, each timed or off the CPU", s.Text, s.Done, s.TimedExecs, s.OffCPUExecs, want)
		}
		if s.OffCPUExecs > 0 {
			t.Logf("%s: %d executions not timed: their thread's switch-in had no sched_switch event", s.Text, s.OffCPUExecs)
		}
		// The categories cover each timed execution from its first step
		// to its reset, as TimedSec does (the two ends read a few hundred
		// ns apart).
		if d := sum(s) - s.TimedSec; d > 0.02*s.TimedSec+1e-4 || d < -0.02*s.TimedSec-1e-4 {
			t.Errorf("%s: its states add up to %.3f ms, its timed executions took %.3f ms", s.Text, sum(s)*1e3, s.TimedSec*1e3)
		}
		if s.TimedExecs == s.Done && math.Abs(s.TimedSec-s.Sec) > 1e-9*float64(s.Done)+1e-12 {
			t.Errorf("%s: every execution timed, yet TimedSec %.6f s is not Sec %.6f s", s.Text, s.TimedSec, s.Sec)
		}
	}
	ins := find(q, "INSERT INTO t(b) VALUES (?)")
	if ins == nil {
		t.Fatal("the INSERT is not among the statements")
	}
	check(ins, n)
	// Each INSERT syncs its journal and the database: blocked in its syncs
	// for some of its time, never for more than its sync calls took (the
	// storage probe's timing of the same calls, CPU in them included:
	// 18.8 ms blocked of 40 INSERTs' syncs here, 38.5 ms on CPU, most of
	// it creating, writing and deleting the journal).
	if ins.Syncs < 2*n {
		t.Errorf("INSERT: %d syncs, want at least %d", ins.Syncs, 2*n)
	}
	if st := ins.Time[model.CatStorageSync]; st <= 0 || st > ins.Calls.SyncSec+1e-4 {
		t.Errorf("INSERT: %.3f ms blocked in syncs, its %d sync calls took %.3f ms: want more than 0 and at most that", st*1e3, ins.Calls.Syncs, ins.Calls.SyncSec*1e3)
	}
	sel := find(q, "WITH RECURSIVE c(x) AS (SELECT ? UNION ALL SELECT x+? FROM c WHERE x < ?) SELECT sum(x) FROM c")
	if sel == nil {
		t.Fatal("the recursive SELECT is not among the statements")
	}
	check(sel, 1)
	if run := sum(sel, model.CatCPU, model.CatCPUWait); run < 0.9*sel.Sec {
		t.Errorf("the recursive SELECT: %.3f ms on or waiting for a CPU of %.3f ms: want nearly all", run*1e3, sel.Sec*1e3)
	}
	if st := sum(sel, model.CatStorageRead, model.CatStorageWrite, model.CatStorageSync); st > 0.05*sel.Sec {
		t.Errorf("the recursive SELECT: %.3f ms blocked on storage, it reads no file", st*1e3)
	}
}

// TestTransactions: ten explicit transactions of three INSERTs each and
// twenty autocommit INSERTs, rollback journal, synchronous=FULL: two kinds
// of transaction, each with its statements in order, its count, its syncs
// (a journal and a database sync at least per commit) and its time, which
// holds its statements' times.
func TestTransactions(t *testing.T) {
	conn := journaled(t)
	const explicit, inTx, auto = 10, 3, 20
	q := observeSQL(t, func() {
		var stmts []*capi.Stmt
		prep := func(sql string, kinds ...capi.Kind) *capi.Stmt {
			s, err := conn.Prepare(sql, kinds...)
			if err != nil {
				t.Fatal(err)
			}
			stmts = append(stmts, s)
			return s
		}
		begin, commit := prep("BEGIN"), prep("COMMIT")
		ins := prep("INSERT INTO t(b) VALUES (?)", capi.Text)
		defer func() {
			for _, s := range stmts {
				s.Close()
			}
		}()
		text := []byte("z")
		exec := func(s *capi.Stmt, vals []int64, text []byte) {
			if _, err := s.Exec(vals, text); err != nil {
				t.Fatal(err)
			}
		}
		for range explicit {
			exec(begin, nil, nil)
			for range inTx {
				exec(ins, []int64{1}, text)
			}
			exec(commit, nil, nil)
		}
		for range auto {
			exec(ins, []int64{1}, text)
		}
	})
	for _, x := range q.Transactions {
		t.Logf("%d x %v (%d statements, %d processes): %.3f ms, p50 %.3f ms, max %.3f ms, %d syncs in %.3f ms",
			x.Count, x.Statements, x.StatementCount, x.Processes, x.Sec*1e3, x.P50Sec*1e3, x.MaxSec*1e3, x.Syncs, x.SyncSec*1e3)
	}
	for _, n := range q.Notes {
		t.Log("note:", n)
	}
	find := func(stmts ...string) *model.SQLTransaction {
		for i, x := range q.Transactions {
			if slices.Equal(x.Statements, stmts) {
				return &q.Transactions[i]
			}
		}
		t.Errorf("no transaction of %q among %d kinds", stmts, len(q.Transactions))
		return nil
	}
	const insert = "INSERT INTO t(b) VALUES (?)"
	ex := find("BEGIN", insert, insert, insert, "COMMIT")
	au := find(insert)
	if ex == nil || au == nil {
		return
	}
	for _, c := range []struct {
		x     *model.SQLTransaction
		count int64
		n     int
	}{{ex, explicit, inTx + 2}, {au, auto, 1}} {
		x := c.x
		if x.Count != c.count || x.StatementCount != c.n || x.Processes != 1 {
			t.Errorf("%v: %d transactions of %d statements in %d processes, want %d of %d in 1", x.Statements, x.Count, x.StatementCount, x.Processes, c.count, c.n)
		}
		if x.Syncs < 2*x.Count || x.SyncSec <= 0 || x.SyncSec > x.Sec {
			t.Errorf("%v: %d syncs in %.3f ms of %.3f ms, want at least 2 a transaction, within its time", x.Statements, x.Syncs, x.SyncSec*1e3, x.Sec*1e3)
		}
		if x.Sec <= 0 || x.MaxSec > x.Sec || x.P50Sec <= 0 || x.P99Sec < x.P50Sec {
			t.Errorf("%v: %.3f ms in all, max %.3f, p50 %.3f, p99 %.3f", x.Statements, x.Sec*1e3, x.MaxSec*1e3, x.P50Sec*1e3, x.P99Sec*1e3)
		}
	}
	// A transaction runs from its first statement's first step to the end
	// of its last: it holds its statements' executions.
	var stmtSec float64
	for _, s := range q.Statements {
		if s.Kind == "statement" {
			stmtSec += s.Sec
		}
	}
	if txSec := ex.Sec + au.Sec; txSec < stmtSec*0.99 {
		t.Errorf("the transactions took %.3f ms, their statements %.3f ms: a transaction holds its statements", txSec*1e3, stmtSec*1e3)
	}
}
