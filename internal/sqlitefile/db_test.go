package sqlitefile

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/perfsleuth/perfsleuth/internal/workload/sqlite/capi"
)

// build creates the database path with SQLite, runs sqls on it and closes
// it.
func build(t testing.TB, path string, sqls ...string) {
	t.Helper()
	c, err := capi.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, sql := range sqls {
		if err := c.Exec(sql); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}

func query(t testing.TB, c *capi.Conn, sql string) [][]any {
	t.Helper()
	rows, err := c.Query(sql)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// parseFile runs ParseDB on the file path.
func parseFile(t testing.TB, path string) *DB {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	db, err := ParseDB(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// series is SQL for the integers from..to as the column i of the table n.
func series(from, to int) string {
	return fmt.Sprintf("WITH RECURSIVE n(i) AS (SELECT %d UNION ALL SELECT i+1 FROM n WHERE i < %d) ", from, to)
}

// mixedSchema builds, on a database whose page size and auto-vacuum mode
// are set by the caller, every structure ParseDB maps: payloads of every
// size around the limits of local payload (usable is the usable page
// size); a rowid table with two indexes and enough rows for multi-level
// b-trees; overflow chains of 10 KB and 100 KB blobs; index cells that
// overflow (long keys, on leaf and interior pages); a WITHOUT ROWID table
// with its own index; AUTOINCREMENT (sqlite_sequence); sqlite_schema rows
// with overflow chains; a view and a trigger (root page 0); and deleted
// rows and a dropped table for the freelist.
func mixedSchema(rows, usable int) []string {
	tableMax := usable - 35             // the largest table leaf payload kept whole
	indexMax := (usable-12)*64/255 - 23 // the largest index payload kept whole
	return []string{
		`CREATE TABLE edge(b BLOB)`,
		`CREATE INDEX edge_b ON edge(b)`,
		// A record of one blob of n bytes is n+3 bytes (n+4 from n = 8186
		// on: a header size byte and the serial type); an index record
		// adds the rowid, 1 byte here. 20 sizes either side cover the
		// limit at every page size.
		series(tableMax-3-20, tableMax-3+20) + `INSERT INTO edge SELECT randomblob(i) FROM n`,
		series(indexMax-4-20, indexMax-4+20) + `INSERT INTO edge SELECT randomblob(i) FROM n`,
		`CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, v INTEGER)`,
		`CREATE INDEX t_name ON t(name)`,
		`CREATE INDEX t_v ON t(v, name)`,
		series(1, rows) + `INSERT INTO t SELECT i, printf('name-%08d-%s', i, hex(randomblob(6))), i % 97 FROM n`,
		`CREATE TABLE blobs(id INTEGER PRIMARY KEY AUTOINCREMENT, b BLOB)`,
		`INSERT INTO blobs(b) VALUES (randomblob(10000)), (randomblob(100000)), (randomblob(3000)), (zeroblob(65600))`,
		`CREATE TABLE keys(k TEXT)`,
		`CREATE INDEX keys_k ON keys(k)`,
		series(1, 300) + `INSERT INTO keys SELECT printf('%05d', i) || hex(randomblob(200 + i * 7 % 1500)) FROM n`,
		`CREATE TABLE w(k TEXT PRIMARY KEY, v BLOB, n INTEGER) WITHOUT ROWID`,
		`CREATE INDEX w_n ON w(n)`,
		series(1, 2000) + `INSERT INTO w SELECT printf('key-%06d', i), randomblob(CASE WHEN i % 50 = 0 THEN 5000 ELSE 20 END), i FROM n`,
		// sqlite_schema rows that overflow: a long name, and an SQL text
		// longer than maxSchemaRow, which ParseDB reads only in part.
		`CREATE INDEX "keys_` + strings.Repeat("long", 150) + `" ON keys(k DESC)`,
		`CREATE TABLE huge_sql(a, b DEFAULT '` + strings.Repeat("x", maxSchemaRow+100000) + `')`,
		`CREATE VIEW tv AS SELECT id, name FROM t WHERE v = 1`,
		`CREATE TRIGGER t_ins AFTER INSERT ON t BEGIN UPDATE blobs SET b = b WHERE id = 0; END`,
		`CREATE TABLE gone(x)`,
		series(1, 2000) + `INSERT INTO gone SELECT randomblob(300) FROM n`,
		`DROP TABLE gone`,
		`DELETE FROM t WHERE id % 5 != 0 AND id > 1000`,
		`DELETE FROM blobs WHERE id = 3`,
	}
}

// TestParseDBMatchesDBStat builds databases with SQLite and checks the map
// against SQLite's own, the dbstat virtual table: every page dbstat lists
// has the same owner and type, every page it does not list is on the
// freelist, a pointer map or the lock-byte page, and the freelist has
// PRAGMA freelist_count pages.
func TestParseDBMatchesDBStat(t *testing.T) {
	for _, tc := range []struct {
		name     string
		pageSize int
		vacuum   string
		encoding string
	}{
		{"page-512", 512, "NONE", "UTF-8"},
		{"page-4096", 4096, "NONE", "UTF-8"},
		{"page-65536", 65536, "NONE", "UTF-8"},
		{"auto-vacuum-full", 1024, "FULL", "UTF-8"},
		{"auto-vacuum-incremental", 512, "INCREMENTAL", "UTF-8"},
		{"utf16be", 2048, "NONE", "UTF-16be"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "t.db")
			sqls := append([]string{
				fmt.Sprintf("PRAGMA page_size = %d", tc.pageSize),
				fmt.Sprintf("PRAGMA auto_vacuum = %s", tc.vacuum),
				fmt.Sprintf("PRAGMA encoding = '%s'", tc.encoding),
			}, mixedSchema(20000, tc.pageSize)...)
			build(t, path, sqls...)
			db := parseFile(t, path)
			if db.PageSize != tc.pageSize {
				t.Errorf("PageSize %d, want %d", db.PageSize, tc.pageSize)
			}
			if want := tc.vacuum != "NONE"; db.AutoVacuum != want {
				t.Errorf("AutoVacuum %v, want %v", db.AutoVacuum, want)
			}
			checkAgainstSQLite(t, path, db, map[string]bool{"w": true})
			if tc.vacuum != "NONE" && count(db, PtrMap) == 0 {
				t.Error("auto-vacuum database without pointer-map pages")
			}
			if tc.vacuum != "FULL" && (count(db, FreelistTrunk) < 1 || count(db, FreelistLeaf) < 1) {
				t.Errorf("freelist has %d trunk and %d leaf pages, want some of each", count(db, FreelistTrunk), count(db, FreelistLeaf))
			}
			if tc.pageSize == 512 && count(db, FreelistTrunk) < 2 {
				t.Errorf("freelist has %d trunk pages, want several", count(db, FreelistTrunk))
			}
			for _, want := range []PageType{TableInterior, TableLeaf, IndexInterior, IndexLeaf, Overflow} {
				if count(db, want) == 0 {
					t.Errorf("no %s page", want)
				}
			}
		})
	}
}

func count(db *DB, t PageType) int {
	n := 0
	for _, p := range db.Pages {
		if p.Type == t {
			n++
		}
	}
	return n
}

// checkAgainstSQLite compares db, the map of the database path, with what
// SQLite says of it: dbstat, sqlite_schema, the pragmas. withoutRowid
// names the WITHOUT ROWID tables, whose b-trees are index b-trees.
func checkAgainstSQLite(t *testing.T, path string, db *DB, withoutRowid map[string]bool) {
	t.Helper()
	c, err := capi.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Query("SELECT 1 FROM dbstat LIMIT 1"); err != nil {
		t.Skipf("the system SQLite has no dbstat table (SQLITE_ENABLE_DBSTAT_VTAB): %v", err)
	}
	if len(db.Notes) != 0 {
		t.Errorf("notes on a sound database:\n%s", strings.Join(db.Notes, "\n"))
	}
	if n := query(t, c, "PRAGMA page_count")[0][0].(int64); int64(len(db.Pages)) != n {
		t.Errorf("%d pages, PRAGMA page_count %d", len(db.Pages), n)
	}
	var want []Object
	kinds := map[string]string{"sqlite_schema": "table"}
	for _, r := range query(t, c, "SELECT type, name, tbl_name, rootpage FROM sqlite_schema") {
		want = append(want, Object{r[0].(string), r[1].(string), r[2].(string), uint32(r[3].(int64))})
		kinds[r[1].(string)] = r[0].(string)
		if withoutRowid[r[1].(string)] {
			kinds[r[1].(string)] = "index"
		}
	}
	if !slices.Equal(db.Objects, want) {
		t.Errorf("Objects\n%v\nsqlite_schema\n%v", db.Objects, want)
	}

	listed := make([]bool, len(db.Pages))
	for _, r := range query(t, c, "SELECT name, pageno, pagetype, path FROM dbstat") {
		name, no, typ := r[0].(string), r[1].(int64), r[2].(string)
		if no < 1 || no > int64(len(db.Pages)) {
			t.Errorf("dbstat page %d of %s is past the map's %d pages", no, name, len(db.Pages))
			continue
		}
		listed[no-1] = true
		p := db.Pages[no-1]
		if name == "sqlite_master" {
			name = "sqlite_schema"
		}
		if p.Owner != name || !sameType(p.Type, typ, kinds[name]) {
			t.Errorf("page %d (dbstat path %v): %s of %q, dbstat says %s of %q", no, r[3], p.Type, p.Owner, typ, name)
		}
	}
	free := 0
	for i, p := range db.Pages {
		if p.No != uint32(i+1) {
			t.Fatalf("Pages[%d].No = %d", i, p.No)
		}
		switch p.Type {
		case FreelistTrunk, FreelistLeaf:
			free++
		case PtrMap, LockByte:
		default:
			if !listed[i] {
				t.Errorf("page %d: %s of %q, not in dbstat", p.No, p.Type, p.Owner)
			}
			continue
		}
		if listed[i] || p.Owner != "" {
			t.Errorf("page %d: %s with owner %q, listed by dbstat: %v", p.No, p.Type, p.Owner, listed[i])
		}
	}
	if n := query(t, c, "PRAGMA freelist_count")[0][0].(int64); int64(free) != n {
		t.Errorf("%d freelist pages, PRAGMA freelist_count %d", free, n)
	}
}

// sameType reports whether t is dbstat's pagetype typ on a b-tree of kind
// ("table" or "index").
func sameType(t PageType, typ, kind string) bool {
	switch typ {
	case "internal":
		return t == TableInterior && kind == "table" || t == IndexInterior && kind == "index"
	case "leaf":
		return t == TableLeaf && kind == "table" || t == IndexLeaf && kind == "index"
	case "overflow":
		return t == Overflow
	}
	return false
}

// sparse is a file of size bytes that is data followed by zeros.
type sparse struct {
	data []byte
	size int64
}

func (s sparse) ReadAt(b []byte, off int64) (int, error) {
	if off >= s.size {
		return 0, fmt.Errorf("read at %d past the end", off)
	}
	clear(b)
	if off < int64(len(s.data)) {
		copy(b, s.data[off:])
	}
	return int(min(int64(len(b)), s.size-off)), nil
}

// Files bigger than 1 GiB have a lock-byte page, and an auto-vacuum
// database's pointer map skips it: a pointer-map page that would be the
// lock-byte page is the page after it (btree.c, ptrmapPageno). A 1 GiB
// database would be slow to write, so the file is a small database padded
// with zeros.
func TestParseDBLockBytePage(t *testing.T) {
	for _, tc := range []struct {
		pageSize int
		pages    int64
		want     map[uint32]PageType
	}{
		// Pointer maps every 65536/5+1 = 13108 pages from page 2; the
		// lock-byte page 16385 is not on that grid.
		{65536, 16390, map[uint32]PageType{2: PtrMap, 13110: PtrMap, 16385: LockByte, 16386: Unknown}},
		// Every 1024/5+1 = 205 pages: 2 + 5115*205 is the lock-byte page
		// 1048577, so that pointer map is at 1048578; the next is back on
		// the grid.
		{1024, 1048790, map[uint32]PageType{1048372: PtrMap, 1048576: Unknown, 1048577: LockByte, 1048578: PtrMap, 1048782: PtrMap, 1048783: Unknown}},
	} {
		path := filepath.Join(t.TempDir(), "t.db")
		build(t, path, fmt.Sprintf("PRAGMA page_size = %d", tc.pageSize), "PRAGMA auto_vacuum = FULL", "CREATE TABLE t(x)")
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		size := tc.pages * int64(tc.pageSize)
		db, err := ParseDB(sparse{data, size}, size)
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(db.Pages)) != tc.pages {
			t.Fatalf("page size %d: %d pages, want %d", tc.pageSize, len(db.Pages), tc.pages)
		}
		for no, want := range tc.want {
			if got := db.Pages[no-1].Type; got != want {
				t.Errorf("page size %d: page %d is %s, want %s", tc.pageSize, no, got, want)
			}
		}
		lock := uint32(lockByteOffset/tc.pageSize + 1)
		if no, within := db.PageAt(lockByteOffset); no != lock || within != 0 {
			t.Errorf("page size %d: PageAt(1 GiB) = %d, %d, want %d, 0", tc.pageSize, no, within, lock)
		}
	}
}

func TestPageAt(t *testing.T) {
	db := &DB{PageSize: 4096}
	for _, tc := range []struct {
		off    int64
		no     uint32
		within int
	}{
		{0, 1, 0}, {99, 1, 99}, {4095, 1, 4095}, {4096, 2, 0}, {4096*10 + 7, 11, 7},
		{-1, 0, 0}, {4096 * (1 << 32), 0, 0}, {4096*(1<<32-1) - 1, 1<<32 - 1, 4095},
	} {
		if no, within := db.PageAt(tc.off); no != tc.no || within != tc.within {
			t.Errorf("PageAt(%d) = %d, %d, want %d, %d", tc.off, no, within, tc.no, tc.within)
		}
	}
	if no, _ := (&DB{}).PageAt(10); no != 0 {
		t.Errorf("PageAt without a page size = %d, want 0", no)
	}
}

func TestTypeOfFlag(t *testing.T) {
	want := map[byte]PageType{0x02: IndexInterior, 0x05: TableInterior, 0x0a: IndexLeaf, 0x0d: TableLeaf}
	for f := range 256 {
		w, ok := want[byte(f)]
		if !ok {
			w = Unknown
		}
		if got := TypeOfFlag(byte(f)); got != w {
			t.Errorf("TypeOfFlag(%#02x) = %s, want %s", f, got, w)
		}
	}
}

func TestParseDBNotADatabase(t *testing.T) {
	good := append([]byte(dbMagic), make([]byte, 200)...)
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"short", good[:99]},
		{"bad magic", append([]byte("SQLite format 2\x00"), make([]byte, 200)...)},
	} {
		if db, err := ParseDB(bytes.NewReader(tc.data), int64(len(tc.data))); err == nil {
			t.Errorf("%s: no error, map %+v", tc.name, db)
		}
	}
}
