package sqlite

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/workload"
	"github.com/perfsleuth/perfsleuth/internal/workload/sqlite/capi"
)

// Files the benchmark writes, all inside its directory.
const (
	DBName     = "perfsleuth.db"
	MarkerName = ".perfsleuth-sqlite"
	dirPattern = "perfsleuth-sqlite-*"
)

// dbSuffixes are the files SQLite keeps beside the database: the rollback
// journal, the write-ahead log and its shared-memory index.
var dbSuffixes = []string{"", "-journal", "-wal", "-shm"}

const markerText = "This directory is used by perfsleuth's sqlite benchmark.\n" +
	"perfsleuth creates and removes " + DBName + " and its -journal, -wal and -shm files here.\n"

// SQL, as cloop.c runs it.
const (
	createTable = `CREATE TABLE contacts(id INTEGER PRIMARY KEY, name TEXT NOT NULL, phone TEXT, email TEXT, address TEXT, updated INTEGER)`
	createIndex = `CREATE INDEX contacts_name ON contacts(name)`
	sqlInsert   = `INSERT INTO contacts(id, name, phone, email, address, updated) VALUES(?, ?, ?, ?, ?, ?)`
	sqlUpdate   = `UPDATE contacts SET phone = ?, email = ?, updated = ? WHERE id = ?`
	sqlSelect   = `SELECT id, name, phone, email, address, updated FROM contacts WHERE id = ?`
	sqlDelete   = `DELETE FROM contacts WHERE id = ?`
	sqlCount    = `SELECT count(*) FROM contacts`
)

// phaseSQL is each phase's statement; phaseKinds how its parameters are
// bound, in order (cloop.c binds the same).
var (
	phaseSQL = map[string]string{
		PhaseInsert: sqlInsert, PhaseUpdate: sqlUpdate, PhaseSelect: sqlSelect, PhaseDelete: sqlDelete,
	}
	phaseKinds = map[string][]capi.Kind{
		PhaseInsert: {capi.Int, capi.Text, capi.Text, capi.Text, capi.Text, capi.Int},
		PhaseUpdate: {capi.Text, capi.Text, capi.Int, capi.Int},
		PhaseSelect: {capi.Int},
		PhaseDelete: {capi.Int},
	}
)

// Bench is the sqlite workload. It implements workload.Workload. It is not
// safe for concurrent use: the connection is opened without SQLite's mutex,
// so call Cleanup only after Run has returned (cancel ctx to stop Run).
type Bench struct {
	cfg    model.SQLiteConfig
	dbPath string

	conn  *capi.Conn
	stmts map[string]*capi.Stmt // by phase, plus begin, commit and rollback

	ran bool
	// done counts statements executed, for the progress goroutine.
	done atomic.Int64
	// onStatement, when set (by tests), runs after every statement.
	onStatement func(phase string, n int64)
}

var _ workload.Workload = (*Bench)(nil)

// New validates cfg, settles the directory and returns a Bench ready to
// Prepare. It fills in cfg: Dir (absolute; a new perfsleuth-sqlite-*
// directory in the current directory when empty, with DirCreated set) and
// SQLiteVersion. A Dir given with DirCreated set is one the caller created
// for perfsleuth: Cleanup removes it like its own. A --dir holding files
// perfsleuth did not create is refused unless cfg.Force; perfsleuth marks
// directories it uses with MarkerName.
func New(cfg *model.SQLiteConfig) (*Bench, error) {
	if err := Validate(cfg); err != nil {
		return nil, err
	}
	cfg.SQLiteVersion = capi.Version()
	if cfg.Dir == "" {
		// The current directory, not os.TempDir: /tmp may be tmpfs, and a
		// database benchmark on RAM measures nothing about the storage.
		d, err := os.MkdirTemp(".", dirPattern)
		if err != nil {
			return nil, fmt.Errorf("create the benchmark directory: %w; give --dir a writable directory", err)
		}
		abs, err := filepath.Abs(d)
		if err != nil {
			os.Remove(d)
			return nil, err
		}
		cfg.Dir, cfg.DirCreated = abs, true
	} else {
		abs, err := filepath.Abs(cfg.Dir)
		if err != nil {
			return nil, err
		}
		cfg.Dir = abs
		if err := checkForeign(abs, cfg.Force); err != nil {
			return nil, err
		}
	}
	b := &Bench{cfg: *cfg, dbPath: filepath.Join(cfg.Dir, DBName)}
	b.cfg.Phases = append([]string(nil), cfg.Phases...)
	if err := os.WriteFile(filepath.Join(cfg.Dir, MarkerName), []byte(markerText), 0o644); err != nil {
		b.Cleanup()
		return nil, fmt.Errorf("write %s: %w", filepath.Join(cfg.Dir, MarkerName), err)
	}
	return b, nil
}

// checkForeign refuses a directory that holds anything when perfsleuth's
// marker is not there: the benchmark would overwrite and then remove
// perfsleuth.db and its journals, which may be someone's data.
func checkForeign(dir string, force bool) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("read dir %s: %w", dir, err)
	}
	var foreign []string
	for _, e := range entries {
		if e.Name() == MarkerName {
			return nil
		}
		foreign = append(foreign, e.Name())
	}
	if len(foreign) == 0 || force {
		return nil
	}
	if len(foreign) > 3 {
		foreign = append(foreign[:3], "...")
	}
	return fmt.Errorf("dir %s holds files perfsleuth did not create (%s): use an empty directory, or add --force to let perfsleuth create and remove %s and its -journal, -wal and -shm files there",
		dir, strings.Join(foreign, ", "), DBName)
}

// Config returns the configuration as run, with Dir, DirCreated and
// SQLiteVersion filled in.
func (b *Bench) Config() model.SQLiteConfig { return b.cfg }

// DBPath is the database file.
func (b *Bench) DBPath() string { return b.dbPath }

// Prepare creates an empty database with the configured PRAGMAs and schema
// and prepares the statements. Nothing of it is measured. On failure it
// removes the database it created.
func (b *Bench) Prepare(ctx context.Context) (err error) {
	if b.conn != nil {
		return errors.New("sqlite benchmark already prepared")
	}
	defer func() {
		if err != nil {
			b.closeConn()
			b.removeDB()
		}
	}()
	// A database left by an earlier --keep run would skew every phase
	// (the inserts would collide); the marker says these files are ours.
	if err := b.removeDB(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := b.open(); err != nil {
		return err
	}
	return ctx.Err()
}

// open opens the database, applies the PRAGMAs, checks that SQLite took
// them, creates the schema and prepares the statements.
func (b *Bench) open() error {
	c, err := capi.Open(b.dbPath)
	if err != nil {
		return err
	}
	b.conn = c
	cfg := b.cfg
	// page_size first: it only takes effect before the database has content,
	// and WAL mode fixes it for good. cloop.c runs the same, in this order.
	sqls := []string{
		fmt.Sprintf("PRAGMA page_size = %d", cfg.PageSize),
		"PRAGMA journal_mode = " + cfg.Journal,
		"PRAGMA synchronous = " + cfg.Sync,
		fmt.Sprintf("PRAGMA cache_size = %d", cfg.CacheSize),
		createTable,
	}
	if cfg.Index {
		sqls = append(sqls, createIndex)
	}
	for _, q := range sqls {
		if err := b.conn.Exec(q); err != nil {
			return err
		}
	}
	if err := b.checkPragmas(); err != nil {
		return err
	}
	b.stmts = map[string]*capi.Stmt{}
	for phase, q := range phaseSQL {
		if b.stmts[phase], err = b.conn.Prepare(q, phaseKinds[phase]...); err != nil {
			return err
		}
	}
	for _, q := range []string{"BEGIN", "COMMIT", "ROLLBACK"} {
		if b.stmts[strings.ToLower(q)], err = b.conn.Prepare(q); err != nil {
			return err
		}
	}
	return nil
}

// checkPragmas reads the settings back: SQLite ignores some PRAGMAs silently
// (a journal mode the file system cannot do, a page size after the fact).
func (b *Bench) checkPragmas() error {
	cfg := b.cfg
	want := []struct {
		pragma string
		want   any
		hint   string
	}{
		{"journal_mode", cfg.Journal, "the file system may not support it (WAL needs shared memory)"},
		{"synchronous", syncLevel[cfg.Sync], ""},
		{"page_size", int64(cfg.PageSize), ""},
		{"cache_size", int64(cfg.CacheSize), ""},
	}
	for _, w := range want {
		got, err := b.pragma(w.pragma)
		if err != nil {
			return err
		}
		if got != w.want {
			msg := fmt.Sprintf("PRAGMA %s did not take effect on %s: SQLite reports %v, want %v", w.pragma, b.dbPath, got, w.want)
			if w.hint != "" {
				msg += ": " + w.hint
			}
			return errors.New(msg)
		}
	}
	return nil
}

// pragma returns the first column of `PRAGMA name`, lower-cased when text.
func (b *Bench) pragma(name string) (any, error) {
	v, err := b.queryOne("PRAGMA " + name)
	if s, ok := v.(string); ok {
		v = strings.ToLower(s)
	}
	return v, err
}

// queryOne runs q and returns the first column of its only row.
func (b *Bench) queryOne(q string) (any, error) {
	rows, err := b.conn.Query(q)
	if err != nil {
		return nil, err
	}
	if len(rows) != 1 || len(rows[0]) == 0 {
		return nil, fmt.Errorf("%s on %s returned %d rows, want 1", q, b.dbPath, len(rows))
	}
	return rows[0][0], nil
}

// Cleanup closes the database and, unless Keep, removes the database, its
// journals, the marker and the directory if perfsleuth created it. It is safe
// to call more than once.
func (b *Bench) Cleanup() error {
	err := b.closeConn()
	if b.cfg.Keep {
		return err
	}
	err = errors.Join(err, b.removeDB())
	if rmErr := os.Remove(filepath.Join(b.cfg.Dir, MarkerName)); rmErr != nil && !errors.Is(rmErr, fs.ErrNotExist) {
		err = errors.Join(err, rmErr)
	}
	if b.cfg.DirCreated {
		if rmErr := os.Remove(b.cfg.Dir); rmErr != nil && !errors.Is(rmErr, fs.ErrNotExist) {
			err = errors.Join(err, fmt.Errorf("remove the benchmark directory: %w", rmErr))
		}
	}
	return err
}

// closeConn finalizes the statements and closes the connection; in WAL
// mode the close checkpoints and removes the -wal and -shm files.
func (b *Bench) closeConn() error {
	b.stmts = nil
	if b.conn == nil {
		return nil
	}
	err := b.conn.Close()
	b.conn = nil
	return err
}

// removeDB removes the database and SQLite's files beside it.
func (b *Bench) removeDB() error {
	var errs []error
	for _, suf := range dbSuffixes {
		if err := os.Remove(b.dbPath + suf); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
