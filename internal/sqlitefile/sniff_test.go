package sqlitefile

import (
	"encoding/binary"
	"testing"
)

func TestSniff(t *testing.T) {
	wal := binary.BigEndian.AppendUint32(nil, WALMagicBE)
	for _, tc := range []struct {
		name  string
		first []byte
		want  Kind
	}{
		{"a.db", []byte(dbMagic + "\x10\x00"), KindDB},
		{"a.db", []byte("SQLite format 3"), KindNone}, // too short to tell
		{"a.db", nil, KindNone},
		{"a.db-wal", binary.BigEndian.AppendUint32(nil, WALMagicLE), KindWAL},
		{"anything", wal, KindWAL},
		{"a.db-wal", nil, KindWAL},
		{"a.db-wal", make([]byte, 31), KindWAL},
		{"a.db-wal", make([]byte, 32), KindNone},
		{"a.db-journal", []byte(journalMagic), KindJournal},
		{"a.db-journal", make([]byte, 512), KindJournal}, // zeroed (PERSIST) or not yet synced
		{"a.db-journal", nil, KindJournal},
		{"renamed", []byte(journalMagic), KindJournal},
		{"a.db-journal", []byte(dbMagic), KindDB}, // the content decides first
		{"notes.txt", []byte("hello, world"), KindNone},
	} {
		if got := Sniff(tc.name, tc.first); got != tc.want {
			t.Errorf("Sniff(%q, %q) = %v, want %v", tc.name, tc.first, got, tc.want)
		}
	}
	for k, s := range map[Kind]string{KindNone: "none", KindDB: "db", KindWAL: "wal", KindJournal: "journal"} {
		if k.String() != s {
			t.Errorf("Kind(%d).String() = %q, want %q", k, k.String(), s)
		}
	}
}
