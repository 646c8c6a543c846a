// Package sqlite is an open, configurable version of AndroBench's database
// test: single-row INSERT, UPDATE, SELECT and DELETE statements on a
// contacts-like table, run through the real SQLite C library. Every setting
// AndroBench hides (journal mode, synchronous level, page and cache size,
// index, statements per transaction) is a flag here, so a score can be
// explained: is it the syncs, the CPU, or the settings?
//
// SQLite is the system's libsqlite3, through the small binding in capi: the
// library the distribution's programs run, built as the distribution builds
// it, which matters for a tool about sync latency (Debian's and Android's
// builds sync with fdatasync(2); an amalgamation compiled without
// HAVE_FDATASYNC, as go-sqlite3 bundles it, syncs with fsync(2)). The timed
// loop makes one cgo call per statement, with prepared statements and row
// data built outside the timing, so that it runs within a few percent of a
// plain C loop over the same library (benchmarks/sqlite measures that).
package sqlite

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// The defaults are what a plain sqlite3 program gets: AndroBench's statement
// mix (1024 single-row statements per phase, autocommit, index on) with
// SQLite's own defaults for everything AndroBench leaves to the platform.
// journal_mode=DELETE and synchronous=FULL are SQLite's compiled-in defaults
// (https://www.sqlite.org/pragma.html); Android instead defaults to WAL with
// synchronous=NORMAL or FULL depending on version and vendor, so a comparison
// with a phone score should set --journal and --sync to what the phone uses.
const (
	DefaultRows      = 1024
	DefaultTxSize    = 1
	DefaultJournal   = "delete"
	DefaultSync      = "full"
	DefaultPageSize  = 4096
	DefaultCacheSize = -2000 // SQLite's default: negative means KiB, so 2000 KiB
	DefaultSeed      = 1
)

// Page sizes SQLite accepts (https://www.sqlite.org/pragma.html#pragma_page_size);
// it silently ignores any other value.
const (
	minPageSize = 512
	maxPageSize = 65536
)

// Phase names, in the order AndroBench runs its three.
const (
	PhaseInsert = "insert"
	PhaseUpdate = "update"
	PhaseSelect = "select"
	PhaseDelete = "delete"
)

// JournalModes and SyncModes are the values Validate accepts, as SQLite spells them.
var (
	JournalModes = []string{"wal", "delete", "truncate", "persist", "memory", "off"}
	SyncModes    = []string{"off", "normal", "full", "extra"}
	Phases       = []string{PhaseInsert, PhaseUpdate, PhaseSelect, PhaseDelete}
)

// syncLevel is what PRAGMA synchronous reports for each mode.
var syncLevel = map[string]int64{"off": 0, "normal": 1, "full": 2, "extra": 3}

// Defaults returns the default configuration; Dir "" means "create a
// perfsleuth-sqlite-* directory in the current directory".
func Defaults() model.SQLiteConfig {
	return model.SQLiteConfig{
		Rows:      DefaultRows,
		TxSize:    DefaultTxSize,
		Journal:   DefaultJournal,
		Sync:      DefaultSync,
		PageSize:  DefaultPageSize,
		CacheSize: DefaultCacheSize,
		Index:     true,
		Phases:    []string{PhaseInsert, PhaseUpdate, PhaseDelete},
		Seed:      DefaultSeed,
	}
}

// Validate checks cfg and reports every problem at once, each saying what to
// do. It lower-cases journal, sync and phase names in place, so "WAL" works.
func Validate(cfg *model.SQLiteConfig) error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }

	if cfg.Rows < 1 {
		add("rows is %d: give --rows 1 or more (the number of statements per phase)", cfg.Rows)
	}
	if cfg.TxSize < 1 {
		add("tx_size is %d: give --tx-size 1 (autocommit, as AndroBench) or more (statements per transaction)", cfg.TxSize)
	}
	cfg.Journal = strings.ToLower(strings.TrimSpace(cfg.Journal))
	if !slices.Contains(JournalModes, cfg.Journal) {
		add("journal %q is not a journal mode: use one of %s", cfg.Journal, strings.Join(JournalModes, ", "))
	}
	cfg.Sync = strings.ToLower(strings.TrimSpace(cfg.Sync))
	if !slices.Contains(SyncModes, cfg.Sync) {
		add("sync %q is not a synchronous level: use one of %s", cfg.Sync, strings.Join(SyncModes, ", "))
	}
	if p := cfg.PageSize; p < minPageSize || p > maxPageSize || p&(p-1) != 0 {
		add("page_size %d is not a power of two from %d to %d: SQLite would ignore it; use e.g. 4096", p, minPageSize, maxPageSize)
	}
	errs = append(errs, validatePhases(cfg.Phases)...)
	if err := validateDir(cfg.Dir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// validatePhases lower-cases the names in place and checks that every phase
// finds the table as it needs it: update, select and delete need the rows an
// insert put there; an insert needs them gone (the ids would collide).
func validatePhases(phases []string) []error {
	if len(phases) == 0 {
		return []error{fmt.Errorf("no phases: give --phases as a comma-separated list of %s", strings.Join(Phases, ", "))}
	}
	var errs []error
	present := false
	for i, p := range phases {
		p = strings.ToLower(strings.TrimSpace(p))
		phases[i] = p
		switch p {
		case PhaseInsert:
			if present {
				errs = append(errs, fmt.Errorf("phase %d (insert) would insert ids that are already there: put delete between the two inserts", i+1))
			}
			present = true
		case PhaseUpdate, PhaseSelect, PhaseDelete:
			if !present {
				errs = append(errs, fmt.Errorf("phase %d (%s) needs rows in the table: put insert before it (the table starts empty)", i+1, p))
			}
			if p == PhaseDelete {
				present = false
			}
		default:
			errs = append(errs, fmt.Errorf("phase %q is unknown: use %s", p, strings.Join(Phases, ", ")))
		}
	}
	return errs
}

// validateDir checks that the directory the database goes in (or, for "",
// the current directory, where one will be created) exists and is writable.
func validateDir(dir string) error {
	what := "--dir " + dir
	if dir == "" {
		dir, what = ".", "the current directory (where the benchmark directory is created)"
	}
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%s does not exist: create it, or leave --dir out to let perfsleuth create one", what)
	case err != nil:
		return fmt.Errorf("%s: %w", what, err)
	case !fi.IsDir():
		return fmt.Errorf("%s is not a directory: give --dir a directory", what)
	}
	// access(2) rather than a trial file: Validate has no side effects, and
	// it still catches read-only mounts (EROFS) for root.
	const wOK, xOK = 2, 1 // <unistd.h>
	if err := syscall.Access(dir, wOK|xOK); err != nil {
		return fmt.Errorf("%s is not writable (%v): choose another --dir", what, err)
	}
	return nil
}

// Notices says in plain words what a run with cfg does that a user may not
// expect; cfg should have passed Validate.
func Notices(cfg model.SQLiteConfig) []string {
	var n []string
	if cfg.TxSize == 1 {
		n = append(n, "autocommit: every statement is its own transaction (tx_size 1), as in AndroBench")
	} else {
		n = append(n, fmt.Sprintf("statements are grouped %d to a transaction (BEGIN ... COMMIT, the last one may be shorter); tx/s and latency are per transaction", cfg.TxSize))
	}
	j, s := cfg.Journal, cfg.Sync
	J := "journal_mode=" + strings.ToUpper(j)
	S := "synchronous=" + strings.ToUpper(s)
	switch {
	case s == "off":
		n = append(n, S+": nothing is synced; a crash can lose or corrupt data, and timings show page-cache speed, not the storage's")
	case j == "wal" && s == "normal":
		n = append(n, J+" + "+S+": commits are not synced; the WAL is synced at checkpoints (every 1000 pages), so a power loss can lose the last commits")
	case j == "wal":
		n = append(n, J+" + "+S+": each commit appends to the -wal file and syncs it; the database file is written and synced at checkpoints (every 1000 pages)")
	case j == "delete" && s != "normal":
		n = append(n, J+" + "+S+": each transaction creates the -journal file, syncs the journal, the database and the directory, then deletes the journal")
	case j == "truncate" && s != "normal":
		n = append(n, J+" + "+S+": each transaction syncs the -journal file and the database, then truncates the journal to 0 bytes")
	case j == "persist" && s != "normal":
		n = append(n, J+" + "+S+": each transaction syncs the -journal file and the database, then zeroes the journal header (the file stays)")
	case j == "delete" || j == "truncate" || j == "persist":
		n = append(n, J+" + "+S+": each transaction syncs the journal and the database, but not the journal header separately; a power loss at the wrong moment can, rarely, corrupt the database")
	}
	if s == "extra" && j == "delete" {
		n = append(n, S+": the directory is synced again after the journal is deleted, one more sync per transaction than FULL")
	}
	switch j {
	case "memory":
		n = append(n, J+": the rollback journal is kept in memory; only the database file is written, and a crash in a transaction can corrupt it")
	case "off":
		n = append(n, J+": there is no rollback journal; only the database file is written, and a crash in a transaction can corrupt it")
	}
	if cfg.Index {
		n = append(n, "index contacts_name is on: every insert and delete also updates the index (updates do not: they leave name alone)")
	}
	return n
}
