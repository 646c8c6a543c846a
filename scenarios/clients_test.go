package scenarios

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/report/rows"
)

// The rest of issue 18's matrix: SQLite through the programs people use
// (the sqlite3 shell, python3's sqlite3 module), and a copy of many files.

// sqliteInserts is how many one-row transactions the SQLite clients make.
const sqliteInserts = 200

// sqliteTransactions holds what the SQLite programs' records must show:
// each insert a rollback-journal transaction (journal written and synced,
// then the database, synced), decoded by page, and its syncs timed.
func sqliteTransactions(t *testing.T, r *model.Run) {
	t.Helper()
	q := r.Storage.SQLite
	if q == nil {
		t.Fatal("no SQLite file decoded")
	}
	var n int64
	for _, p := range q.Patterns {
		s := strings.Join(p.Steps, " -> ")
		if strings.Contains(s, "sync journal") && strings.Contains(s, "sync db") {
			n += p.Count
		}
	}
	if n < sqliteInserts {
		t.Errorf("%d transactions synced the journal, then the database: want the %d inserts (patterns %+v)", n, sqliteInserts, q.Patterns)
	}
	var syncs int64
	for _, s := range r.TimeAccounting.Syncs {
		syncs += s.Count
	}
	if syncs < 2*sqliteInserts {
		t.Errorf("%d sync calls: want the journal's and the database's of each of the %d inserts", syncs, sqliteInserts)
	}
	// Each insert syncs twice and runs SQLite's code: which of the two
	// leads depends on the disk (fdatasync takes ~250 µs here, and the
	// CPU leads); on a loaded machine, waiting for a CPU may, and the
	// verdict then names what took the CPUs (beside two CPU burners: the
	// burners, by pid and parent).
	switch v := r.Verdict; v.Primary {
	case model.CatStorageSync, model.CatCPU:
	case model.CatCPUWait:
		if !strings.Contains(v.Summary, "the CPUs it waited for went to") {
			t.Errorf("verdict %q: CPU-starved without naming what took the CPUs", v.Summary)
		}
	default:
		t.Errorf("verdict %q (%s): want sync-bound or CPU-bound (CPU-starved on a loaded machine), %d one-row transactions each syncing twice", v.Summary, v.Primary, sqliteInserts)
	}
}

// sqliteScript is the SQL of the inserts, each its own transaction.
func sqliteScript() string {
	var b strings.Builder
	b.WriteString("PRAGMA journal_mode=DELETE;\nCREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT);\nCREATE INDEX t_name ON t(name);\n")
	for i := range sqliteInserts {
		fmt.Fprintf(&b, "INSERT INTO t(name) VALUES('name %d');\n", i)
	}
	return b.String()
}

// TestSQLiteShell: the sqlite3 shell reading a script, run through sh -c
// (its stdin redirected), observed with --storage.
func TestSQLiteShell(t *testing.T) {
	needTool(t, "sqlite3")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "script.sql"), []byte(sqliteScript()), 0o644); err != nil {
		t.Fatal(err)
	}
	r := observed(t, dir, []string{"--storage"}, "sh", "-c", "sqlite3 t.db < script.sql")
	sqliteTransactions(t, r)
}

// TestSQLitePython: python3's sqlite3 module; the program is named by its
// script, not python3.
func TestSQLitePython(t *testing.T) {
	needTool(t, "python3")
	dir := t.TempDir()
	prog := fmt.Sprintf(`import sqlite3
db = sqlite3.connect("t.db", isolation_level=None)
db.executescript(%q)
`, sqliteScript())
	if err := os.WriteFile(filepath.Join(dir, "load.py"), []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	r := observed(t, dir, []string{"--storage"}, "python3", "load.py")
	sqliteTransactions(t, r)
	named := false
	for _, th := range r.TimeAccounting.Threads {
		named = named || th.Title == "load.py"
	}
	if !named {
		t.Errorf("no thread titled load.py: %+v", r.TimeAccounting.Threads)
	}
}

// TestRsyncManyFiles: rsync -a --fsync of more files than the storage
// probe keeps one by one loses no call and no sync: the files past them
// are counted by directory, every byte copied is in the files' figures,
// every file synced is in the list, and the most lines name directories.
// Regression: "18976 events were dropped", "lost 53,893 file calls", and
// the "most bytes" line named openssl.cnf, 24 KiB of a 77 MB copy.
func TestRsyncManyFiles(t *testing.T) {
	needTool(t, "rsync")
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "dst")
	const files = 4096 + 1200
	var size int64
	for i := range files {
		d := filepath.Join(src, fmt.Sprintf("d%d", i%6))
		if i < 6 {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		n := 100 + (i*37)%3000
		size += int64(n)
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%d", i)), make([]byte, n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := observed(t, dir, []string{"--storage"}, "rsync", "-a", "--fsync", src+"/", dst+"/")
	root, err := filepath.EvalSymlinks(dst)
	if err != nil {
		t.Fatal(err)
	}
	st, ta := r.Storage, r.TimeAccounting
	var written, count, folded int64
	for _, f := range st.Files {
		if !strings.HasPrefix(f.Path, root+"/") {
			continue
		}
		written += f.Writes.Bytes
		if f.Folded {
			count += f.FoldedFiles
			folded++
		} else {
			count++
		}
	}
	if written != size || count != files || folded == 0 {
		t.Errorf("files under %s: %d bytes written in %d files (%d directories' entries), want %d in %d, some counted by directory", root, written, count, folded, size, files)
	}
	if st.Dropped.FileOps != 0 || st.FoldedCalls == 0 {
		t.Errorf("%d file calls dropped, %d counted by directory", st.Dropped.FileOps, st.FoldedCalls)
	}
	var syncs, synced int64
	for _, f := range ta.SyncedFiles {
		if !strings.HasPrefix(f.Path, root+"/") {
			continue
		}
		syncs += f.Count
		if f.Folded {
			synced += f.FoldedFiles
		} else {
			synced++
		}
	}
	if syncs != files || synced != files || ta.Dropped != 0 {
		t.Errorf("synced files under %s: %d syncs of %d files, want %d of %d; %d events dropped", root, syncs, synced, files, files, ta.Dropped)
	}
	dirs, _ := rows.Directories(st.Files, 8)
	lines := rows.TopFiles(st.Files, dirs, 3)
	if len(lines) < 2 || !strings.Contains(lines[1], "most bytes: "+root+"/ (") {
		t.Errorf("the most lines do not lead with the copy's directory %s:\n%s", root, strings.Join(lines, "\n"))
	}
}

// TestSQLStatementsPython: a python3 program scans a table whose pages are
// not in the page cache (dropped with fadvise after it was made), then
// makes 30 single-row INSERT transactions in rollback-journal mode. With
// --sql the SELECT leads the statements by time with the table's reads,
// the INSERTs carry the syncs, and nearly all SQLite file IO is charged to
// a statement. The table is made by an unobserved run first.
func TestSQLStatementsPython(t *testing.T) {
	needTool(t, "python3")
	dir := t.TempDir()
	const rows, inserts = 64000, 30
	load := fmt.Sprintf(`import sqlite3
db = sqlite3.connect("t.db", isolation_level=None)
db.execute("PRAGMA journal_mode=DELETE")
db.execute("CREATE TABLE big(a INTEGER PRIMARY KEY, b TEXT)")
db.execute("CREATE TABLE small(a INTEGER PRIMARY KEY, b TEXT)")
db.execute("BEGIN")
for i in range(%d):
    db.execute("INSERT INTO big(b) VALUES (?)", ("x" * 1000,))
db.execute("COMMIT")
db.close()
`, rows)
	work := fmt.Sprintf(`import os, sqlite3
fd = os.open("t.db", os.O_RDONLY)
os.fsync(fd)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
os.close(fd)
db = sqlite3.connect("t.db", isolation_level=None)
db.execute("PRAGMA synchronous=FULL")
db.execute("PRAGMA cache_size=-256")
total = db.execute("SELECT sum(length(b)) FROM big WHERE b <> 'y'").fetchone()[0]
assert total == %d * 1000, total
for i in range(%d):
    db.execute("INSERT INTO small(b) VALUES ('row %%d')" %% i)
db.close()
`, rows, inserts)
	for name, prog := range map[string]string{"load.py": load, "work.py": work} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(prog), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("python3", "load.py")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("load.py: %v\n%s", err, out)
	}
	r := observed(t, dir, []string{"--sql"}, "python3", "work.py")
	if r.Storage == nil || r.Storage.SQLite == nil || r.Storage.SQLite.SQL == nil {
		t.Fatalf("no SQL statements in the record (warnings %v)", r.Warnings)
	}
	q := r.Storage.SQLite.SQL
	for _, s := range q.Statements {
		t.Logf("%-60.60s execs %d, %.1f ms, reads %d (%d pages read in) writes %d syncs %d", s.Text, s.Execs, s.Sec*1e3, s.Reads, s.Calls.ReadMissPages, s.Writes, s.Syncs)
	}
	top := q.Statements[0]
	if !strings.HasPrefix(top.Text, "SELECT sum(length(b)) FROM big") {
		t.Errorf("the top statement by time is %q, want the SELECT", top.Text)
	}
	// ~64 MiB of 4 KiB pages, read by pread (SQLite's own cache holds
	// 256 KiB): a page a read, a few to spare.
	if top.Reads < rows/5 {
		t.Errorf("the SELECT read %d times, want at least %d (the table's pages)", top.Reads, rows/5)
	}
	// Its pages were dropped from the page cache first: they came from
	// the device.
	if top.Calls.ReadMissPages < rows/5 {
		t.Errorf("the SELECT brought %d pages into the page cache, want at least %d (the table was not cached)", top.Calls.ReadMissPages, rows/5)
	}
	var ins *model.SQLStatement
	for i := range q.Statements {
		if q.Statements[i].Text == "INSERT INTO small(b) VALUES (?)" {
			ins = &q.Statements[i]
		}
	}
	if ins == nil || ins.Execs != inserts || ins.Syncs < 2*inserts {
		t.Errorf("the INSERTs: %+v, want %d executions with at least %d syncs", ins, inserts, 2*inserts)
	}
	if q.AttributedShare < 0.95 {
		t.Errorf("%.1f%% of the SQLite file calls charged to a statement, want >= 95%% (unattributed %+v)", q.AttributedShare*100, q.Unattributed)
	}
}
