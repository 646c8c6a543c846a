package sqlitefile

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/perfsleuth/perfsleuth/internal/workload/sqlite/capi"
)

// hotJournal returns a copy of a rollback journal taken from inside a
// transaction, and of the database as it was before it. The transaction
// changes more pages than the page cache holds, so SQLite spills pages to
// the database before the commit, and syncs the journal each time first:
// the journal has several segments, each with its header's magic and
// record count filled in, except maybe the last.
func hotJournal(t testing.TB) (journal, before []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "j.db")
	build(t, path,
		"PRAGMA page_size = 1024",
		"PRAGMA journal_mode = DELETE",
		"CREATE TABLE t(id INTEGER PRIMARY KEY, s TEXT)",
		series(1, 3000)+"INSERT INTO t SELECT i, hex(randomblob(50)) FROM n")
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := capi.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, sql := range []string{"PRAGMA cache_size = 10", "BEGIN", "UPDATE t SET s = lower(s)"} {
		if err := c.Exec(sql); err != nil {
			t.Fatal(err)
		}
	}
	if journal, err = os.ReadFile(path + "-journal"); err != nil {
		t.Fatal(err)
	}
	if err := c.Exec("ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	return journal, before
}

// journalChecksum is a record's checksum (pager.c, pager_cksum): the
// nonce plus every 200th byte of the page, from its end.
func journalChecksum(nonce uint32, page []byte) uint32 {
	for i := len(page) - 200; i > 0; i -= 200 {
		nonce += uint32(page[i])
	}
	return nonce
}

// TestJournalReal maps a real multi-segment journal that SQLite wrote (a
// hot journal copied from inside a transaction, see hotJournal): every
// record found through the headers, NextSegment and JournalPartAt has the
// right checksum and holds the original content of its page.
func TestJournalReal(t *testing.T) {
	j, before := hotJournal(t)
	const ps = 1024
	if k := Sniff("j.db-journal", j); k != KindJournal {
		t.Errorf("Sniff = %v, want journal", k)
	}
	var pgnos []uint32
	segments := 0
	for start := int64(0); start < int64(len(j)); segments++ {
		h, err := ParseJournalHeader(j[start:])
		if err != nil {
			t.Fatalf("segment at %d: %v", start, err)
		}
		if h.PageSize != ps || h.InitialPages != uint32(len(before)/ps) {
			t.Fatalf("segment at %d: header %+v, want page size %d, %d pages", start, h, ps, len(before)/ps)
		}
		if part, rec := JournalPartAt(int64(h.SectorSize)-1, h); part != JournalPartHeader || rec != -1 {
			t.Errorf("segment at %d: last header byte is %s, %d", start, part, rec)
		}
		for r := int64(0); ; r++ {
			off := int64(h.SectorSize) + r*(ps+8) // from the segment's start
			if part, rec := JournalPartAt(off, h); part == "" {
				break
			} else if part != JournalPartPgno || rec != r {
				t.Fatalf("segment at %d: JournalPartAt(%d) = %s, %d, want record %d's page number", start, off, part, rec, r)
			}
			if start+off+ps+8 > int64(len(j)) {
				if !h.recordsToEnd() {
					t.Fatalf("segment at %d: record %d of %d past the end of the file", start, r, h.Records)
				}
				break
			}
			for _, c := range []struct {
				off  int64
				part JournalPart
			}{{off + 3, JournalPartPgno}, {off + 4, JournalPartPage}, {off + 4 + ps - 1, JournalPartPage}, {off + 4 + ps, JournalPartChecksum}, {off + ps + 7, JournalPartChecksum}} {
				if part, rec := JournalPartAt(c.off, h); part != c.part || rec != r {
					t.Errorf("segment at %d: JournalPartAt(%d) = %s, %d, want %s, %d", start, c.off, part, rec, c.part, r)
				}
			}
			rec := j[start+off : start+off+ps+8]
			no, page, sum := binary.BigEndian.Uint32(rec), rec[4:4+ps], binary.BigEndian.Uint32(rec[4+ps:])
			if sum != journalChecksum(h.Nonce, page) {
				t.Errorf("segment at %d record %d: bad checksum", start, r)
			}
			if no < 1 || no > h.InitialPages || !slices.Equal(page, before[(no-1)*ps:no*ps]) {
				t.Errorf("segment at %d record %d: page %d is not the original page", start, r, no)
			}
			pgnos = append(pgnos, no)
		}
		next := h.NextSegment()
		if next < 0 {
			break
		}
		start += next
	}
	if segments < 2 {
		t.Errorf("%d segments, want several: the cache spill did not happen", segments)
	}
	// A transaction journals a page at most once.
	if slices.Sort(pgnos); len(slices.Compact(pgnos)) != len(pgnos) || len(pgnos) < 20 {
		t.Errorf("%d records, some for the same page", len(pgnos))
	}
}

// In PERSIST mode SQLite zeroes the header at commit instead of deleting
// the journal: the file is still a journal, but not a hot one.
func TestJournalPersistZeroed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.db")
	build(t, path, "PRAGMA journal_mode = PERSIST", "CREATE TABLE t(x)", "INSERT INTO t VALUES (1)")
	j, err := os.ReadFile(path + "-journal")
	if err != nil {
		t.Fatal(err)
	}
	if k := Sniff(path+"-journal", j); k != KindJournal {
		t.Errorf("Sniff = %v, want journal", k)
	}
	if h, err := ParseJournalHeader(j); err == nil {
		t.Errorf("zeroed header parsed: %+v", h)
	}
}

// journalHeader is a segment header as pager.c writes it; an unsynced one
// has its magic and record count zeroed.
func journalHeader(synced bool, records, nonce, pages, sector, pageSize uint32) []byte {
	b := make([]byte, max(sector, journalHeaderSize))
	if synced {
		copy(b, journalMagic)
		binary.BigEndian.PutUint32(b[8:], records)
	}
	for i, v := range []uint32{nonce, pages, sector, pageSize} {
		binary.BigEndian.PutUint32(b[12+4*i:], v)
	}
	return b
}

// TestJournalPartAtBuilt maps a journal built byte for byte as the file
// format describes it: a first segment of two records, then one of one
// record, at the next sector boundary.
func TestJournalPartAtBuilt(t *testing.T) {
	const sector, ps = 512, 1024
	h, err := ParseJournalHeader(journalHeader(true, 2, 7, 10, sector, ps))
	if err != nil {
		t.Fatal(err)
	}
	if want := (JournalHeader{Magic: true, Records: 2, Nonce: 7, InitialPages: 10, SectorSize: sector, PageSize: ps}); h != want {
		t.Errorf("header %+v, want %+v", h, want)
	}
	// Records at 512 and 1544, ending at 2576; the next segment is at 3072.
	if next := h.NextSegment(); next != 3072 {
		t.Errorf("NextSegment = %d, want 3072", next)
	}
	for _, c := range []struct {
		off  int64
		part JournalPart
		rec  int64
	}{
		{-1, "", -1}, {0, JournalPartHeader, -1}, {511, JournalPartHeader, -1},
		{512, JournalPartPgno, 0}, {515, JournalPartPgno, 0}, {516, JournalPartPage, 0},
		{1539, JournalPartPage, 0}, {1540, JournalPartChecksum, 0}, {1543, JournalPartChecksum, 0},
		{1544, JournalPartPgno, 1}, {2575, JournalPartChecksum, 1},
		{2576, "", -1}, {3072, "", -1}, // padding, then the second segment
	} {
		if part, rec := JournalPartAt(c.off, h); part != c.part || rec != c.rec {
			t.Errorf("JournalPartAt(%d) = %q, %d, want %q, %d", c.off, part, rec, c.part, c.rec)
		}
	}

	// Not yet synced: the records run to the end of the file.
	u, err := ParseJournalHeader(journalHeader(false, 0, 7, 10, sector, ps))
	if err != nil || u.Magic || u.Records != 0 || u.PageSize != ps {
		t.Fatalf("unsynced header: %+v, %v", u, err)
	}
	if next := u.NextSegment(); next != -1 {
		t.Errorf("unsynced NextSegment = %d, want -1", next)
	}
	if part, rec := JournalPartAt(512+1000*(ps+8), u); part != JournalPartPgno || rec != 1000 {
		t.Errorf("unsynced JournalPartAt = %s, %d, want record 1000", part, rec)
	}

	for name, b := range map[string][]byte{
		"short":       journalHeader(true, 2, 7, 10, sector, ps)[:27],
		"zeroed":      make([]byte, sector),
		"bad magic":   append([]byte("\xd9\xd5\x05\xf9\x20\xa1\x63\xd8"), journalHeader(true, 2, 7, 10, sector, ps)[8:]...),
		"sector 16":   journalHeader(true, 2, 7, 10, 16, ps),
		"sector 1000": journalHeader(true, 2, 7, 10, 1000, ps),
		"page 100":    journalHeader(true, 2, 7, 10, sector, 100),
		"page 1<<17":  journalHeader(true, 2, 7, 10, sector, 1<<17),
	} {
		if h, err := ParseJournalHeader(b); err == nil {
			t.Errorf("%s: no error, %+v", name, h)
		}
	}
}
