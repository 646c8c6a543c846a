package sqlitefile

import (
	"bytes"
	"strings"
)

// Kind is the kind of an SQLite file.
type Kind uint8

// The kinds of file Sniff tells apart.
const (
	KindNone    Kind = iota // not an SQLite file, or not known to be one
	KindDB                  // a database
	KindWAL                 // a write-ahead log
	KindJournal             // a rollback journal
)

func (k Kind) String() string {
	switch k {
	case KindDB:
		return "db"
	case KindWAL:
		return "wal"
	case KindJournal:
		return "journal"
	}
	return "none"
}

// Sniff tells the kind of the file name from its first bytes. A database
// and a WAL are known by their magic; a journal by its magic, or by its
// name ending in "-journal", since its header is zeroed between
// transactions in PERSIST mode, its magic is not written until SQLite
// syncs it, and it may be empty. A file whose name ends in "-wal" and
// which is shorter than a WAL header (empty, as it is before its first
// write or after a truncating checkpoint) is a WAL.
func Sniff(name string, first []byte) Kind {
	switch {
	case bytes.HasPrefix(first, []byte(dbMagic)):
		return KindDB
	case len(first) >= 4 && (be32(first) == WALMagicLE || be32(first) == WALMagicBE):
		return KindWAL
	case bytes.HasPrefix(first, []byte(journalMagic)), strings.HasSuffix(name, "-journal"):
		return KindJournal
	case strings.HasSuffix(name, "-wal") && len(first) < WALHeaderSize:
		return KindWAL
	}
	return KindNone
}
