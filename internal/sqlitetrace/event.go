package sqlitetrace

// Event is one read, write or sync of a SQLite file, as the storage probe
// saw it in the kernel.
type Event struct {
	TsNs uint64
	Dev  string // "major:minor"
	Ino  uint64
	TID  int
	Op   int   // EvRead, EvWrite, EvSync
	Kind int   // KindDB, KindWAL, KindJournal
	Off  int64 // -1 for a sync
	Len  int64 // bytes moved
	// Head holds the first bytes moved (up to 32, fewer if Len is smaller),
	// valid during the Add call only (it is the ring buffer's record,
	// reused for the next); B100 the byte at offset 100 of the buffer when
	// Has100.
	Head   []byte
	B100   byte
	Has100 bool
	// StmtID is the SQL statement the thread was running (the statement
	// probe's id, 0 without it or outside any statement).
	StmtID uint32
}

// Event operations and SQLite kinds. The values are bpf/storage.h's
// (ST_EV_*, ST_KIND_*), so the storage probe passes them through.
const (
	EvRead  = 0
	EvWrite = 1
	EvSync  = 2

	KindDB      = 1
	KindWAL     = 2
	KindJournal = 3
)

// KindNames names the SQLite kinds.
var KindNames = map[int]string{KindDB: "db", KindWAL: "wal", KindJournal: "journal"}
