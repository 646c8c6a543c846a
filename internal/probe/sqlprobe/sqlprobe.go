package sqlprobe

// Statement is one SQL statement of one process, by its text, as the probe
// counted it; or one of the pseudo-statements (Kind "prepare",
// "checkpoint", "close") that stand for the library's own IO.
type Statement struct {
	ID   uint32 // what storage's SQLite file events carry (sqlitetrace.Event.StmtID)
	PID  int
	Kind string // "statement", "prepare", "checkpoint", "close", "internal"
	// Text is the statement as SQLite keeps it (one statement, as
	// prepared), cut at 255 bytes (Truncated); "" if it could not be read.
	Text      string
	Truncated bool
	// Execs were begun (a first step); Done ended by a reset or finalize,
	// in Sec in all, with their times in Hist (log2 ns slots).
	Execs, Done, Steps, Autocommit uint64
	Sec                            float64
	Hist                           []uint64
	// CatExecs of the Done executions began and ended on one thread the
	// time accounting followed; CatNs is their time by its categories
	// (model.Categories' order: cpu, cpu-wait, storage-read, ...).
	CatExecs uint64
	CatNs    [8]uint64
	// CatWall is the CatExecs' time, which CatNs adds up to; CatOff the
	// executions not timed because the time accounting had their thread
	// off the CPU while it ran (its switch-in had no sched_switch event).
	CatWall uint64
	CatOff  uint64
	// LockWaits and LockNs: a PostgreSQL statement's waits for
	// heavyweight locks, by the lock's type (LockTypes).
	LockWaits, LockNs [12]uint64
	// Parent: the PostgreSQL statement it first ran nested in (a
	// function's statement: its ID), 0 at top level.
	Parent uint32
}

// LockTypes names PostgreSQL's lock types (LockTagType) as its pg_locks
// view does; the last stands for any other.
var LockTypes = [12]string{"relation", "extend", "frozenid", "page", "tuple", "transactionid", "virtualxid", "spectoken", "object", "userlock", "advisory", "other"}

// Result is what the statement probe saw.
type Result struct {
	Libraries  []*Library
	Statements []Statement
	// Runs are uprobe hits of the workload's threads, Others those of
	// other processes using the same library (filtered out, still a trap).
	Runs, Others uint64
	// StmtsFull: executions of statements past the first SQ_MAX_STMTS
	// texts, not named. Unread: texts that could not be read. NoOffset:
	// executions whose statement could not be named (offsets unknown).
	StmtsFull, Unread, NoOffset uint64
	// CatUnread: ended executions whose time by category could not be
	// told (begun on another thread, or on one the time accounting had
	// not seen run).
	CatUnread uint64
	// CatOff: of those, the executions whose thread the time accounting
	// had off the CPU while it ran (its switch-in had no sched_switch
	// event: some kernels leave out some switches).
	CatOff uint64
	// Transactions are the kinds of transaction seen, by process and the
	// statements they ran in order. TxsFull: transactions past the first
	// SQ_MAX_TXS kinds, not counted; TxUnended: transactions whose end
	// was not seen (the connection was back in autocommit at its next
	// statement: one not reset before it).
	Transactions       []Transaction
	TxsFull, TxUnended uint64
	// NestDeep: PostgreSQL statements nested past the depth followed
	// (bpf/sqlstmt.h's SQ_PG_NEST), run as their parent.
	NestDeep uint64
	Notes    []string
}

// Transaction is one kind of transaction: a process's transactions that
// ran the same statements in the same order.
type Transaction struct {
	PID int
	// Statements is how many executions each ran (to 255); IDs the
	// statements of the first eight, in order (Statement.ID).
	Statements int
	IDs        []uint32
	// Count ended (committed or rolled back), in Sec in all (the first
	// execution's start to the end of the one that ended it), the
	// longest MaxSec, their times in Hist (log2 ns slots).
	Count       uint64
	Sec, MaxSec float64
	Hist        []uint64
	// Syncs are the sync calls their threads made in them, in SyncSec.
	Syncs   uint64
	SyncSec float64
}

// KindNames are bpf/sqlstmt.h's SQ_* kinds.
var KindNames = []string{"statement", "prepare", "checkpoint", "close", "internal"}
