package rows

import (
	"fmt"
	"strings"
	"testing"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

func TestStorageLost(t *testing.T) {
	if got := StorageLost(model.StorageDropped{Unseen: 3}); len(got) != 0 {
		t.Errorf("nothing lost: got %q", got)
	}
	got := StorageLost(model.StorageDropped{Requests: 2, MissedRuns: map[string]int64{"block_rq_complete": 39, "block_rq_issue": 1}})
	if len(got) != 2 {
		t.Fatalf("got %q, want two warnings", got)
	}
	if !strings.Contains(got[0], "2 requests") {
		t.Errorf("first warning %q does not count the lost requests", got[0])
	}
	if !strings.Contains(got[1], "block_rq_complete 39, block_rq_issue 1") {
		t.Errorf("second warning %q does not list the missed runs by program, sorted", got[1])
	}
}

func TestTopFiles(t *testing.T) {
	if got := TopFiles([]model.FileIO{{Path: "/a"}}, nil, 3); got != nil {
		t.Errorf("one file: got %q, want no lines", got)
	}
	fs := []model.FileIO{
		{Path: "/d/db", BlockedSec: 0.5, Reads: model.FileOps{Count: 10, Bytes: 40960}, Writes: model.FileOps{Count: 5, Bytes: 20480}},
		{Path: "/d/db-wal", BlockedSec: 0.1, Writes: model.FileOps{Count: 1000, Bytes: 4 << 20}, Syncs: 3},
		{Path: "/d/log", BlockedSec: 0, Writes: model.FileOps{Count: 20, Bytes: 100}},
	}
	dirs, _ := Directories(fs, 8)
	got := TopFiles(fs, dirs, 2)
	want := []string{
		"most blocked on storage: db 500ms, db-wal 100ms",
		"most bytes: db-wal 4 MiB, db 60 KiB",
		"most calls: db-wal 1,003, log 20",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A copy of a tree (rsync of 20,000 files): past the rows, the files are
// summed by directory at the deepest level that gives few enough groups,
// with the probe's directory entries (files past the ones it keeps one by
// one) in theirs, and the most lines name directories, not the one largest
// file.
func TestDirectories(t *testing.T) {
	var fs []model.FileIO
	file := func(path string, bytes int64, sec float64) {
		fs = append(fs, model.FileIO{Path: path, Instances: 1, Writes: model.FileOps{Count: 1, Bytes: bytes, CallSec: sec}})
	}
	file("/dst/etc/ssl/openssl.cnf", 24<<10, 0.001)
	for i := range 5 {
		file(fmt.Sprintf("/dst/usr/share/doc/f%d", i), 1<<10, 0.0001)
		file(fmt.Sprintf("/dst/usr/lib/x/lib%d.so", i), 1<<20, 0.002)
	}
	fs = append(fs, model.FileIO{Path: "/dst/usr/lib/y", Folded: true, FoldedFiles: 3000, Writes: model.FileOps{Count: 3000, Bytes: 70 << 20, CallSec: 0.5}, Syncs: 3000, BlockedSec: 2},
		model.FileIO{Path: "(other directories)", Folded: true, FoldedFiles: 10, Writes: model.FileOps{Count: 10, Bytes: 10 << 10, CallSec: 0.01}})

	if dirs, n := Directories(fs[:3], 8); dirs != nil || n != 3 {
		t.Errorf("3 files, 8 rows: got %v (%d files), want no directories", dirs, n)
	}
	dirs, n := Directories(fs, 3)
	if n != 1+10+3000+10 {
		t.Errorf("files = %d, want %d", n, 1+10+3000+10)
	}
	var got []string
	for _, d := range dirs {
		got = append(got, fmt.Sprintf("%s %d %d", d.Path, d.Files, d.WriteBytes))
	}
	// Depth 2 (/dst/etc, /dst/usr, other) is the deepest with 3 groups.
	want := []string{fmt.Sprintf("/dst/usr 3010 %d", 70<<20+5<<20+5<<10), "(other directories) 10 10240", "/dst/etc 1 24576"}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("got %q, want %q", got, want)
	}
	lines := TopFiles(fs, dirs, 2)
	if len(lines) != 3 || lines[1] != "most bytes: /dst/usr/ (3,010 files) 75 MiB, /dst/etc/ (1 file) 24 KiB" {
		t.Errorf("most lines: %q", lines)
	}
	// All in one directory: the lines name files (a directory alone says
	// nothing the table does not).
	var libs []model.FileIO
	for _, f := range fs {
		if strings.Contains(f.Path, "/lib/x/") {
			libs = append(libs, f)
		}
	}
	libDirs, _ := Directories(libs, 3)
	if lines := TopFiles(libs, libDirs, 1); len(lines) != 2 || !strings.HasPrefix(lines[0], "most bytes: lib0.so") {
		t.Errorf("one directory's files: %q", lines)
	}
	// A folded entry in the files table says what it holds.
	if l := Files(fs, 20); l.Rows[len(l.Rows)-2].Path != "/dst/usr/lib/y/ (3,000 files)" {
		t.Errorf("folded row: %q", l.Rows[len(l.Rows)-2].Path)
	}
}

// A file written by threads at once says how many and what the lock cost
// them; one written a thread at a time, or a directory's files, says
// nothing.
func TestQueue(t *testing.T) {
	f := Files([]model.FileIO{
		{Path: "/d/shared", LockSec: 3.9, Writes: model.FileOps{Count: 10, Threads: 16, Concurrency: 5.27}},
		{Path: "/d/own", Writes: model.FileOps{Count: 10, Threads: 16, Concurrency: 1.1}},
		{Path: "/d", Folded: true, FoldedFiles: 9, Writes: model.FileOps{Count: 10, Threads: 16, Concurrency: 5}},
	}, 8).Rows
	if got := Queue(f[0]); got != "writers at once: 5.3 on average of 16 threads; 3.9s waiting on locks" {
		t.Errorf("shared: %q", got)
	}
	if got := Queue(f[1]) + Queue(f[2]); got != "" {
		t.Errorf("one writer at a time, a directory: %q", got)
	}
}

func TestStatementsOf(t *testing.T) {
	q := &model.SQLStatements{AttributedShare: 0.985, AttributedBytesShare: 0.99, CallsShare: 0.5, FileCalls: 400,
		Unattributed: model.SQLStmtIO{Reads: 3},
		Statements: []model.SQLStatement{
			{Kind: "statement", Text: "SELECT a FROM t WHERE b = ?", NestedIn: "SELECT f(?)", Execs: 10, Done: 10, Steps: 510, Sec: 0.25, P50Sec: 0.02, P99Sec: 0.05,
				SQLStmtIO: model.SQLStmtIO{Reads: 150, Pages: []model.SQLitePages{{Kind: "db", Type: "table-leaf", Reads: 120}, {Kind: "db", Type: "index-leaf", Reads: 30}}},
				Calls:     model.SQLCalls{Reads: 160}},
			{Kind: "checkpoint", Text: "(checkpoint)", Execs: 2, Steps: 2, SQLStmtIO: model.SQLStmtIO{Writes: 40, Syncs: 4},
				Calls: model.SQLCalls{Writes: 40, Syncs: 4, SyncSec: 0.002}},
			{Kind: "statement", Text: "INSERT INTO t VALUES (?)", Execs: 1, Done: 1, Steps: 1},
		}}
	s := StatementsOf(q, 2)
	if len(s.Rows) != 2 || s.More != 1 {
		t.Fatalf("%d rows, %d more; want 2 and 1", len(s.Rows), s.More)
	}
	if want := "50.0% of the workload's 400 file calls made under one; 98.5% of its 197 SQLite file calls, 99.0% of their bytes"; s.Attributed != want {
		t.Errorf("attributed %q, want %q", s.Attributed, want)
	}
	sel := s.Rows[0]
	if sel.Rows != "500" || sel.Execs != "10" || sel.Reads != "160" || sel.TopPages != "db table-leaf 80%" || sel.Total == "" || sel.NestedIn != "SELECT f(?)" {
		t.Errorf("the SELECT's row: %+v", sel)
	}
	// A pseudo-statement has no rows or times of its own: blank, not 0.
	if cp := s.Rows[1]; cp.Rows != "" || cp.Total != "" || cp.Syncs != "4" || cp.SyncTime != "2.00ms" || cp.NestedIn != "" {
		t.Errorf("the checkpoint's row: %+v", cp)
	}
}

// TestStatesOf: a statement's time by state as shares, largest first,
// states under 1% and past the fourth left out.
func TestStatesOf(t *testing.T) {
	got := statesOf(map[string]float64{"sleep": 3.3936, "cpu": 0.5064, "cpu-wait": 0.4281, "other": 0.0004, "lock": 0.05})
	if want := "sleep 78%, cpu 12%, cpu-wait 10%, lock 1%"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := statesOf(nil); got != "" {
		t.Errorf("no states: got %q", got)
	}
}

// TestPageCacheNotCounted: without --storage the per-page counts read as
// not counted, never as 0 pages; the figures measured either way stay.
func TestPageCacheNotCounted(t *testing.T) {
	u := Units{Dur: func(s float64) string { return fmt.Sprintf("%.1fs", s) }}
	got := PageCacheOf(&model.PageCache{HitRatio: -1, PagesNotCounted: true, FaultLookups: 12, ReadaheadSync: 3, WrittenBackBytes: 8 << 20}, u)
	for _, s := range []string{got.ReadHits, got.OtherAdded, got.Writes} {
		if !strings.Contains(s, "--storage") || strings.Contains(s, "0 pages") {
			t.Errorf("%q: want it to say the count needs --storage, and no count", s)
		}
	}
	if !strings.Contains(got.Writes, "8 MiB written to disk") || !strings.Contains(got.OtherAdded, "12 fault lookups") || !strings.Contains(got.Readahead, "3 windows") {
		t.Errorf("%+v: the figures measured without --storage are missing", got)
	}
	counted := PageCacheOf(&model.PageCache{Lookups: 1000, ReadAdded: 100, HitRatio: 0.9, Dirtied: 5}, u)
	if !strings.HasPrefix(counted.ReadHits, "90.0%") || !strings.HasPrefix(counted.Writes, "5 pages dirtied") {
		t.Errorf("%+v: counted pages", counted)
	}
}
