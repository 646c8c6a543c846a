package model

// FileIOConfig is every setting of the fileio benchmark. Names follow fio.
type FileIOConfig struct {
	// RW is one of read, write, randread, randwrite, readwrite, randrw.
	RW string `json:"rw"`
	// RWMixRead is the percentage of reads in readwrite/randrw.
	RWMixRead int `json:"rwmix_read"`
	// BS is the block size of every read and write, bytes.
	BS int64 `json:"bs"`
	// Size is the total size of all files, bytes.
	Size    int64 `json:"size"`
	Files   int   `json:"files"`
	Threads int   `json:"threads"`
	// Direct opens files with O_DIRECT.
	Direct bool `json:"direct"`
	// Fsync issues a sync after every Fsync writes of a thread to a file; 0 never.
	Fsync int `json:"fsync"`
	// Fdatasync makes those syncs (and the end sync) fdatasync instead of fsync.
	Fdatasync bool `json:"fdatasync"`
	// EndFsync syncs every written file once when the run ends (timed as part of the run).
	EndFsync bool `json:"end_fsync"`
	// Verify: every block the run writes carries its offset and a CRC-32C
	// of its content, and after the run each block written is read back
	// and checked (fio's verify); not timed.
	Verify bool `json:"verify,omitempty"`
	Sync   bool `json:"sync"`  // O_SYNC
	Dsync  bool `json:"dsync"` // O_DSYNC
	// DurationSec bounds the run by time; Ops by operation count (reads+writes).
	// When both are set the run stops at whichever comes first.
	DurationSec float64 `json:"duration_sec"`
	Ops         int64   `json:"ops"`
	Dir         string  `json:"dir"`
	// DirCreated is true when perfsleuth created Dir (and so removes it).
	DirCreated bool  `json:"dir_created"`
	Keep       bool  `json:"keep"`
	Force      bool  `json:"force"`
	Seed       int64 `json:"seed"`
	// IOEngine is how each thread issues its IO, as fio's ioengine:
	// "psync" (pread/pwrite, one at a time; "" in records made before
	// the choice), "libaio" or "io_uring" (asynchronous, IODepth requests
	// in flight, submitted IODepthBatch at a time).
	IOEngine     string `json:"ioengine,omitempty"`
	IODepth      int    `json:"iodepth,omitempty"`
	IODepthBatch int    `json:"iodepth_batch,omitempty"`
}

// Engine, Depth and DepthBatch are IOEngine, IODepth and IODepthBatch,
// with what records made before they existed stood for: psync, one
// request at a time.
func (c FileIOConfig) Engine() string  { return LegacySetting("ioengine", c.IOEngine) }
func (c FileIOConfig) Depth() int      { return max(c.IODepth, 1) }
func (c FileIOConfig) DepthBatch() int { return max(c.IODepthBatch, 1) }

// legacySettings are the settings records made before them leave out, by
// JSON name, and the value they stood for then.
var legacySettings = map[string]string{"ioengine": "psync", "iodepth": "1", "iodepth_batch": "1"}

// LegacySetting is value, or, when it is the zero value of a setting that
// records made before it existed leave out, what it stood for then
// ("ioengine" "" is "psync"), for the views that list settings by name.
func LegacySetting(name, value string) string {
	if d, ok := legacySettings[name]; ok && (value == "" || value == "0") {
		return d
	}
	return value
}

// FileIOResult is what the fileio benchmark measured.
type FileIOResult struct {
	Prepare PrepareStats `json:"prepare"`
	// Ops has one entry per op type that ran: "read", "write", "fsync" or "fdatasync".
	Ops []OpStats `json:"ops"`
	// Per-thread op counts (reads+writes) for fairness.
	ThreadOps []int64 `json:"thread_ops"`
	// Depths, with an asynchronous engine, counts the submits by how many
	// requests the thread had in flight right after each (fio's "IO
	// depths"): Depths[n] submits left n in flight.
	Depths []int64 `json:"depths,omitempty"`
	// Verify, with --verify: the blocks read back and checked after the run.
	Verify *VerifyStats `json:"verify,omitempty"`
}

// VerifyStats is what --verify found: Blocks read back, Bad of them not as
// written (another offset, or a checksum that does not match), First the
// first bad one in words.
type VerifyStats struct {
	Blocks int64  `json:"blocks"`
	Bad    int64  `json:"bad"`
	First  string `json:"first,omitempty"`
}

// PrepareStats describes the unmeasured layout step.
type PrepareStats struct {
	Files       int     `json:"files"`
	Bytes       int64   `json:"bytes"`
	DurationSec float64 `json:"duration_sec"`
	// Reused is true when files of the right size already existed (--keep from
	// an earlier run) and were not rewritten.
	Reused bool `json:"reused"`
}

// OpStats is the throughput and latency of one op type.
type OpStats struct {
	Op        string  `json:"op"`
	Count     int64   `json:"count"`
	Bytes     int64   `json:"bytes"`
	OpsPerSec float64 `json:"ops_per_sec"`
	MiBPerSec float64 `json:"mib_per_sec"`
	// Latency is each op's from its start to its end: with an
	// asynchronous engine from its preparation to its completion being
	// reaped (fio's lat), which SubmitLatency (to its submit call's
	// return, fio's slat) and CompleteLatency (from then, fio's clat)
	// split; those two are nil for psync.
	Latency         Latency  `json:"latency"`
	SubmitLatency   *Latency `json:"submit_latency,omitempty"`
	CompleteLatency *Latency `json:"complete_latency,omitempty"`
}

// SQLiteConfig is every setting of the sqlite benchmark.
type SQLiteConfig struct {
	Rows      int      `json:"rows"`
	TxSize    int      `json:"tx_size"`
	Journal   string   `json:"journal"`
	Sync      string   `json:"sync"`
	PageSize  int      `json:"page_size"`
	CacheSize int      `json:"cache_size"`
	Index     bool     `json:"index"`
	Phases    []string `json:"phases"`
	Dir       string   `json:"dir"`
	// DirCreated is true when perfsleuth created Dir (and so removes it).
	DirCreated    bool   `json:"dir_created"`
	Keep          bool   `json:"keep"`
	Force         bool   `json:"force"`
	Seed          int64  `json:"seed"`
	SQLiteVersion string `json:"sqlite_version"`
}

// SQLiteResult is what the sqlite benchmark measured, one entry per phase.
type SQLiteResult struct {
	Phases []PhaseStats `json:"phases"`
}

// PhaseStats is one sqlite phase (insert, update, delete, select).
type PhaseStats struct {
	Phase        string  `json:"phase"`
	Statements   int64   `json:"statements"`
	Transactions int64   `json:"transactions"`
	DurationSec  float64 `json:"duration_sec"`
	TxPerSec     float64 `json:"tx_per_sec"`
	// Latency is per transaction (per statement when tx_size is 1).
	Latency Latency `json:"latency"`
	// RowsAfter is the table's row count when the phase ended.
	RowsAfter int64 `json:"rows_after"`
}

// NullConfig is the null benchmark's settings: a workload that does no IO,
// to test the runner and the experiments without a device (fio's null
// ioengine is the model).
type NullConfig struct {
	// Ops empty operations, then a sleep to DurationSec.
	Ops         int64   `json:"ops"`
	DurationSec float64 `json:"duration_sec"`
	// PrepareSec is how long its prepare step takes.
	PrepareSec float64 `json:"prepare_sec"`
	// Fail, "prepare" or "run", makes that step fail.
	Fail string `json:"fail,omitempty"`
}

// NullResult is what the null benchmark did.
type NullResult struct {
	Ops int64 `json:"ops"`
}
