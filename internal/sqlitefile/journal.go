package sqlitefile

import (
	"bytes"
	"errors"
	"fmt"
)

// Rollback journal layout (fileformat2.html, "The Rollback Journal"): a
// journal is one or more segments, each a header padded to the sector size
// and then records, each a page number, the page's original content and a
// checksum. A segment after the first starts at the first sector boundary
// after the records of the one before.
const (
	journalHeaderSize = 28 // magic, nRec, nonce, initial pages, sector size, page size
	journalMagic      = "\xd9\xd5\x05\xf9\x20\xa1\x63\xd7"
	// maxSectorSize is MAX_SECTOR_SIZE (pager.c): readJournalHdr rejects
	// a header with a larger sector size, or one below 32.
	maxSectorSize = 0x10000
)

// JournalHeader is the header of a rollback journal segment.
type JournalHeader struct {
	// Magic reports whether the header holds the magic. SQLite writes a
	// header with the magic and record count zeroed, and fills them in
	// when it syncs the journal, so that a crash cannot leave a hot
	// journal whose records are not on disk (pager.c, writeJournalHdr);
	// with synchronous=OFF it writes them at once, Records 0xffffffff.
	Magic bool
	// Records is the segment's record count (nRec); 0 and 0xffffffff mean
	// the records run to the end of the file.
	Records      uint32
	Nonce        uint32 // the checksum's initial value
	InitialPages uint32 // the database's size in pages before the transaction
	SectorSize   int    // the header's padded size, and segments' alignment
	PageSize     int
}

// ParseJournalHeader parses the first 28 bytes of b, a segment header. A
// zeroed header is an error: it is a journal not in use (journal_mode
// PERSIST zeroes the header at commit).
func ParseJournalHeader(b []byte) (JournalHeader, error) {
	if len(b) < journalHeaderSize {
		return JournalHeader{}, fmt.Errorf("journal header: %d bytes, want %d", len(b), journalHeaderSize)
	}
	var zero [journalHeaderSize]byte
	if bytes.Equal(b[:journalHeaderSize], zero[:]) {
		return JournalHeader{}, errors.New("journal header: zeroed, the journal is not in use")
	}
	h := JournalHeader{
		Magic:        string(b[:8]) == journalMagic,
		Records:      be32(b[8:]),
		Nonce:        be32(b[12:]),
		InitialPages: be32(b[16:]),
		SectorSize:   int(be32(b[20:])),
		PageSize:     int(be32(b[24:])),
	}
	switch {
	case !h.Magic && !bytes.Equal(b[:12], zero[:12]):
		return h, fmt.Errorf("journal header: bad magic % x", b[:8])
	case h.SectorSize < 32 || h.SectorSize > maxSectorSize || h.SectorSize&(h.SectorSize-1) != 0:
		return h, fmt.Errorf("journal header: sector size %d is not a power of two from 32 to %d", h.SectorSize, maxSectorSize)
	case !validPageSize(h.PageSize):
		return h, fmt.Errorf("journal header: page size %d is not a power of two from 512 to 65536", h.PageSize)
	}
	return h, nil
}

// recordsToEnd reports whether the segment's records run to the end of
// the file.
func (h JournalHeader) recordsToEnd() bool { return h.Records == 0 || h.Records == 0xffffffff }

// NextSegment is the offset, from the start of the segment h heads, where
// the next segment's header is, or -1 if the records run to the end of the
// file.
func (h JournalHeader) NextSegment() int64 {
	if h.recordsToEnd() || h.SectorSize <= 0 {
		return -1
	}
	end := int64(h.SectorSize) + int64(h.Records)*int64(h.PageSize+8)
	sector := int64(h.SectorSize)
	return (end + sector - 1) / sector * sector
}

// JournalPart is a part of a rollback journal.
type JournalPart string

// The parts of a rollback journal; "" is no part (see JournalPartAt).
const (
	JournalPartHeader   JournalPart = "journal-header"
	JournalPartPgno     JournalPart = "record-pgno"
	JournalPartPage     JournalPart = "record-page"
	JournalPartChecksum JournalPart = "record-checksum"
)

// JournalPartAt is the part of the journal segment headed by h that holds
// byte offset, counted from the segment's start, and the 0-based index of
// its record (-1 for the header).
//
// It maps the first segment exactly. Past the first segment's records
// (offset >= h.NextSegment()) it returns "" and -1: a later segment's
// record count is in its own header, which the caller must read at
// h.NextSegment() (ParseJournalHeader) and pass with offsets counted from
// there. When h's records run to the end of the file (Records 0 or
// 0xffffffff, as in a journal not yet synced) every offset past the header
// is in a record of h's segment, as SQLite itself reads such a journal.
// The super-journal name that may follow the last segment is not mapped.
func JournalPartAt(offset int64, h JournalHeader) (part JournalPart, record int64) {
	if offset < 0 || h.SectorSize <= 0 || h.PageSize <= 0 {
		return "", -1
	}
	if offset < int64(h.SectorSize) {
		return JournalPartHeader, -1
	}
	size := int64(h.PageSize) + 8
	record, within := (offset-int64(h.SectorSize))/size, (offset-int64(h.SectorSize))%size
	switch {
	case !h.recordsToEnd() && record >= int64(h.Records):
		return "", -1
	case within < 4:
		return JournalPartPgno, record
	case within < size-4:
		return JournalPartPage, record
	}
	return JournalPartChecksum, record
}
