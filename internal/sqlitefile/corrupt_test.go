package sqlitefile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// find is the first page of db of type t owned by owner.
func find(t *testing.T, db *DB, typ PageType, owner string) uint32 {
	t.Helper()
	for _, p := range db.Pages {
		if p.Type == typ && p.Owner == owner {
			return p.No
		}
	}
	t.Fatalf("no %s page of %q", typ, owner)
	return 0
}

// failAfter reads like a bytes.Reader up to limit and fails past it.
type failAfter struct {
	r     *bytes.Reader
	limit int64
}

func (f failAfter) ReadAt(b []byte, off int64) (int, error) {
	if off+int64(len(b)) > f.limit {
		return 0, errors.New("injected read error")
	}
	return f.r.ReadAt(b, off)
}

// TestParseDBCorrupt damages a sound database in the ways a corrupt or
// hostile file could, and checks that ParseDB notes each, stops every
// cycle, and still returns a well-formed map.
func TestParseDBCorrupt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.db")
	build(t, path,
		"PRAGMA page_size = 512",
		"CREATE TABLE t(id INTEGER PRIMARY KEY, s TEXT)",
		"CREATE INDEX t_s ON t(s)",
		series(1, 3000)+"INSERT INTO t SELECT i, hex(randomblob(10)) FROM n",
		"CREATE TABLE blobs(b BLOB)",
		"INSERT INTO blobs VALUES (randomblob(20000))",
		"DELETE FROM t WHERE id > 1500")
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	db, err := ParseDB(bytes.NewReader(good), int64(len(good)))
	if err != nil || len(db.Notes) != 0 {
		t.Fatalf("sound database: %v, notes %q", err, db.Notes)
	}
	at := func(no uint32, off int) int { return int(no-1)*512 + off }
	put32 := func(b []byte, off int, v uint32) { binary.BigEndian.PutUint32(b[off:], v) }
	trunk := binary.BigEndian.Uint32(good[32:])
	ovfl := find(t, db, Overflow, "blobs")
	interior := find(t, db, TableInterior, "t")
	leaf := find(t, db, TableLeaf, "t")
	indexLeaf := find(t, db, IndexLeaf, "t_s")

	for _, tc := range []struct {
		name   string
		damage func(b []byte) []byte
		note   string
	}{
		{"freelist cycle", func(b []byte) []byte { put32(b, at(trunk, 0), trunk); return b }, "reached again"},
		{"freelist count", func(b []byte) []byte { put32(b, 36, 99999); return b }, "header says 99999 pages"},
		{"freelist leaf count", func(b []byte) []byte { put32(b, at(trunk, 4), 0xffffffff); return b }, "leaves, more than"},
		{"overflow cycle", func(b []byte) []byte { put32(b, at(ovfl, 0), ovfl); return b }, "reached again"},
		{"overflow cut", func(b []byte) []byte { put32(b, at(ovfl, 0), 0); return b }, "overflow chain ends after 1 of"},
		{"b-tree cycle", func(b []byte) []byte { put32(b, at(interior, 8), interior); return b }, "reached again"},
		{"child out of range", func(b []byte) []byte { put32(b, at(interior, 8), 0xffffffff); return b }, "out of range"},
		{"child of another kind", func(b []byte) []byte { put32(b, at(interior, 8), indexLeaf); return b }, "in a tree whose root is"},
		{"bad flag", func(b []byte) []byte { b[at(leaf, 0)] = 0; return b }, "not a b-tree page"},
		{"cell count", func(b []byte) []byte { b[at(leaf, 3)], b[at(leaf, 4)] = 0xff, 0xff; return b }, "more than fit"},
		{"cell offset", func(b []byte) []byte { b[at(leaf, 8)], b[at(leaf, 9)] = 0, 0; return b }, "outside the cell area"},
		{"cell past the page", func(b []byte) []byte { b[at(leaf, 8)], b[at(leaf, 9)] = 0x01, 0xff; return b }, "cut short"},
		{"page size", func(b []byte) []byte { b[16], b[17] = 3, 0; return b }, "page size 768"},
		{"reserved bytes", func(b []byte) []byte { b[20] = 100; return b }, "usable page size 412"},
		{"truncated", func(b []byte) []byte { return b[:len(b)/3] }, "out of range"},
		{"partial page", func(b []byte) []byte { return append(b, make([]byte, 100)...) }, "100 bytes of a partial page"},
		{"one page", func(b []byte) []byte { return b[:512] }, "out of range"},
		{"shorter than a page", func(b []byte) []byte { return b[:300] }, "shorter than one"},
		{"notes capped", func(b []byte) []byte {
			for _, p := range db.Pages {
				if p.Type == TableLeaf && p.Owner == "t" || p.Type == IndexLeaf {
					b[at(p.No, 0)] = 0
				}
			}
			return b
		}, "more notes left out"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.damage(bytes.Clone(good))
			db, err := ParseDB(bytes.NewReader(b), int64(len(b)))
			if err != nil {
				t.Fatal(err)
			}
			checkMap(t, db, int64(len(b)))
			if !strings.Contains(strings.Join(db.Notes, "\n"), tc.note) {
				t.Errorf("no note with %q in\n%s", tc.note, strings.Join(db.Notes, "\n"))
			}
		})
	}

	t.Run("read error", func(t *testing.T) {
		db, err := ParseDB(failAfter{bytes.NewReader(good), 20 * 512}, int64(len(good)))
		if err != nil {
			t.Fatal(err)
		}
		checkMap(t, db, int64(len(good)))
		if !strings.Contains(strings.Join(db.Notes, "\n"), "injected read error") {
			t.Errorf("read error not noted: %q", db.Notes)
		}
		if _, err := ParseDB(failAfter{bytes.NewReader(good), 50}, int64(len(good))); err == nil {
			t.Error("no error when the header cannot be read")
		}
	})
}
