package sqlitefile

import (
	"errors"
	"fmt"
)

// WAL file layout (fileformat2.html, "The Write-Ahead Log"): a header, then
// frames, each a frame header and one page.
const (
	WALHeaderSize      = 32
	WALFrameHeaderSize = 24
	// WALMagicLE and WALMagicBE are the WAL magics; the last bit says
	// whether the checksums are computed on little- or big-endian words.
	WALMagicLE = 0x377f0682
	WALMagicBE = 0x377f0683
	// walVersion is the only WAL format version (WAL_MAX_VERSION, wal.c).
	walVersion = 3007000
)

// WALHeader is the 32-byte header of a WAL file.
type WALHeader struct {
	Magic         uint32
	Version       uint32
	PageSize      int
	CheckpointSeq uint32
	// A frame belongs to the current log only if its salts equal these;
	// SQLite changes them when it restarts the log from its start.
	Salt1, Salt2         uint32
	Checksum1, Checksum2 uint32
}

// ParseWALHeader parses the first WALHeaderSize bytes of b.
func ParseWALHeader(b []byte) (WALHeader, error) {
	if len(b) < WALHeaderSize {
		return WALHeader{}, fmt.Errorf("wal header: %d bytes, want %d", len(b), WALHeaderSize)
	}
	h := WALHeader{
		Magic:         be32(b),
		Version:       be32(b[4:]),
		PageSize:      int(be32(b[8:])),
		CheckpointSeq: be32(b[12:]),
		Salt1:         be32(b[16:]),
		Salt2:         be32(b[20:]),
		Checksum1:     be32(b[24:]),
		Checksum2:     be32(b[28:]),
	}
	switch {
	case h.Magic != WALMagicLE && h.Magic != WALMagicBE:
		return h, fmt.Errorf("wal header: bad magic %#08x", h.Magic)
	case h.Version != walVersion:
		return h, fmt.Errorf("wal header: format version %d, want %d", h.Version, walVersion)
	case !validPageSize(h.PageSize):
		return h, fmt.Errorf("wal header: page size %d is not a power of two from 512 to 65536", h.PageSize)
	}
	return h, nil
}

// FrameHeader is the 24-byte header of a WAL frame.
type FrameHeader struct {
	Page uint32 // the database page the frame holds
	// CommitSize is the database's size in pages after the commit that
	// this frame ends, or 0 if it is not a commit frame.
	CommitSize           uint32
	Salt1, Salt2         uint32
	Checksum1, Checksum2 uint32
}

// IsCommit reports whether f is the last frame of a transaction.
func (f FrameHeader) IsCommit() bool { return f.CommitSize != 0 }

// ParseFrameHeader parses the first WALFrameHeaderSize bytes of b. Page 0
// is an error: no frame holds it, so the bytes are not a frame header (a
// zeroed or torn one, say).
func ParseFrameHeader(b []byte) (FrameHeader, error) {
	if len(b) < WALFrameHeaderSize {
		return FrameHeader{}, fmt.Errorf("wal frame header: %d bytes, want %d", len(b), WALFrameHeaderSize)
	}
	f := FrameHeader{
		Page:       be32(b),
		CommitSize: be32(b[4:]),
		Salt1:      be32(b[8:]),
		Salt2:      be32(b[12:]),
		Checksum1:  be32(b[16:]),
		Checksum2:  be32(b[20:]),
	}
	if f.Page == 0 {
		return f, errors.New("wal frame header: page number 0")
	}
	return f, nil
}

// WALPart is a part of a WAL file.
type WALPart string

// The parts of a WAL file; "" is no part (a negative offset, or an invalid
// page size).
const (
	WALPartHeader      WALPart = "wal-header"
	WALPartFrameHeader WALPart = "frame-header"
	WALPartFramePage   WALPart = "frame-page"
)

// WALPartAt is the part of a WAL file of pages of pageSize bytes that holds
// byte offset, and the 0-based index of its frame (-1 for the WAL header).
func WALPartAt(offset int64, pageSize int) (part WALPart, frame int64) {
	switch {
	case offset < 0 || !validPageSize(pageSize):
		return "", -1
	case offset < WALHeaderSize:
		return WALPartHeader, -1
	}
	size := int64(WALFrameHeaderSize + pageSize)
	frame, within := (offset-WALHeaderSize)/size, (offset-WALHeaderSize)%size
	if within < WALFrameHeaderSize {
		return WALPartFrameHeader, frame
	}
	return WALPartFramePage, frame
}
