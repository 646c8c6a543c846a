package model

// StorageIO is what the storage probe saw: block devices, the page cache and
// (with --storage) the workload's files and SQLite pages.
type StorageIO struct {
	// StatementCalls are every file's read, write and sync calls by the
	// SQL statement they were made under (the statement probe's ids), for
	// that probe to join to its statements.
	StatementCalls map[uint32]*SQLCalls `json:"-"`
	// WindowSec is the probe's window: from when it was armed (requests
	// started from then on are measured, /proc/diskstats read right
	// before) to when it stopped. Rates and %util are over it. 0 in
	// records made before it was kept.
	WindowSec float64 `json:"window_sec,omitempty"`
	// Devices are the block devices that completed requests in the window.
	Devices []BlockDevice `json:"devices"`
	// Cache is the workload's page-cache use; nil when the kernel lacks
	// the tracepoints (Notes say so).
	Cache *PageCache `json:"page_cache,omitempty"`
	// Files are the regular files the workload read, wrote or synced, most
	// time first; nil without --storage.
	Files []FileIO `json:"files,omitempty"`
	// SQLite maps the reads and writes of SQLite files to pages; nil when
	// no SQLite file was touched or without --storage.
	SQLite *SQLiteIO `json:"sqlite,omitempty"`
	// AsyncIO is the workload's asynchronous IO per interface (libaio,
	// io_uring), which /proc's rchar and wchar leave out; nil when it
	// made none, or when the kernel lacks the hooks (Notes say so).
	// libaio's is counted only when FilesTraced.
	AsyncIO []AsyncIO `json:"async_io,omitempty"`
	// FoldedCalls counts the file calls counted in a directory's entry of
	// Files (Folded) rather than their file's: the probe keeps MaxFiles
	// files one by one, and counts the calls on files past them by
	// directory, in the kernel, so that none is lost. 0 in a record made
	// before, where such calls were lost (Dropped.FileOps).
	FoldedCalls int64 `json:"folded_calls,omitempty"`
	// MaxFiles is how many files the probe keeps one by one (0 in a
	// record made before it was kept).
	MaxFiles int `json:"max_files,omitempty"`
	// FilesTraced: the read, write and sync calls were hooked (observe
	// --storage), so Files and libaio's AsyncIO were counted.
	FilesTraced bool `json:"files_traced,omitempty"`
	// Notes say, in plain words, what was not measured and why.
	Notes []string `json:"notes,omitempty"`
	// ProbeRuns counts the storage programs' runs, machine-wide.
	ProbeRuns int64 `json:"probe_runs"`
	// ProbeCPUSec is the CPU time the storage programs took: every run at
	// the cost of a run stopped by the program's filter (calibrated on the
	// host), plus the time the runs past it took, timed by the programs
	// themselves. The time accounting's probe_cpu_sec includes it.
	ProbeCPUSec float64 `json:"probe_cpu_sec"`
	// Programs are the storage programs' runs and costs (page-cache
	// programs together), as the time accounting lists its own.
	Programs []ProgramCost `json:"probe_programs,omitempty"`
	// Dropped counts what the probe could not record (map or buffer full).
	Dropped StorageDropped `json:"dropped"`
}

// StorageDropped counts what the storage probe lost.
type StorageDropped struct {
	Requests     int64 `json:"requests"`
	FileOps      int64 `json:"file_ops"`
	SQLiteEvents int64 `json:"sqlite_events"`
	// Unseen counts completions of requests started before the probe was
	// armed (the sum of the devices' per-op Unseen): they are in no count.
	Unseen int64 `json:"unseen_completions"`
	// Missed counts requests started in the window whose completion the
	// probe did not see (the sum of the devices' per-op Missed): they are
	// in no count.
	Missed int64 `json:"missed_requests,omitempty"`
	// MissedRuns counts, per program, the runs the kernel skipped because
	// the program was already running on that CPU (its recursion_misses):
	// a missed block_rq_complete is a request not counted.
	MissedRuns map[string]int64 `json:"missed_runs,omitempty"`
	// ThreadFiles counts first calls of a thread on a file that found the
	// map of (thread, file) pairs full: the files' thread counts are short.
	ThreadFiles int64 `json:"thread_files"`
}

// BlockDevice is one whole disk over the window, as iostat -x and
// biolatency -Q see it.
type BlockDevice struct {
	Name string `json:"name"`
	// Dev is "major:minor".
	Dev string `json:"dev"`
	// BusySec is the time with at least one request in flight, from
	// /proc/diskstats' io_ticks over the window; UtilPct is its share of
	// the window: iostat's %util, over the same requests (those started
	// before the window too). The kernel counts io_ticks in whole jiffies
	// at requests' starts and ends: for requests far shorter than a jiffy
	// it is far off either way (fio's 4,000 reads a second of 77 µs read
	// 99% in one run and 2.4% in another, here, a disk 26-31% busy).
	BusySec float64 `json:"busy_sec"`
	UtilPct float64 `json:"util_pct"`
	// DriverBusySec is the time with at least one request in the driver
	// (issued and not completed), measured by the probe to the
	// nanosecond: the device's own busy time; DriverUtilPct is its share
	// of the window. Nil when not measured (records from before it).
	DriverBusySec *float64 `json:"driver_busy_sec,omitempty"`
	DriverUtilPct *float64 `json:"driver_util_pct,omitempty"`
	// DriverDrift is the probe's count of the disk's requests in the
	// driver when it stopped, less the request entries that say they are
	// there: 0 unless the count drifted, and then the depth histograms
	// are off by about that much (perfsleuth.inconsistent says so).
	DriverDrift int64 `json:"driver_drift,omitempty"`
	// Diskstats is what /proc/diskstats counted over the window, for
	// comparing with the requests the probe measured; nil when unread.
	Diskstats *DiskstatsDelta `json:"diskstats,omitempty"`
	Ops       []BlockOp       `json:"ops"`
}

// DiskstatsDelta is the change of a disk's /proc/diskstats counters over
// the window. Its writes count what the probe splits into write and
// preflush (an empty cache-flush request is a write of 0 sectors there).
type DiskstatsDelta struct {
	Reads    int64 `json:"reads"`
	Writes   int64 `json:"writes"`
	Discards int64 `json:"discards"`
	Flushes  int64 `json:"flushes"`
	// ReadBytes, WriteBytes and DiscardBytes are the sectors × 512.
	ReadBytes    int64 `json:"read_bytes"`
	WriteBytes   int64 `json:"write_bytes"`
	DiscardBytes int64 `json:"discard_bytes"`
	ReadMerges   int64 `json:"read_merges"`
	WriteMerges  int64 `json:"write_merges"`
	// IOTicksMs is the time with a request in flight, in ms.
	IOTicksMs int64 `json:"io_ticks_ms"`
}

// BlockOp is one kind of request (read, write, flush, discard, other,
// preflush) on a device. Requests started in the window and completed in
// it are counted, each once, at its final completion; every histogram
// holds each of them (Depth: each one issued to the driver).
type BlockOp struct {
	Op       string `json:"op"`
	Requests int64  `json:"requests"`
	Bytes    int64  `json:"bytes"`
	Merges   int64  `json:"merges"`
	// Issued are the requests issued to the driver (a preflush is not:
	// the flush machinery issues a flush command on its behalf).
	Issued int64 `json:"issued"`
	// Preflush and FUA count the writes with data that asked for a cache
	// flush before them (REQ_PREFLUSH) and to be on stable media when
	// complete (REQ_FUA): journal commits, O_DSYNC writes. Errors are the
	// requests that completed with an error.
	Preflush int64 `json:"preflush,omitempty"`
	FUA      int64 `json:"fua,omitempty"`
	Errors   int64 `json:"errors,omitempty"`
	// Unseen completed in the window but started before it: they are in
	// no other figure of the op (UnseenBytes their bytes).
	Unseen      int64 `json:"unseen,omitempty"`
	UnseenBytes int64 `json:"unseen_bytes,omitempty"`
	// Missed started in the window and completed, and the probe did not
	// see the completion: the kernel now and then does not run a tp_btf
	// program for an event, without counting a miss (4 reads of 3,000
	// here, at depth 1 beside a writer). Found when the request's entry is
	// still there as its struct is reused, or, on a disk with nothing in
	// flight when the probe stops, left over. Requests + Unseen + Missed
	// is what /proc/diskstats counts over the window.
	Missed int64 `json:"missed,omitempty"`
	// Workload*: requests issued by the workload's threads; Writeback*:
	// issued by another task (the flusher) for pages of files the workload
	// wrote.
	WorkloadRequests  int64 `json:"workload_requests"`
	WorkloadBytes     int64 `json:"workload_bytes"`
	WritebackRequests int64 `json:"writeback_requests"`
	WritebackBytes    int64 `json:"writeback_bytes"`
	// Queue is start (accounting) to the first issue to the driver;
	// service the time in the driver (a requeued request's issues summed;
	// a never issued preflush: start to completion); latency start to the
	// final completion (a flush sequence's post-flush included). Means over
	// Requests.
	QueueMeanSec   float64 `json:"queue_mean_sec"`
	ServiceMeanSec float64 `json:"service_mean_sec"`
	LatencyMeanSec float64 `json:"latency_mean_sec"`
	// WorkloadServiceMeanSec and WorkloadLatencyMeanSec are the same over
	// the workload's own requests (WorkloadRequests).
	WorkloadServiceMeanSec float64 `json:"workload_service_mean_sec,omitempty"`
	WorkloadLatencyMeanSec float64 `json:"workload_latency_mean_sec,omitempty"`
	// Histograms: Size in bytes, Queue and Service in ns, Depth the disk's
	// requests in the driver at a request's first issue (this one
	// included), WorkloadDepth the workload's requests in the driver at
	// the issue of each of its own: at iodepth 1 it is all 1, whatever
	// else the disk serves.
	Size          []Range `json:"size_hist"`
	Queue         []Range `json:"queue_hist"`
	Service       []Range `json:"service_hist"`
	Depth         []Range `json:"depth_hist"`
	WorkloadDepth []Range `json:"workload_depth_hist,omitempty"`
}

// Range is a histogram bucket: Count values in [Low, High].
type Range struct {
	Low   int64 `json:"low"`
	High  int64 `json:"high"`
	Count int64 `json:"count"`
}

// PageCache is the workload's page-cache use over the window.
type PageCache struct {
	// Lookups are pages looked up by its buffered reads; ReadAdded the pages
	// added to the cache during its read calls (misses and their
	// readahead). HitRatio is 1 - ReadAdded/Lookups, floored at 0; -1 when
	// there was no buffered read.
	Lookups   int64   `json:"lookups"`
	ReadAdded int64   `json:"read_added"`
	HitRatio  float64 `json:"hit_ratio"`
	// OtherAdded are pages added outside read calls (writes to new pages,
	// mmap faults).
	OtherAdded   int64 `json:"other_added"`
	FaultLookups int64 `json:"fault_lookups"`
	// Readahead windows started by a miss (sync) or by reaching the marker
	// of the previous window (async).
	ReadaheadSync  int64 `json:"readahead_sync"`
	ReadaheadAsync int64 `json:"readahead_async"`
	Dirtied        int64 `json:"dirtied"`
	// WrittenBack is the bytes of block write requests for the workload's
	// files, whoever issued them (the flusher, or its own fsync).
	WrittenBackBytes int64 `json:"written_back_bytes"`
	// Throttled counts the dirty-page balancing pauses, ThrottledSec their
	// summed length as the kernel planned it.
	Throttled    int64   `json:"throttled"`
	ThrottledSec float64 `json:"throttled_sec"`
	// PagesNotCounted: the per-page counts (Lookups, ReadAdded,
	// OtherAdded, Dirtied, and so HitRatio, -1) were not measured, not
	// zero. Their programs run with --storage only: they fire for every
	// buffered read call and every page added or dirtied. The rest of
	// PageCache is measured either way.
	PagesNotCounted bool `json:"pages_not_counted,omitempty"`
}

// FileIO is one regular file the workload read, wrote or synced.
type FileIO struct {
	Path string `json:"path"`
	Dev  string `json:"dev"`
	Ino  uint64 `json:"ino"`
	// Deleted: it had no name left when first seen.
	Deleted bool `json:"deleted,omitempty"`
	// Path is the file's name at the run's end when it was renamed during
	// the run (a PostgreSQL WAL segment from xlogtemp.N, rsync's and
	// editors' temporary names, a rotated log): FirstPath is then the name
	// it had when first seen. Gone: at the run's end its name named no
	// file and no entry of its directory was it (deleted, or moved to
	// another directory): a SQLite rollback journal, a temporary file.
	FirstPath string `json:"first_path,omitempty"`
	Gone      bool   `json:"gone,omitempty"`
	// Folded: this entry is a directory's, and holds its files that came
	// after the probe's map of files was full (StorageIO.MaxFiles):
	// Path is the directory, FoldedFiles how many files, Ino the
	// directory's inode. Path is "(other directories)" for the files whose
	// directory found the map of directories full too (Ino 0).
	Folded      bool  `json:"folded,omitempty"`
	FoldedFiles int64 `json:"folded_files,omitempty"`
	// Instances counts the files that had this path in the window (a
	// rollback journal is a new file in every transaction); the figures
	// are their sums, Dev and Ino the first one's.
	Instances int `json:"instances"`
	PID       int `json:"pid"`
	// SQLite is "db", "wal" or "journal" for SQLite files.
	SQLite string  `json:"sqlite,omitempty"`
	Reads  FileOps `json:"reads"`
	Writes FileOps `json:"writes"`
	Syncs  int64   `json:"syncs"`
	// SyncSec is the time in sync calls on it.
	SyncSec float64 `json:"sync_sec"`
	// BlockedSec is the time its calls were blocked on storage, LockSec
	// waiting on locks (an inode lock shared by writers, for one).
	BlockedSec float64 `json:"blocked_sec"`
	LockSec    float64 `json:"lock_sec"`
	Errors     int64   `json:"errors"`
}

// FileOps are the reads or the writes of a file.
type FileOps struct {
	Count int64 `json:"count"`
	Bytes int64 `json:"bytes"`
	// Sequential and Random count calls that began where the previous call
	// on the same open file ended, or elsewhere; Pattern sums them up:
	// "sequential" (80% or more), "random" (20% or less), "mixed", or ""
	// with fewer than 2 calls.
	Sequential int64  `json:"sequential"`
	Random     int64  `json:"random"`
	Pattern    string `json:"pattern,omitempty"`
	// Threads is how many threads made these calls (for files with one
	// path, the most any of them had): 16 threads writing one file queue
	// on its inode lock, 16 writing one file each do not.
	Threads int64   `json:"threads"`
	CallSec float64 `json:"call_sec"`
	// BusySec is the time with at least one of these calls in progress
	// (summed over the files that had one path); Concurrency is CallSec
	// over it: how many threads were in these calls at once, on average,
	// while one was. 16 threads writing one file at once read ~16
	// (queueing on its inode lock: LockSec); 16 threads spread over 16
	// files, ~1 each, though Threads counts all 16 over the run. 0 in a
	// record made before.
	BusySec     float64 `json:"busy_sec,omitempty"`
	Concurrency float64 `json:"concurrency,omitempty"`
	Sizes       []Range `json:"size_hist,omitempty"`
}

// SQLiteIO maps the workload's reads and writes of SQLite files to pages.
type SQLiteIO struct {
	Files []SQLiteFile `json:"files"`
	// ByType sums the operations per file kind and page type (b-tree
	// pages, overflow, freelist, ptrmap; WAL header and frames; journal
	// header and records).
	ByType []SQLitePages `json:"by_type"`
	// ByObject sums the database and WAL page operations per table or index.
	ByObject []SQLitePages `json:"by_object"`
	// Transactions are the first transactions seen, each as the sequence of
	// writes and syncs it made; Patterns count how often each sequence
	// (without page numbers) occurred.
	Transactions []SQLiteTx  `json:"transactions"`
	Patterns     []TxPattern `json:"patterns"`
	Events       int64       `json:"events"`
	Notes        []string    `json:"notes,omitempty"`
	// SQL is each SQL statement's executions and the IO above charged to
	// it (observe --sql).
	SQL *SQLStatements `json:"sql,omitempty"`
	// ByStatement is the IO above by the statement probe's id (0: none
	// named), for the probe to join to its statements into SQL.
	ByStatement map[uint32]*SQLStmtIO `json:"-"`
}

// SQLCalls are the read, write and sync calls of every file (not only
// SQLite's: a PostgreSQL backend's WAL and data files) made while a
// statement was its thread's current one, with their time.
type SQLCalls struct {
	Reads      int64   `json:"reads"`
	Writes     int64   `json:"writes"`
	Syncs      int64   `json:"syncs"`
	ReadBytes  int64   `json:"read_bytes"`
	WriteBytes int64   `json:"write_bytes"`
	ReadSec    float64 `json:"read_sec"`
	WriteSec   float64 `json:"write_sec"`
	SyncSec    float64 `json:"sync_sec"`
	// ReadMissPages are the pages its read calls brought into the page
	// cache (misses and their readahead: read from the device, the rest
	// of its reads were hits); Faults its page faults' page-cache lookups
	// (reads through mmap, which are not read calls).
	ReadMissPages int64 `json:"read_miss_pages"`
	Faults        int64 `json:"faults"`
}

// SQLStmtIO is the SQLite file IO charged to one statement: the calls
// made while it was its thread's current statement.
type SQLStmtIO struct {
	Reads      int64 `json:"reads"`
	Writes     int64 `json:"writes"`
	Syncs      int64 `json:"syncs"`
	ReadBytes  int64 `json:"read_bytes"`
	WriteBytes int64 `json:"write_bytes"`
	// Pages are the reads and writes by file kind and page type, as
	// SQLiteIO.ByType counts them.
	Pages []SQLitePages `json:"pages,omitempty"`
}

// SQLStatements are the SQL statements the workload ran, by normalised
// text (literals as ?), each with the IO it made.
type SQLStatements struct {
	// Statements, most time first; the pseudo-statements (Kind prepare,
	// checkpoint, close) stand for the IO the library makes outside any
	// statement's execution.
	Statements []SQLStatement `json:"statements"`
	// Transactions, most time first.
	Transactions []SQLTransaction `json:"transactions,omitempty"`
	// Unattributed is the SQLite file IO made while no statement was
	// current (before the first step of a thread, or by a library the
	// probe is not attached to).
	Unattributed SQLStmtIO `json:"unattributed"`
	// AttributedShare is the share of the SQLite file calls (reads,
	// writes, syncs) charged to a statement or a pseudo-statement, and
	// AttributedBytesShare that of their bytes.
	AttributedShare      float64 `json:"attributed_share"`
	AttributedBytesShare float64 `json:"attributed_bytes_share"`
	// CallsShare is the share of the workload's file calls (reads,
	// writes, syncs of every file, the files table's) made under a
	// statement; the rest were made by threads running none (a
	// PostgreSQL server's WAL writer and checkpointer, a program's own
	// files).
	CallsShare float64 `json:"calls_share"`
	// FileCalls is that whole: the workload's file calls.
	FileCalls int64 `json:"file_calls"`
	// Libraries are the files hooked: path, build id, and the offsets of
	// the statement's text and the autocommit flag found in them.
	Libraries []SQLLibrary `json:"libraries"`
	// UprobeHits are the probe's runs for the workload; OtherHits those of
	// other processes using the same library (each still a trap).
	UprobeHits int64    `json:"uprobe_hits"`
	OtherHits  int64    `json:"other_hits"`
	Notes      []string `json:"notes,omitempty"`
}

// SQLLibrary is one SQLite library the statement probe attached to.
type SQLLibrary struct {
	Path             string `json:"path"`
	BuildID          string `json:"build_id,omitempty"`
	SQLOffset        int64  `json:"sql_offset"`
	AutoCommitOffset int64  `json:"autocommit_offset"`
}

// SQLTransaction is one kind of transaction: those that ran the same
// statements in the same order (explicit ones from their BEGIN to their
// COMMIT or ROLLBACK; an autocommit statement is its own), summed over the
// processes that ran them.
type SQLTransaction struct {
	// Statements are the texts of the first eight executions, in order
	// (normalised, as the statements'); StatementCount how many each ran.
	Statements     []string `json:"statements"`
	StatementCount int      `json:"statement_count"`
	Processes      int      `json:"processes"`
	// Count ended; Sec their wall time in all, from the first
	// execution's start to the end of the one that ended it; P50Sec and
	// P99Sec from log2 buckets (within a factor of 2), MaxSec the longest.
	Count  int64   `json:"count"`
	Sec    float64 `json:"sec"`
	P50Sec float64 `json:"p50_sec"`
	P99Sec float64 `json:"p99_sec"`
	MaxSec float64 `json:"max_sec"`
	// Syncs are the sync calls made in them by the threads that ran
	// them, every file's, in SyncSec.
	Syncs   int64   `json:"syncs"`
	SyncSec float64 `json:"sync_sec"`
}

// SQLLockWait is a statement's waits for one type of lock (PostgreSQL's
// pg_locks names: transactionid, tuple, relation, ...).
type SQLLockWait struct {
	Type  string  `json:"type"`
	Waits int64   `json:"waits"`
	Sec   float64 `json:"sec"`
}

// SQLStatement is one statement (by normalised text, per process).
type SQLStatement struct {
	PID  int    `json:"pid"`
	Kind string `json:"kind"` // statement, prepare, checkpoint, close
	Text string `json:"text"`
	// Execs were begun (a first step), Done ended by a reset or finalize;
	// Sec, P50Sec and P99Sec time the ended ones from their first step to
	// their reset (P50 and P99 from log2 buckets: within a factor of 2).
	Execs  int64   `json:"execs"`
	Done   int64   `json:"done"`
	Steps  int64   `json:"steps"`
	Sec    float64 `json:"sec"`
	P50Sec float64 `json:"p50_sec"`
	P99Sec float64 `json:"p99_sec"`
	// Autocommit counts the executions begun in autocommit mode: each its
	// own transaction, with its commit (and syncs) inside it.
	Autocommit int64 `json:"autocommit"`
	// Time is where the ended executions' time went, in seconds by the
	// time accounting's categories (cpu, cpu-wait, storage-sync, lock,
	// ...), read from its per-thread account at each execution's start
	// and end; over TimedExecs of the Done executions (those begun and
	// ended on one thread it followed). Its sum is their part of Sec,
	// TimedSec.
	Time       map[string]float64 `json:"time,omitempty"`
	TimedExecs int64              `json:"timed_execs,omitempty"`
	TimedSec   float64            `json:"timed_sec,omitempty"`
	// OffCPUExecs are executions not timed because at their start or end
	// the time accounting had their thread off the CPU while it ran: the
	// kernel's sched_switch tracepoint left out its switch-in (some
	// kernels leave out some switches: docs/probes.md), and the accounting
	// puts the thread back on the CPU only at its next switch-out.
	OffCPUExecs int64 `json:"off_cpu_execs,omitempty"`
	// LockWaits are a PostgreSQL statement's waits for heavyweight
	// locks, by the lock's type, most time first: the kernel sees them as
	// sleeps (in the backend's latch), so Time has them under sleep.
	LockWaits []SQLLockWait `json:"lock_waits,omitempty"`
	// NestedIn is the text of the PostgreSQL statement it ran inside (a
	// statement of a function or trigger that statement called); "" at
	// top level. Its time is in that statement's too (as
	// pg_stat_statements counts it), its IO and syncs are its own.
	NestedIn string `json:"nested_in,omitempty"`
	SQLStmtIO
	// Calls are every file's calls made under it, timed (SQLStmtIO above
	// is SQLite's files only, typed by page).
	Calls SQLCalls `json:"calls"`
}

// SQLiteFile is one SQLite file and what its parse found.
type SQLiteFile struct {
	Path     string `json:"path"`
	Kind     string `json:"kind"`
	PageSize int    `json:"page_size,omitempty"`
	Pages    int    `json:"pages,omitempty"`
}

// SQLitePages counts operations on one kind of page (ByType: Kind and Type
// set; ByObject: Object set).
type SQLitePages struct {
	Kind       string `json:"kind,omitempty"`
	Type       string `json:"type,omitempty"`
	Object     string `json:"object,omitempty"`
	Reads      int64  `json:"reads"`
	Writes     int64  `json:"writes"`
	ReadBytes  int64  `json:"read_bytes"`
	WriteBytes int64  `json:"write_bytes"`
	Sequential int64  `json:"sequential"`
	Random     int64  `json:"random"`
}

// SQLiteTx is one transaction's writes and syncs, in order.
type SQLiteTx struct {
	TID   int      `json:"tid"`
	Steps []string `json:"steps"`
}

// TxPattern is a sequence of steps without page numbers, and how many
// transactions made it.
type TxPattern struct {
	Steps []string `json:"steps"`
	Count int64    `json:"count"`
}

// AsyncIO is what one asynchronous IO interface's reads and writes moved
// for the workload, as rchar and wchar count what read and write calls
// move: libaio's counted as io_getevents returns them (each event's
// result), io_uring's at each completion.
type AsyncIO struct {
	// Interface is "libaio" or "io_uring".
	Interface  string `json:"interface"`
	Reads      int64  `json:"reads"`
	ReadBytes  int64  `json:"read_bytes"`
	Writes     int64  `json:"writes"`
	WriteBytes int64  `json:"write_bytes"`
	// Errors are reads and writes that failed; Uncounted, libaio events
	// the probe could not read (past 128 in one io_getevents return, or
	// their memory unreadable): in no other figure.
	Errors    int64 `json:"errors"`
	Uncounted int64 `json:"uncounted,omitempty"`
	// Rings are io_uring's rings of the workload, busiest first (with
	// --storage; none for libaio).
	Rings []URing `json:"rings,omitempty"`
}

// URing is one io_uring ring of the workload: its reads and writes (not
// multishot reads) from submission to completion.
type URing struct {
	// Pid is the process whose ring it is.
	Pid       int   `json:"pid"`
	Submitted int64 `json:"submitted"`
	Completed int64 `json:"completed"`
	// InFlightMax is the most submitted and not completed at once;
	// InFlightMean the mean over the window (the summed time in flight
	// of the completions matched to their submission, over the window:
	// Little's law), the queue depth the workload kept.
	InFlightMax  int64   `json:"in_flight_max"`
	InFlightMean float64 `json:"in_flight_mean"`
	// LatencyMeanSec is the mean time from submission to completion.
	LatencyMeanSec float64 `json:"latency_mean_sec"`
	// Unmatched are completions whose submission was not seen (it came
	// before the window, or the probe's maps were full): in Completed,
	// not in the means.
	Unmatched int64 `json:"unmatched,omitempty"`
}
