package sqlite

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// testConfig is small and unsynced: these tests are about what the phases
// do, not about storage speed.
func testConfig(t *testing.T) model.SQLiteConfig {
	t.Helper()
	cfg := Defaults()
	cfg.Rows = 25
	cfg.Sync = "off"
	cfg.Dir = t.TempDir()
	return cfg
}

// newBench makes and prepares a Bench and cleans it up when the test ends.
func newBench(t *testing.T, cfg model.SQLiteConfig) *Bench {
	t.Helper()
	b, err := New(&cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := b.Cleanup(); err != nil {
			t.Errorf("Cleanup: %v", err)
		}
	})
	if err := b.Prepare(context.Background()); err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	return b
}

func run(t *testing.T, b *Bench) *model.SQLiteResult {
	t.Helper()
	res, err := b.Run(context.Background(), nil)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res.SQLite
}

// query returns every row of q, read through the benchmark's own connection.
func query(t *testing.T, b *Bench, q string) [][]any {
	t.Helper()
	rows, err := b.conn.Query(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return rows
}

func queryInt(t *testing.T, b *Bench, q string) int64 {
	t.Helper()
	r := query(t, b, q)
	if len(r) != 1 {
		t.Fatalf("%s: %d rows, want 1", q, len(r))
	}
	n, ok := r[0][0].(int64)
	if !ok {
		t.Fatalf("%s: %T %v, want an integer", q, r[0][0], r[0][0])
	}
	return n
}

func TestPhasesCounts(t *testing.T) {
	for _, tc := range []struct {
		txSize, rows int
		wantTx       int64
	}{
		{1, 25, 25},
		{10, 25, 3}, // 10 + 10 + 5
		{10, 30, 3},
		{50, 25, 1},
	} {
		cfg := testConfig(t)
		cfg.TxSize, cfg.Rows = tc.txSize, tc.rows
		cfg.Phases = []string{"insert", "update", "select", "delete"}
		b := newBench(t, cfg)
		res := run(t, b)
		wantRows := map[string]int64{"insert": int64(tc.rows), "update": int64(tc.rows), "select": int64(tc.rows), "delete": 0}
		if len(res.Phases) != 4 {
			t.Fatalf("tx_size %d: %d phases, want 4", tc.txSize, len(res.Phases))
		}
		for i, p := range res.Phases {
			if p.Phase != cfg.Phases[i] {
				t.Errorf("phase %d is %q, want %q", i, p.Phase, cfg.Phases[i])
			}
			if p.Statements != int64(tc.rows) || p.Transactions != tc.wantTx || p.RowsAfter != wantRows[p.Phase] {
				t.Errorf("tx_size %d rows %d %s: statements %d transactions %d rows_after %d, want %d %d %d",
					tc.txSize, tc.rows, p.Phase, p.Statements, p.Transactions, p.RowsAfter, tc.rows, tc.wantTx, wantRows[p.Phase])
			}
			if p.Latency.Count != p.Transactions {
				t.Errorf("%s: %d latencies recorded, want one per transaction (%d)", p.Phase, p.Latency.Count, p.Transactions)
			}
			if p.DurationSec <= 0 || p.TxPerSec <= 0 || p.Latency.MinNs <= 0 || p.Latency.MaxNs < p.Latency.P50Ns {
				t.Errorf("%s: implausible timing %+v", p.Phase, p)
			}
		}
	}
}

func TestInsertThenUpdateContents(t *testing.T) {
	cfg := testConfig(t)
	cfg.Phases = []string{"insert", "update"}
	b := newBench(t, cfg)
	// The values each phase was to write, keyed by id.
	want := all(cfg.Phases, cfg.Rows, cfg.Seed)
	inserted := map[int64][]any{}
	for k, a := range want[0] {
		if a[0] != int64(k+1) {
			t.Fatalf("insert %d has id %v, want ids ascending from 1", k, a[0])
		}
		inserted[a[0].(int64)] = a
	}
	updated := map[int64][]any{}
	var order []int64
	for _, a := range want[1] {
		updated[a[3].(int64)] = a
		order = append(order, a[3].(int64))
	}
	if len(updated) != cfg.Rows {
		t.Fatalf("update visits %d distinct ids, want all %d", len(updated), cfg.Rows)
	}
	if slices.IsSorted(order) {
		t.Errorf("update ids %v are in order, want them shuffled", order)
	}
	run(t, b)
	rows := query(t, b, "SELECT id, name, phone, email, address, updated FROM contacts ORDER BY id")
	if len(rows) != cfg.Rows {
		t.Fatalf("%d rows, want %d", len(rows), cfg.Rows)
	}
	for _, r := range rows {
		id := r[0].(int64)
		ins, upd := inserted[id], updated[id]
		if ins == nil || upd == nil {
			t.Fatalf("row id %d was not inserted and updated", id)
		}
		// name and address as inserted; phone, email and updated as updated.
		want := []any{id, ins[1], upd[0], upd[1], ins[4], int64(updatedAt) + id}
		if !slices.Equal(r, want) {
			t.Errorf("row %v, want %v", r, want)
		}
		if r[2] == ins[2] || r[3] == ins[3] {
			t.Errorf("row %d: update left phone or email as inserted", id)
		}
		for c, n := range map[int]int{1: nameLen, 2: phoneLen, 3: emailLen, 4: addressLen} {
			if s, _ := r[c].(string); len(s) != n {
				t.Errorf("row %d column %d is %q, want %d characters", id, c, s, n)
			}
		}
	}
}

// A phase longer than a chunk of generated arguments, with a transaction
// across the chunk boundary, runs every statement once.
func TestPhaseAcrossChunks(t *testing.T) {
	cfg := testConfig(t)
	cfg.Rows, cfg.TxSize, cfg.Journal = chunkRows+100, 1000, "memory"
	cfg.Phases = []string{"insert", "update", "delete"}
	b := newBench(t, cfg)
	res := run(t, b)
	wantTx := int64((cfg.Rows + 999) / 1000)
	for i, p := range res.Phases {
		wantRows := int64(cfg.Rows)
		if i == 2 {
			wantRows = 0
		}
		if p.Statements != int64(cfg.Rows) || p.Transactions != wantTx || p.Latency.Count != wantTx || p.RowsAfter != wantRows {
			t.Errorf("%s: %d statements, %d transactions, %d latencies, %d rows after; want %d, %d, %d, %d",
				p.Phase, p.Statements, p.Transactions, p.Latency.Count, p.RowsAfter, cfg.Rows, wantTx, wantTx, wantRows)
		}
	}
}

func TestJournalModes(t *testing.T) {
	for _, j := range JournalModes {
		t.Run(j, func(t *testing.T) {
			cfg := testConfig(t)
			cfg.Rows = 10
			cfg.Journal = j
			b := newBench(t, cfg)
			if got, _ := b.pragma("journal_mode"); got != j {
				t.Errorf("PRAGMA journal_mode = %v, want %s", got, j)
			}
			res := run(t, b)
			if n := len(res.Phases); n != 3 || res.Phases[2].RowsAfter != 0 {
				t.Errorf("phases %+v, want 3 ending with 0 rows", res.Phases)
			}
			_, err := os.Stat(b.DBPath() + "-wal")
			if (j == "wal") != (err == nil) {
				t.Errorf("journal %s: -wal file exists: %v", j, err == nil)
			}
		})
	}
}

func TestSyncModes(t *testing.T) {
	for _, j := range []string{"wal", "delete"} {
		for _, s := range SyncModes {
			t.Run(j+"-"+s, func(t *testing.T) {
				cfg := testConfig(t)
				cfg.Rows = 5
				cfg.Journal, cfg.Sync = j, s
				b := newBench(t, cfg)
				if got, _ := b.pragma("synchronous"); got != syncLevel[s] {
					t.Errorf("PRAGMA synchronous = %v, want %d (%s)", got, syncLevel[s], s)
				}
				if got, _ := b.pragma("journal_mode"); got != j {
					t.Errorf("PRAGMA journal_mode = %v, want %s", got, j)
				}
				res := run(t, b)
				if len(res.Phases) != 3 || res.Phases[0].RowsAfter != 5 {
					t.Errorf("phases %+v", res.Phases)
				}
			})
		}
	}
}

func TestPageAndCacheSize(t *testing.T) {
	for _, tc := range []struct {
		journal         string
		page, cacheSize int
	}{
		{"delete", 1024, -500},
		{"wal", 16384, 100}, // WAL fixes the page size: it must be set first
		{"wal", 512, -2000},
		{"memory", 65536, 0},
	} {
		cfg := testConfig(t)
		cfg.Rows = 200
		cfg.Journal, cfg.PageSize, cfg.CacheSize = tc.journal, tc.page, tc.cacheSize
		cfg.Phases = []string{"insert"}
		b := newBench(t, cfg)
		run(t, b)
		if got, _ := b.pragma("page_size"); got != int64(tc.page) {
			t.Errorf("%s: PRAGMA page_size = %v, want %d", tc.journal, got, tc.page)
		}
		if got, _ := b.pragma("cache_size"); got != int64(tc.cacheSize) {
			t.Errorf("%s: PRAGMA cache_size = %v, want %d", tc.journal, got, tc.cacheSize)
		}
		// 200 rows of ~130 bytes take more pages the smaller they are.
		pages := queryInt(t, b, "PRAGMA page_count")
		if tc.page <= 1024 && pages < 20 || tc.page >= 16384 && pages > 8 {
			t.Errorf("page_size %d: %d pages for 200 rows", tc.page, pages)
		}
	}
}

func TestIndex(t *testing.T) {
	for _, index := range []bool{true, false} {
		cfg := testConfig(t)
		cfg.Index = index
		b := newBench(t, cfg)
		n := queryInt(t, b, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'contacts_name'")
		if (n == 1) != index {
			t.Errorf("index %v: contacts_name present: %v", index, n == 1)
		}
	}
}

func TestCancelMidPhase(t *testing.T) {
	for _, tc := range []struct {
		name      string
		txSize    int
		cancelAt  int64 // statement of the update phase after which ctx is cancelled
		wantStmts int64
		wantTx    int64
	}{
		// Autocommit: the statement that saw the cancel is done and counted.
		{"autocommit", 1, 7, 7, 7},
		// Batched: stop inside the third transaction and commit its 5 statements.
		{"batched", 10, 25, 25, 3},
		// Cancelled right at a transaction boundary.
		{"boundary", 10, 20, 20, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t)
			cfg.Rows, cfg.TxSize = 100, tc.txSize
			b := newBench(t, cfg)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			b.onStatement = func(phase string, n int64) {
				if phase == "update" && n == tc.cancelAt {
					cancel()
				}
			}
			res, err := b.Run(ctx, nil)
			if err != nil {
				t.Fatalf("Run after cancel = %v, want nil", err)
			}
			ph := res.SQLite.Phases
			if len(ph) != 2 {
				t.Fatalf("%d phases, want insert and the partial update", len(ph))
			}
			up := ph[1]
			if up.Statements != tc.wantStmts || up.Transactions != tc.wantTx || up.Latency.Count != tc.wantTx || up.RowsAfter != 100 {
				t.Errorf("partial update: %d statements, %d transactions, %d latencies, %d rows; want %d, %d, %d, 100",
					up.Statements, up.Transactions, up.Latency.Count, up.RowsAfter, tc.wantStmts, tc.wantTx, tc.wantTx)
			}
			if res.DurationSec != ph[0].DurationSec+ph[1].DurationSec {
				t.Errorf("duration %v, want the sum of the phases'", res.DurationSec)
			}
			// The database is consistent and holds exactly what was counted.
			if r := query(t, b, "PRAGMA integrity_check"); r[0][0] != "ok" {
				t.Errorf("integrity_check: %v", r)
			}
			if n := queryInt(t, b, "SELECT count(*) FROM contacts WHERE updated >= 1800000000"); n != tc.wantStmts {
				t.Errorf("%d rows updated, want %d", n, tc.wantStmts)
			}
			if b.conn.AutoCommit() == false {
				t.Error("a transaction is still open")
			}
		})
	}
}

func TestCancelBeforeRun(t *testing.T) {
	b := newBench(t, testConfig(t))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := b.Run(ctx, nil)
	if err != nil || len(res.SQLite.Phases) != 0 {
		t.Errorf("Run on a cancelled ctx = %+v, %v; want no phases and nil", res.SQLite, err)
	}
}

func TestPrepareCancelledLeavesNothing(t *testing.T) {
	cfg := testConfig(t)
	b, err := New(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := b.Prepare(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Prepare = %v, want context.Canceled", err)
	}
	if _, err := os.Stat(b.DBPath()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("database left after a failed Prepare: %v", err)
	}
	if err := b.Cleanup(); err != nil {
		t.Fatal(err)
	}
	assertEmpty(t, cfg.Dir)
}

// A statement that does not change exactly one row is an error naming the
// phase, the row and the database, not a silently wrong count.
func TestNotOneRowIsAnError(t *testing.T) {
	for _, txSize := range []int{1, 10} {
		cfg := testConfig(t)
		cfg.TxSize = txSize
		b := newBench(t, cfg)
		b.onStatement = func(phase string, n int64) {
			if phase == "insert" && n == int64(cfg.Rows) {
				if err := b.conn.Exec("DELETE FROM contacts WHERE id = 5"); err != nil {
					t.Error(err)
				}
			}
		}
		res, err := b.Run(context.Background(), nil)
		if err == nil {
			t.Fatal("Run = nil error, want one about id 5")
		}
		for _, w := range []string{"sqlite update phase", b.DBPath(), "(id 5)", "exactly one row", "changed 0 rows"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error %q lacks %q", err, w)
			}
		}
		up := res.SQLite.Phases[1]
		if n := queryInt(t, b, "SELECT count(*) FROM contacts WHERE updated >= 1800000000"); n != up.Statements {
			t.Errorf("tx_size %d: %d rows updated, stats say %d", txSize, n, up.Statements)
		}
		if !b.conn.AutoCommit() {
			t.Error("a transaction is still open after the error")
		}
	}
}

// A SELECT that finds no row is an error too, and so is an error from SQLite
// itself, which names the database once and leaves no transaction open.
func TestSelectAndSQLiteErrors(t *testing.T) {
	const dup = "INSERT INTO contacts(id, name) VALUES(5, 'x')"
	for _, tc := range []struct {
		sql    string
		at     int64 // run sql after this statement of the insert phase (of 25)
		txSize int
		want   []string
	}{
		{"DELETE FROM contacts WHERE id = 5", 25, 1, []string{"sqlite select phase on ", "(id 5)", "exactly one row", "found 0 rows"}},
		{dup, 3, 1, []string{"sqlite insert phase (id 5)", "UNIQUE constraint failed", "result code 1555"}},
		{dup, 3, 10, []string{"sqlite insert phase (id 5)", "UNIQUE constraint failed"}},
	} {
		cfg := testConfig(t)
		cfg.TxSize = tc.txSize
		cfg.Phases = []string{"insert", "select"}
		b := newBench(t, cfg)
		b.onStatement = func(phase string, n int64) {
			if phase == "insert" && n == tc.at {
				if err := b.conn.Exec(tc.sql); err != nil {
					t.Error(err)
				}
			}
		}
		_, err := b.Run(context.Background(), nil)
		if err == nil {
			t.Fatalf("%s: Run = nil error", tc.sql)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error %q lacks %q", err, w)
			}
		}
		if n := strings.Count(err.Error(), b.DBPath()); n != 1 {
			t.Errorf("error %q names the database %d times, want once", err, n)
		}
		if !b.conn.AutoCommit() {
			t.Error("a transaction is still open after the error")
		}
	}
}

func TestProgress(t *testing.T) {
	b := newBench(t, testConfig(t))
	var got []float64
	if _, err := b.Run(context.Background(), func(f float64) { got = append(got, f) }); err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 || got[len(got)-1] != 1 || !slices.IsSorted(got) {
		t.Errorf("progress %v, want rising to a final 1", got)
	}
}

func TestRunBeforePrepare(t *testing.T) {
	cfg := testConfig(t)
	b, err := New(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Cleanup()
	if _, err := b.Run(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "Prepare first") {
		t.Errorf("Run before Prepare = %v", err)
	}
}

func TestRunTwice(t *testing.T) {
	b := newBench(t, testConfig(t))
	run(t, b)
	if _, err := b.Run(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "already ran") {
		t.Errorf("second Run = %v, want 'already ran'", err)
	}
	if err := b.Prepare(context.Background()); err == nil {
		t.Error("second Prepare succeeded")
	}
}

func TestNewFillsConfig(t *testing.T) {
	cfg := testConfig(t)
	t.Chdir(cfg.Dir)
	if err := os.Mkdir("sub", 0o755); err != nil {
		t.Fatal(err)
	}
	cfg.Dir = "./sub/" // made absolute and clean
	b, err := New(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Cleanup()
	if !filepath.IsAbs(cfg.Dir) || strings.Contains(cfg.Dir, "sub/") || cfg.DirCreated {
		t.Errorf("dir %q created %v, want absolute, clean and not created", cfg.Dir, cfg.DirCreated)
	}
	if cfg.SQLiteVersion == "" || !strings.HasPrefix(cfg.SQLiteVersion, "3.") {
		t.Errorf("sqlite_version %q", cfg.SQLiteVersion)
	}
	if got := b.Config(); got.Dir != cfg.Dir || got.SQLiteVersion != cfg.SQLiteVersion {
		t.Errorf("Config() = %+v, want %+v", got, cfg)
	}
}

func TestNewRejectsInvalid(t *testing.T) {
	cfg := testConfig(t)
	cfg.Journal = "nope"
	if _, err := New(&cfg); err == nil || !strings.Contains(err.Error(), "journal") {
		t.Errorf("New with a bad journal = %v", err)
	}
	assertEmpty(t, cfg.Dir)
}

func assertEmpty(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("%s holds %v, want nothing", dir, names)
	}
}
