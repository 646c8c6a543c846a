package sqlitefile

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// checkMap checks what ParseDB promises of any map of a file of size
// bytes, however corrupt.
func checkMap(t *testing.T, db *DB, size int64) {
	t.Helper()
	if db.PageSize == 0 {
		if len(db.Pages) != 0 {
			t.Fatalf("%d pages without a page size", len(db.Pages))
		}
	} else if !validPageSize(db.PageSize) || int64(len(db.Pages)) != size/int64(db.PageSize) {
		t.Fatalf("page size %d, %d pages for %d bytes", db.PageSize, len(db.Pages), size)
	}
	if len(db.Notes) > maxNotes+1 {
		t.Fatalf("%d notes", len(db.Notes))
	}
	for i, p := range db.Pages {
		if p.No != uint32(i+1) {
			t.Fatalf("Pages[%d].No = %d", i, p.No)
		}
		switch p.Type {
		case TableInterior, TableLeaf, IndexInterior, IndexLeaf, Overflow:
		case FreelistTrunk, FreelistLeaf, PtrMap, LockByte, Unknown:
			if p.Owner != "" {
				t.Fatalf("page %d: %s owned by %q", p.No, p.Type, p.Owner)
			}
		default:
			t.Fatalf("page %d: type %q", p.No, p.Type)
		}
		if p.IsHeader() != (i == 0) {
			t.Fatalf("page %d: IsHeader %v", p.No, p.IsHeader())
		}
	}
	if db.PageSize > 0 && size > 0 {
		if no, within := db.PageAt(size - 1); int64(no-1)*int64(db.PageSize)+int64(within) != size-1 {
			t.Fatalf("PageAt(%d) = %d, %d", size-1, no, within)
		}
	}
}

// seedDBs are small databases (512-byte pages, so a fuzzer's mutations
// land in every structure) with b-trees of two levels, overflow chains,
// a freelist, a WITHOUT ROWID table, and a pointer map.
func seedDBs(f *testing.F) [][]byte {
	var dbs [][]byte
	for _, vacuum := range []string{"NONE", "INCREMENTAL"} {
		path := filepath.Join(f.TempDir(), vacuum+".db")
		build(f, path,
			"PRAGMA page_size = 512",
			"PRAGMA auto_vacuum = "+vacuum,
			"CREATE TABLE t(id INTEGER PRIMARY KEY, s TEXT)",
			"CREATE INDEX t_s ON t(s)",
			series(1, 40)+"INSERT INTO t SELECT i, hex(randomblob(8 + i % 3 * 100)) FROM n",
			"CREATE TABLE w(k PRIMARY KEY, v) WITHOUT ROWID",
			"INSERT INTO w VALUES ('a', randomblob(1500)), ('b', 2)",
			"DELETE FROM t WHERE id % 4 = 0")
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		dbs = append(dbs, b)
	}
	return dbs
}

func FuzzParseDB(f *testing.F) {
	for _, b := range seedDBs(f) {
		f.Add(b)
		f.Add(b[:len(b)/2])
		f.Add(b[:600])
		for _, at := range []int{16, 20, 32, 36, 52, 56, 100, 103, 108, 512 + 8, 1024} {
			c := bytes.Clone(b)
			c[at] ^= 0x41
			f.Add(c)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		db, err := ParseDB(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			if len(data) >= headerSize && bytes.HasPrefix(data, []byte(dbMagic)) {
				t.Fatalf("error on a file with the magic: %v", err)
			}
			return
		}
		checkMap(t, db, int64(len(data)))
	})
}

func FuzzWAL(f *testing.F) {
	for _, ps := range []int{512, 4096} {
		wal, _, _ := makeWAL(f, ps)
		f.Add(wal[:min(len(wal), 2*(ps+WALFrameHeaderSize)+WALHeaderSize)], int64(100), ps)
	}
	f.Add([]byte{}, int64(-1), 0)
	f.Fuzz(func(t *testing.T, data []byte, offset int64, pageSize int) {
		Sniff("x-wal", data)
		part, frame := WALPartAt(offset, pageSize)
		frameSize := int64(WALFrameHeaderSize + pageSize)
		switch {
		case offset < 0 || !validPageSize(pageSize):
			if part != "" || frame != -1 {
				t.Fatalf("WALPartAt(%d, %d) = %s, %d", offset, pageSize, part, frame)
			}
		case offset < WALHeaderSize:
			if part != WALPartHeader || frame != -1 {
				t.Fatalf("WALPartAt(%d, %d) = %s, %d", offset, pageSize, part, frame)
			}
		default:
			start := WALHeaderSize + frame*frameSize
			want := WALPartFramePage
			if offset < start+WALFrameHeaderSize {
				want = WALPartFrameHeader
			}
			if frame < 0 || offset < start || offset >= start+frameSize || part != want {
				t.Fatalf("WALPartAt(%d, %d) = %s, %d", offset, pageSize, part, frame)
			}
		}

		h, err := ParseWALHeader(data)
		if err != nil {
			return
		}
		if !validPageSize(h.PageSize) {
			t.Fatalf("header %+v parsed with a bad page size", h)
		}
		for off := int64(WALHeaderSize); off+WALFrameHeaderSize <= int64(len(data)); off += int64(WALFrameHeaderSize + h.PageSize) {
			fh, err := ParseFrameHeader(data[off:])
			if err == nil && fh.Page == 0 {
				t.Fatalf("frame at %d: page 0 without an error", off)
			}
			if part, _ := WALPartAt(off, h.PageSize); part != WALPartFrameHeader {
				t.Fatalf("frame at %d is %s", off, part)
			}
		}
	})
}

func FuzzJournal(f *testing.F) {
	j, _ := hotJournal(f)
	f.Add(j[:min(len(j), 4096)], int64(600))
	f.Add(journalHeader(false, 0, 1, 2, 512, 1024), int64(1<<40))
	f.Add(make([]byte, 28), int64(0))
	f.Fuzz(func(t *testing.T, data []byte, offset int64) {
		Sniff("x-journal", data)
		h, err := ParseJournalHeader(data)
		if err != nil {
			return
		}
		if h.SectorSize < 32 || !validPageSize(h.PageSize) {
			t.Fatalf("header %+v parsed", h)
		}
		next := h.NextSegment()
		if next != -1 && (next < int64(h.SectorSize) || next%int64(h.SectorSize) != 0) {
			t.Fatalf("header %+v: NextSegment %d", h, next)
		}
		part, rec := JournalPartAt(offset, h)
		size := int64(h.PageSize + 8)
		switch {
		case offset < 0:
			if part != "" {
				t.Fatalf("JournalPartAt(%d) = %s", offset, part)
			}
		case offset < int64(h.SectorSize):
			if part != JournalPartHeader || rec != -1 {
				t.Fatalf("JournalPartAt(%d) = %s, %d", offset, part, rec)
			}
		case part == "":
			if next == -1 || offset < int64(h.SectorSize)+int64(h.Records)*size {
				t.Fatalf("JournalPartAt(%d) = nothing, in the segment of %+v", offset, h)
			}
		default:
			start := int64(h.SectorSize) + rec*size
			if rec < 0 || offset < start || offset >= start+size || next != -1 && rec >= int64(h.Records) {
				t.Fatalf("JournalPartAt(%d) = %s, %d for %+v", offset, part, rec, h)
			}
		}
	})
}
