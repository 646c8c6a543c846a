// Package sqlitefile maps byte ranges of SQLite files (the database, its
// write-ahead log and its rollback journal) to what they hold: which page,
// of which table or index, of which b-tree level; which WAL frame; which
// journal record. A tracer that sees (file, offset, length, first bytes) of
// each read and write a workload makes uses it to say what the IO was for.
//
// It follows the file format at https://www.sqlite.org/fileformat2.html and
// reads files as they are when it is called, normally at the end of a run:
// a page that was a table leaf during the run may be on the freelist at the
// end, and a table dropped during the run is not in the map at all. For
// writes, TypeOfFlag types a b-tree page from the bytes written, which
// reflects the page as it was at write time.
//
// It takes any file, corrupt, truncated or hostile: what it cannot follow
// it reports in a note (DB.Notes, or an error) and it never panics. Work
// and memory are linear in the file's size (about 40 bytes a page): a page
// is claimed by the first structure that reaches it and read only then, so
// a cycle in a freelist, an overflow chain or a b-tree ends at the first
// page reached twice, with a note.
//
// It does not check what SQLite's integrity_check checks (key order, free
// space, overlapping cells), verify checksums, or merge a WAL's frames
// into the database's map: in WAL mode, pages committed since the last
// checkpoint are mapped as the database file has them.
package sqlitefile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// PageType is what a database page holds.
type PageType string

// The page types. A b-tree page's type is given by its flag byte (see
// TypeOfFlag); the others by the structure that reaches it.
const (
	TableInterior PageType = "table-interior"
	TableLeaf     PageType = "table-leaf"
	IndexInterior PageType = "index-interior"
	IndexLeaf     PageType = "index-leaf"
	Overflow      PageType = "overflow"
	FreelistTrunk PageType = "freelist-trunk"
	FreelistLeaf  PageType = "freelist-leaf"
	PtrMap        PageType = "ptrmap"
	// LockByte is the page holding byte 1073741824 (SQLite's PENDING_BYTE),
	// which SQLite never uses; only files bigger than 1 GiB have it.
	LockByte PageType = "lock-byte"
	// Unknown is a page no structure reached: corrupt, or lost.
	Unknown PageType = "unknown"
)

// TypeOfFlag is the type of a b-tree page whose flag byte (its first byte,
// or byte 100 of page 1) is flag, or Unknown if flag is not a b-tree flag.
func TypeOfFlag(flag byte) PageType {
	switch flag {
	case 0x02:
		return IndexInterior
	case 0x05:
		return TableInterior
	case 0x0a:
		return IndexLeaf
	case 0x0d:
		return TableLeaf
	}
	return Unknown
}

// Page is one page of a database file.
type Page struct {
	No   uint32 // page number, from 1
	Type PageType
	// Owner is the table or index whose b-tree (or overflow chain) holds
	// the page, "sqlite_schema" for the schema's, and "" for freelist,
	// ptrmap, lock-byte and unknown pages. A WITHOUT ROWID table is an
	// index b-tree owned by the table.
	Owner string
}

// IsHeader reports whether p is page 1, which begins with the 100-byte
// database header and then holds the root of sqlite_schema.
func (p Page) IsHeader() bool { return p.No == 1 }

// Object is a row of sqlite_schema.
type Object struct {
	Type      string // table, index, view or trigger
	Name      string
	TableName string
	RootPage  uint32 // 0 for views, triggers and virtual tables
}

// DB is the map of a database file.
type DB struct {
	PageSize int      // 0 if the header's page size is invalid; then Pages is empty
	Pages    []Page   // Pages[i].No == i+1; one per whole page in the file
	Objects  []Object // sqlite_schema's rows, in b-tree order
	// AutoVacuum is set in auto-vacuum and incremental-vacuum databases,
	// which have pointer-map pages.
	AutoVacuum bool
	Notes      []string // what could not be followed, and why
}

// PageAt is the page holding byte offset of the database file and the
// offset within it; pgno is 0 for a negative offset, or when the page size
// is unknown. pgno may be past Pages: the file may have grown since it
// was parsed.
func (db *DB) PageAt(offset int64) (pgno uint32, within int) {
	if db.PageSize <= 0 || offset < 0 {
		return 0, 0
	}
	n := offset/int64(db.PageSize) + 1
	if n > math.MaxUint32 {
		return 0, 0
	}
	return uint32(n), int(offset % int64(db.PageSize))
}

const (
	dbMagic    = "SQLite format 3\x00"
	headerSize = 100
	// lockByteOffset is SQLite's PENDING_BYTE (os.h): the page holding it
	// is never used.
	lockByteOffset = 1 << 30
	// minUsable is the smallest usable page size the format allows
	// (fileformat2.html, "Reserved bytes per page"); the payload formulas
	// go wrong below it.
	minUsable = 480
	// maxPages is SQLite's largest page count (SQLITE_MAX_PAGE_COUNT).
	maxPages = 4294967294
	// maxNotes bounds the notes of a badly corrupt file; the rest are
	// counted in a last note.
	maxNotes = 64
	// maxSchemaRow bounds the bytes of one sqlite_schema row assembled
	// from overflow pages; its first four columns (type, name, tbl_name,
	// rootpage) come before the SQL text and fit unless a name is huge.
	maxSchemaRow = 1 << 20
)

// ErrNotDB is the error of ParseDB on a file that is not a database.
var ErrNotDB = errors.New("not an SQLite database")

// ParseDB maps the database file read by r, of size bytes. Its error says
// only that the file is not an SQLite database (shorter than the header,
// wrong magic) or that the header could not be read; anything else it
// cannot follow is in the map's Notes.
func ParseDB(r io.ReaderAt, size int64) (*DB, error) {
	if size < headerSize {
		return nil, fmt.Errorf("%w: %d bytes, shorter than the %d-byte header", ErrNotDB, size, headerSize)
	}
	hdr := make([]byte, headerSize)
	if err := readFull(r, hdr, 0); err != nil {
		return nil, fmt.Errorf("read database header: %w", err)
	}
	if !bytes.Equal(hdr[:16], []byte(dbMagic)) {
		return nil, fmt.Errorf("%w: bad magic %q", ErrNotDB, hdr[:16])
	}
	db := &DB{AutoVacuum: be32(hdr[52:]) != 0}
	p := &parser{r: r, db: db, enc: be32(hdr[56:])}
	p.parse(hdr, size)
	if p.dropped > 0 {
		db.Notes = append(db.Notes, fmt.Sprintf("%d more notes left out", p.dropped))
	}
	return db, nil
}

// parser holds the state of one ParseDB.
type parser struct {
	r       io.ReaderAt
	db      *DB
	usable  int
	enc     uint32 // text encoding: 1 UTF-8, 2 UTF-16le, 3 UTF-16be
	seen    []bool // pages some structure has reached
	page    []byte // the b-tree page being read
	ovfl    []byte // the overflow or freelist page being read
	dropped int    // notes beyond maxNotes
}

func (p *parser) note(format string, args ...any) {
	if len(p.db.Notes) >= maxNotes {
		p.dropped++
		return
	}
	p.db.Notes = append(p.db.Notes, fmt.Sprintf(format, args...))
}

func (p *parser) parse(hdr []byte, size int64) {
	db := p.db
	ps := int(be16(hdr[16:]))
	if ps == 1 {
		ps = 65536
	}
	if !validPageSize(ps) {
		p.note("page size %d is not a power of two from 512 to 65536: no pages mapped", ps)
		return
	}
	db.PageSize = ps
	p.usable = ps - int(hdr[20])
	n := size / int64(ps)
	if n == 0 {
		p.note("file is shorter than one %d-byte page: no pages mapped", ps)
		return
	}
	if rest := size % int64(ps); rest != 0 {
		p.note("file ends with %d bytes of a partial page, left out of the map", rest)
	}
	if n > maxPages {
		p.note("file holds %d pages, more than SQLite's maximum; only the first %d mapped", n, int64(maxPages))
		n = maxPages
	}
	// The header's page count is valid only when the change counter
	// matches the version-valid-for number (fileformat2.html, "In-header
	// database size").
	if hn := be32(hdr[28:]); hn != 0 && be32(hdr[24:]) == be32(hdr[92:]) && int64(hn) != n {
		p.note("header says %d pages, the file holds %d", hn, n)
	}
	db.Pages = make([]Page, n)
	for i := range db.Pages {
		db.Pages[i] = Page{No: uint32(i + 1), Type: Unknown}
	}
	p.seen = make([]bool, n)
	p.page = make([]byte, ps)
	p.ovfl = make([]byte, ps)

	lock := uint32(lockByteOffset/ps + 1)
	if int64(lock) <= n {
		p.claim(lock, LockByte, "", "lock-byte page")
	}
	if p.usable < minUsable {
		p.note("usable page size %d (page size %d, %d reserved bytes) is below %d: b-trees, freelist and pointer map not followed",
			p.usable, ps, hdr[20], minUsable)
		return
	}
	if db.AutoVacuum {
		p.ptrmaps(lock)
	}
	var schema []Object
	p.tree(1, "sqlite_schema", "table", func(rowid int64, rec []byte, complete bool) {
		o, err := p.object(rec)
		if err != nil {
			if !complete {
				err = fmt.Errorf("%w (row longer than %d bytes, or its overflow chain broken)", err, maxSchemaRow)
			}
			p.note("sqlite_schema row %d: %v", rowid, err)
			return
		}
		schema = append(schema, o)
	})
	db.Objects = schema
	for _, o := range schema {
		if o.RootPage != 0 {
			want := ""
			if o.Type == "index" {
				want = "index"
			}
			p.tree(o.RootPage, o.Name, want, nil)
		}
	}
	p.freelist(be32(hdr[32:]), be32(hdr[36:]))
}

// claim marks page no as reached by what (for notes) and gives it type t
// and owner. It reports false, with a note, if no is out of range or was
// reached already: that ends the walk there, so cycles end.
func (p *parser) claim(no uint32, t PageType, owner string, what any) bool {
	if no == 0 || int64(no) > int64(len(p.seen)) {
		p.note("%v: page %d is out of range (file has %d pages)", what, no, len(p.seen))
		return false
	}
	if p.seen[no-1] {
		prev := p.db.Pages[no-1]
		p.note("%v: page %d reached again (already %s %q)", what, no, prev.Type, prev.Owner)
		return false
	}
	p.seen[no-1] = true
	p.db.Pages[no-1].Type = t
	p.db.Pages[no-1].Owner = owner
	return true
}

// read reads len(buf) bytes at the start of page no, noting a failure.
func (p *parser) read(no uint32, buf []byte, what any) bool {
	if err := readFull(p.r, buf, int64(no-1)*int64(p.db.PageSize)); err != nil {
		p.note("%v: read page %d: %v", what, no, err)
		return false
	}
	return true
}

// ptrmaps claims the pointer-map pages: page 2, then one every usable/5+1
// pages, moved one page on if it would be the lock-byte page (btree.c,
// ptrmapPageno).
func (p *parser) ptrmaps(lock uint32) {
	step := int64(p.usable/5 + 1)
	for base := int64(2); base <= int64(len(p.seen)); base += step {
		no := uint32(base)
		if no == lock {
			no++
		}
		if int64(no) <= int64(len(p.seen)) {
			p.claim(no, PtrMap, "", "pointer map")
		}
	}
}

// freelist claims the freelist's trunk pages, from first, and their leaves,
// and notes a count other than the header's total.
func (p *parser) freelist(first, total uint32) {
	const what = "freelist"
	maxLeaves := uint32(p.usable/4 - 2)
	var count uint32
	for no := first; no != 0; {
		if !p.claim(no, FreelistTrunk, "", what) || !p.read(no, p.ovfl[:8], what) {
			break
		}
		count++
		next, n := be32(p.ovfl), be32(p.ovfl[4:])
		if n > maxLeaves {
			p.note("freelist trunk page %d: %d leaves, more than the %d that fit", no, n, maxLeaves)
			n = maxLeaves
		}
		if n > 0 && !p.read(no, p.ovfl[:8+4*n], what) {
			break
		}
		for i := range n {
			if p.claim(be32(p.ovfl[8+4*i:]), FreelistLeaf, "", what) {
				count++
			}
		}
		no = next
	}
	if count != total {
		p.note("freelist: header says %d pages, %d found", total, count)
	}
}

func validPageSize(n int) bool { return n >= 512 && n <= 65536 && n&(n-1) == 0 }

// readFull reads len(buf) bytes at off; a ReaderAt may return io.EOF with
// a full read at the end of the file.
func readFull(r io.ReaderAt, buf []byte, off int64) error {
	n, err := r.ReadAt(buf, off)
	if n == len(buf) {
		return nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return err
}

func be16(b []byte) uint16 { return binary.BigEndian.Uint16(b) }
func be32(b []byte) uint32 { return binary.BigEndian.Uint32(b) }
