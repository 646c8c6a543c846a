package sqlitefile

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/perfsleuth/perfsleuth/internal/workload/sqlite/capi"
)

// makeWAL writes transactions to a WAL-mode database of pageSize-byte
// pages and returns a copy of its -wal file, taken while the connection is
// open (closing it checkpoints and deletes the file), the number of
// transactions and the database's page count.
func makeWAL(t testing.TB, pageSize int) (wal []byte, commits int, pages int64) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "w.db")
	c, err := capi.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, sql := range []string{
		// The page size is fixed once the database is in WAL mode; with
		// no automatic checkpoint the log keeps every frame.
		fmt.Sprintf("PRAGMA page_size = %d", pageSize),
		"PRAGMA journal_mode = WAL",
		"PRAGMA wal_autocheckpoint = 0",
	} {
		if err := c.Exec(sql); err != nil {
			t.Fatal(err)
		}
	}
	txs := []string{
		"CREATE TABLE t(id INTEGER PRIMARY KEY, s TEXT)",
		series(1, 500) + "INSERT INTO t SELECT i, hex(randomblob(40)) FROM n",
		series(501, 520) + "INSERT INTO t SELECT i, hex(randomblob(40)) FROM n",
		"INSERT INTO t VALUES (1000, hex(randomblob(3000)))",
		"BEGIN; UPDATE t SET s = lower(s) WHERE id % 7 = 0; CREATE INDEX t_s ON t(s); COMMIT",
		"DELETE FROM t WHERE id > 400",
	}
	for _, sql := range txs {
		if err := c.Exec(sql); err != nil {
			t.Fatal(err)
		}
	}
	wal, err = os.ReadFile(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	return wal, len(txs), query(t, c, "PRAGMA page_count")[0][0].(int64)
}

// walChecksum continues the WAL checksum s over b (wal.c,
// walChecksumBytes): pairs of 32-bit words, in the byte order the magic
// says.
func walChecksum(s [2]uint32, b []byte, order binary.ByteOrder) [2]uint32 {
	for i := 0; i+8 <= len(b); i += 8 {
		s[0] += order.Uint32(b[i:]) + s[1]
		s[1] += order.Uint32(b[i+4:]) + s[0]
	}
	return s
}

// TestWALFrames parses a WAL written by SQLite: the header, every frame
// header, and the frames' checksums, which chain from the header through
// every frame, so they hold only if WALPartAt puts each part where SQLite
// wrote it.
func TestWALFrames(t *testing.T) {
	for _, pageSize := range []int{512, 4096, 65536} {
		wal, commits, pages := makeWAL(t, pageSize)
		if k := Sniff("w.db-wal", wal); k != KindWAL {
			t.Errorf("Sniff = %v, want wal", k)
		}
		h, err := ParseWALHeader(wal)
		if err != nil {
			t.Fatal(err)
		}
		if h.PageSize != pageSize || h.Version != walVersion {
			t.Errorf("header %+v, want page size %d", h, pageSize)
		}
		frameSize := WALFrameHeaderSize + pageSize
		if (len(wal)-WALHeaderSize)%frameSize != 0 {
			t.Fatalf("page size %d: %d bytes is not a header and whole frames", pageSize, len(wal))
		}
		order := binary.ByteOrder(binary.LittleEndian)
		if h.Magic == WALMagicBE {
			order = binary.BigEndian
		}
		sum := walChecksum([2]uint32{}, wal[:24], order)
		if sum != [2]uint32{h.Checksum1, h.Checksum2} {
			t.Errorf("page size %d: header checksum %x, want %x %x", pageSize, sum, h.Checksum1, h.Checksum2)
		}
		for off := int64(0); off < WALHeaderSize; off++ {
			if part, frame := WALPartAt(off, pageSize); part != WALPartHeader || frame != -1 {
				t.Errorf("WALPartAt(%d) = %s, %d, want the header", off, part, frame)
			}
		}
		frames := int64(len(wal)-WALHeaderSize) / int64(frameSize)
		if frames < int64(commits) {
			t.Fatalf("page size %d: %d frames for %d transactions", pageSize, frames, commits)
		}
		var seen, lastCommit int
		var last FrameHeader
		for i := range frames {
			start := int64(WALHeaderSize) + i*int64(frameSize)
			for _, c := range []struct {
				off  int64
				part WALPart
			}{
				{start, WALPartFrameHeader},
				{start + WALFrameHeaderSize - 1, WALPartFrameHeader},
				{start + WALFrameHeaderSize, WALPartFramePage},
				{start + int64(frameSize) - 1, WALPartFramePage},
			} {
				if part, frame := WALPartAt(c.off, pageSize); part != c.part || frame != i {
					t.Errorf("page size %d: WALPartAt(%d) = %s, %d, want %s, %d", pageSize, c.off, part, frame, c.part, i)
				}
			}
			f, err := ParseFrameHeader(wal[start:])
			if err != nil {
				t.Fatalf("frame %d: %v", i, err)
			}
			if f.Salt1 != h.Salt1 || f.Salt2 != h.Salt2 {
				t.Errorf("frame %d: salts %x %x, header's %x %x", i, f.Salt1, f.Salt2, h.Salt1, h.Salt2)
			}
			sum = walChecksum(sum, wal[start:start+8], order)
			sum = walChecksum(sum, wal[start+WALFrameHeaderSize:start+int64(frameSize)], order)
			if sum != [2]uint32{f.Checksum1, f.Checksum2} {
				t.Errorf("page size %d frame %d: checksum %x, want %x %x", pageSize, i, sum, f.Checksum1, f.Checksum2)
			}
			if f.Page < 1 || int64(f.Page) > pages {
				t.Errorf("frame %d: page %d, database has %d", i, f.Page, pages)
			}
			if f.IsCommit() {
				seen++
				lastCommit = int(f.CommitSize)
				if int64(f.Page) > int64(f.CommitSize) {
					t.Errorf("frame %d: page %d past the commit's size %d", i, f.Page, f.CommitSize)
				}
			}
			if page := wal[start+WALFrameHeaderSize:]; f.Page == 1 && string(page[:16]) != dbMagic {
				t.Errorf("frame %d holds page 1 without the database header", i)
			}
			last = f
		}
		if !last.IsCommit() {
			t.Errorf("page size %d: last frame %+v is not a commit frame", pageSize, last)
		}
		if seen != commits || int64(lastCommit) != pages {
			t.Errorf("page size %d: %d commit frames, last size %d; want %d transactions, %d pages", pageSize, seen, lastCommit, commits, pages)
		}
	}
}

func TestParseWALHeaderErrors(t *testing.T) {
	good := make([]byte, WALHeaderSize)
	binary.BigEndian.PutUint32(good, WALMagicLE)
	binary.BigEndian.PutUint32(good[4:], walVersion)
	binary.BigEndian.PutUint32(good[8:], 4096)
	if _, err := ParseWALHeader(good); err != nil {
		t.Fatal(err)
	}
	for name, mutate := range map[string]func([]byte) []byte{
		"short":        func(b []byte) []byte { return b[:31] },
		"bad magic":    func(b []byte) []byte { b[3] = 0x84; return b },
		"version":      func(b []byte) []byte { b[7]++; return b },
		"page size":    func(b []byte) []byte { binary.BigEndian.PutUint32(b[8:], 4097); return b },
		"page size 0":  func(b []byte) []byte { binary.BigEndian.PutUint32(b[8:], 0); return b },
		"page size 2x": func(b []byte) []byte { binary.BigEndian.PutUint32(b[8:], 131072); return b },
	} {
		if _, err := ParseWALHeader(mutate(append([]byte(nil), good...))); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := ParseFrameHeader(make([]byte, 24)); err == nil {
		t.Error("zeroed frame header: no error")
	}
	if _, err := ParseFrameHeader(make([]byte, 23)); err == nil {
		t.Error("short frame header: no error")
	}
	if part, frame := WALPartAt(100, 1000); part != "" || frame != -1 {
		t.Errorf("WALPartAt with page size 1000 = %s, %d", part, frame)
	}
	if part, frame := WALPartAt(-1, 4096); part != "" || frame != -1 {
		t.Errorf("WALPartAt(-1) = %s, %d", part, frame)
	}
}
