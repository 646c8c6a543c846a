package sqlite

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

func TestDefaults(t *testing.T) {
	t.Chdir(t.TempDir())
	cfg := Defaults()
	want := model.SQLiteConfig{
		Rows: 1024, TxSize: 1, Journal: "delete", Sync: "full", PageSize: 4096, CacheSize: -2000,
		Index: true, Phases: []string{"insert", "update", "delete"}, Seed: 1,
	}
	if cfg.Rows != want.Rows || cfg.TxSize != want.TxSize || cfg.Journal != want.Journal ||
		cfg.Sync != want.Sync || cfg.PageSize != want.PageSize || cfg.CacheSize != want.CacheSize ||
		cfg.Index != want.Index || !slices.Equal(cfg.Phases, want.Phases) || cfg.Seed != want.Seed || cfg.Dir != "" {
		t.Errorf("Defaults() = %+v, want %+v", cfg, want)
	}
	if err := Validate(&cfg); err != nil {
		t.Errorf("Validate(Defaults()) = %v", err)
	}
}

func TestValidate(t *testing.T) {
	tmp := t.TempDir()
	file := filepath.Join(tmp, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		mutate func(*model.SQLiteConfig)
		// want lists substrings of the error; none means valid.
		want []string
	}{
		{"defaults", func(c *model.SQLiteConfig) {}, nil},
		{"rows 0", func(c *model.SQLiteConfig) { c.Rows = 0 }, []string{"rows is 0", "--rows 1 or more"}},
		{"rows negative", func(c *model.SQLiteConfig) { c.Rows = -5 }, []string{"rows is -5"}},
		{"rows 1", func(c *model.SQLiteConfig) { c.Rows = 1 }, nil},
		{"tx_size 0", func(c *model.SQLiteConfig) { c.TxSize = 0 }, []string{"tx_size is 0", "--tx-size"}},
		{"tx_size 1000", func(c *model.SQLiteConfig) { c.TxSize = 1000 }, nil},
		{"journal typo", func(c *model.SQLiteConfig) { c.Journal = "wall" }, []string{`journal "wall" is not a journal mode`, "wal, delete, truncate, persist, memory, off"}},
		{"journal empty", func(c *model.SQLiteConfig) { c.Journal = "" }, []string{`journal "" is not`}},
		{"journal upper case", func(c *model.SQLiteConfig) { c.Journal = "WAL" }, nil},
		{"sync typo", func(c *model.SQLiteConfig) { c.Sync = "fast" }, []string{`sync "fast" is not a synchronous level`, "off, normal, full, extra"}},
		{"sync numeric", func(c *model.SQLiteConfig) { c.Sync = "2" }, []string{`sync "2"`}},
		{"sync upper case", func(c *model.SQLiteConfig) { c.Sync = "Normal" }, nil},
		{"page_size not power of two", func(c *model.SQLiteConfig) { c.PageSize = 1000 }, []string{"page_size 1000 is not a power of two from 512 to 65536"}},
		{"page_size too small", func(c *model.SQLiteConfig) { c.PageSize = 256 }, []string{"page_size 256"}},
		{"page_size too large", func(c *model.SQLiteConfig) { c.PageSize = 131072 }, []string{"page_size 131072"}},
		{"page_size 0", func(c *model.SQLiteConfig) { c.PageSize = 0 }, []string{"page_size 0"}},
		{"page_size 512", func(c *model.SQLiteConfig) { c.PageSize = 512 }, nil},
		{"page_size 65536", func(c *model.SQLiteConfig) { c.PageSize = 65536 }, nil},
		{"no phases", func(c *model.SQLiteConfig) { c.Phases = nil }, []string{"no phases", "insert, update, select, delete"}},
		{"unknown phase", func(c *model.SQLiteConfig) { c.Phases = []string{"insert", "frob"} }, []string{`phase "frob" is unknown`}},
		{"update without insert", func(c *model.SQLiteConfig) { c.Phases = []string{"update"} }, []string{"phase 1 (update) needs rows", "put insert before it"}},
		{"select after delete", func(c *model.SQLiteConfig) { c.Phases = []string{"insert", "delete", "select"} }, []string{"phase 3 (select) needs rows"}},
		{"insert twice", func(c *model.SQLiteConfig) { c.Phases = []string{"insert", "insert"} }, []string{"phase 2 (insert) would insert ids that are already there", "put delete between"}},
		{"insert after delete", func(c *model.SQLiteConfig) { c.Phases = []string{"insert", "delete", "insert", "select"} }, nil},
		{"all phases, any case", func(c *model.SQLiteConfig) { c.Phases = []string{"Insert", " select", "UPDATE", "delete"} }, nil},
		{"dir missing", func(c *model.SQLiteConfig) { c.Dir = filepath.Join(tmp, "nope") }, []string{"nope does not exist", "create it, or leave --dir out"}},
		{"dir is a file", func(c *model.SQLiteConfig) { c.Dir = file }, []string{"file is not a directory"}},
		{"dir ok", func(c *model.SQLiteConfig) { c.Dir = tmp }, nil},
		{"several problems at once", func(c *model.SQLiteConfig) { c.Rows = 0; c.Sync = "x"; c.Phases = []string{"delete"} },
			[]string{"rows is 0", `sync "x"`, "phase 1 (delete) needs rows"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Defaults()
			cfg.Dir = tmp
			tt.mutate(&cfg)
			err := Validate(&cfg)
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate = nil, want an error containing %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate = %q, want it to contain %q", err, w)
				}
			}
			// Lower-case, as Go errors are (a flag name may lead).
			if msg := err.Error(); (msg[0] < 'a' || msg[0] > 'z') && !strings.HasPrefix(msg, "--") {
				t.Errorf("error %q should start lower-case or with a flag", msg)
			}
		})
	}
}

func TestValidateNormalises(t *testing.T) {
	cfg := Defaults()
	cfg.Dir = t.TempDir()
	cfg.Journal, cfg.Sync, cfg.Phases = " WAL", "NORMAL ", []string{"INSERT", "Select "}
	if err := Validate(&cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Journal != "wal" || cfg.Sync != "normal" || !slices.Equal(cfg.Phases, []string{"insert", "select"}) {
		t.Errorf("after Validate: journal %q sync %q phases %q, want lower case", cfg.Journal, cfg.Sync, cfg.Phases)
	}
}

func TestValidateCurrentDirUnwritable(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root may write anywhere; the read-only case needs a non-root user")
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o700) })
	cfg := Defaults()
	cfg.Dir = dir
	if err := Validate(&cfg); err == nil || !strings.Contains(err.Error(), "is not writable") {
		t.Errorf("Validate on a read-only dir = %v, want 'is not writable'", err)
	}
}

func TestNotices(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*model.SQLiteConfig)
		want    []string
		notWant []string
	}{
		{"defaults", func(c *model.SQLiteConfig) {},
			[]string{"autocommit: every statement is its own transaction (tx_size 1)",
				"journal_mode=DELETE + synchronous=FULL: each transaction creates the -journal file, syncs the journal, the database and the directory",
				"index contacts_name is on"},
			[]string{"nothing is synced"}},
		{"batched", func(c *model.SQLiteConfig) { c.TxSize = 100 }, []string{"grouped 100 to a transaction"}, []string{"autocommit"}},
		{"wal normal", func(c *model.SQLiteConfig) { c.Journal, c.Sync = "wal", "normal" },
			[]string{"journal_mode=WAL + synchronous=NORMAL: commits are not synced; the WAL is synced at checkpoints"}, nil},
		{"wal full", func(c *model.SQLiteConfig) { c.Journal = "wal" }, []string{"each commit appends to the -wal file and syncs it"}, nil},
		{"sync off", func(c *model.SQLiteConfig) { c.Sync = "off" },
			[]string{"synchronous=OFF: nothing is synced; a crash can lose or corrupt data, and timings show page-cache speed"}, []string{"directory"}},
		{"delete extra", func(c *model.SQLiteConfig) { c.Sync = "extra" }, []string{"synchronous=EXTRA: the directory is synced again"}, nil},
		{"truncate", func(c *model.SQLiteConfig) { c.Journal = "truncate" }, []string{"truncates the journal to 0 bytes"}, nil},
		{"persist", func(c *model.SQLiteConfig) { c.Journal = "persist" }, []string{"zeroes the journal header"}, nil},
		{"delete normal", func(c *model.SQLiteConfig) { c.Sync = "normal" }, []string{"not the journal header separately"}, nil},
		{"memory", func(c *model.SQLiteConfig) { c.Journal = "memory" }, []string{"journal_mode=MEMORY: the rollback journal is kept in memory"}, nil},
		{"journal off", func(c *model.SQLiteConfig) { c.Journal = "off" }, []string{"journal_mode=OFF: there is no rollback journal"}, nil},
		{"no index", func(c *model.SQLiteConfig) { c.Index = false }, nil, []string{"index"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Defaults()
			tt.mutate(&cfg)
			all := strings.Join(Notices(cfg), "\n")
			for _, w := range tt.want {
				if !strings.Contains(all, w) {
					t.Errorf("notices lack %q:\n%s", w, all)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(all, w) {
					t.Errorf("notices should not mention %q:\n%s", w, all)
				}
			}
		})
	}
}
