package compare

import (
	"testing"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// TestSQLRows: a statement that gained syncs and time between two runs of
// 1,000 transactions differs; one that did not, does not; a statement
// only B ran shows with none in A; pids differ between runs and do not
// matter.
func TestSQLRows(t *testing.T) {
	withSQL := func(r *model.Run, pid int, stmts ...model.SQLStatement) *model.Run {
		for i := range stmts {
			stmts[i].PID, stmts[i].Kind = pid, "statement"
		}
		r.Storage.SQLite = &model.SQLiteIO{SQL: &model.SQLStatements{Statements: stmts}}
		return r
	}
	ins := func(execs, syncs int64, sec float64) model.SQLStatement {
		return model.SQLStatement{Text: "INSERT INTO t VALUES (?)", Execs: execs, Done: execs, Steps: execs, Sec: sec,
			SQLStmtIO: model.SQLStmtIO{Writes: 2 * execs, Syncs: syncs}}
	}
	sel := model.SQLStatement{Text: "SELECT a FROM t WHERE b = ?", Execs: 1000, Done: 1000, Steps: 2000, Sec: 0.05,
		SQLStmtIO: model.SQLStmtIO{Reads: 1000}}
	a := withSQL(sqliteRun(), 10, ins(1000, 1000, 0.4), sel)
	b := withSQL(sqliteRun(), 20, ins(1000, 3000, 1.2), sel,
		model.SQLStatement{Text: "DELETE FROM t", Execs: 500, Done: 500, Steps: 500, Sec: 0.1})
	ds := differences(a, b)
	id := "sql." + textID("INSERT INTO t VALUES (?)")
	if d := row(ds, id+".syncs"); d == nil || !d.Differs || d.A != 1 || d.B != 3 {
		t.Errorf("the INSERT's syncs per transaction: %+v, want 1 against 3, differing", d)
	}
	if d := row(ds, id+".time"); d == nil || !d.Differs {
		t.Errorf("the INSERT's mean time, 0.4 ms against 1.2 ms: %+v, want it to differ", d)
	}
	sid := "sql." + textID(sel.Text)
	for _, m := range []string{".execs", ".io", ".time"} {
		if d := row(ds, sid+m); d == nil || d.Differs {
			t.Errorf("the unchanged SELECT's %s: %+v, want present and the same", m, d)
		}
	}
	if d := row(ds, "sql."+textID("DELETE FROM t")+".execs"); d == nil || d.A != 0 || d.B != 0.5 || !d.Differs {
		t.Errorf("the DELETE only B ran: %+v", d)
	}
	// Without --sql on one side there is nothing to set side by side.
	a.Storage.SQLite = nil
	for _, d := range differences(a, b) {
		if d.Group == GroupSQL {
			t.Errorf("a statement row with one side unobserved: %+v", d)
		}
	}
}
