package htmlreport

import (
	"path/filepath"
	"testing"

	"github.com/perfsleuth/perfsleuth/internal/analyze"
	"github.com/perfsleuth/perfsleuth/internal/model"
)

// The fixtures are the terminal report's real run records (fileio observed,
// sqlite benched, a command observed, a lock-bound command diagnosed, sqlite
// observed, sqlite observed with --syscalls --stacks, sqlite diagnosed).
var fixtures = []string{"observe-fileio", "bench-sqlite", "observe-command", "diagnose-lock", "observe-sqlite", "observe-detail", "diagnose-sqlite"}

// storageFixture is this package's own real record: sqlite observed with
// --stacks --syscalls --storage, so it has on-CPU samples, files and SQLite
// pages, which the terminal report's records predate.
const storageFixture = "observe-storage"

func load(t testing.TB, name string) *model.Run {
	t.Helper()
	path := filepath.Join("..", "report", "testdata", name+".json")
	if name == storageFixture {
		path = filepath.Join("testdata", name+".json")
	}
	run, err := model.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// fullRun is one record with every section filled: the real sqlite run
// observed with --syscalls --stacks, given the fileio run's 8-sample
// timeline, the diagnosed sqlite run's experiments and sensitivity, and
// on-CPU samples and a storage view made up in the shape the probes record
// them (no saved record has those yet).
func fullRun(t testing.TB) *model.Run {
	run := load(t, "observe-detail")
	run.Observation.Timeline = load(t, "observe-fileio").Observation.Timeline
	diag := load(t, "diagnose-sqlite")
	run.Experiments = diag.Experiments
	run.Verdict.Sensitivity = diag.Verdict.Sensitivity
	run.Verdict.Conclusion = diag.Verdict.Conclusion
	run.Verdict.Bottleneck = diag.Verdict.Bottleneck
	run.Warnings = []string{"delay accounting is off: sudo sysctl -w kernel.task_delayacct=1 turns it on"}
	ta := run.TimeAccounting
	ta.OnCPUHz = 99
	libc := func(f string) string { return f + " (libc.so.6)" }
	app := func(f string) string { return f + " (perfsleuth)" }
	step := []string{app("sqlite3VdbeExec+0x1c4"), app("sqlite3_step+0x2a1"), app("github.com/perfsleuth/perfsleuth/internal/workload/sqlite.(*bench).insert+0x8e"), app("main.main+0x35")}
	ta.OnCPU = []model.OnCPUStack{
		{PID: 14438, TID: 14441, Comm: "ps", Samples: 21, User: append([]string{app("sqlite3BtreeInsert+0x3f0")}, step...)},
		{PID: 14438, TID: 14441, Comm: "ps", Samples: 9, User: append([]string{app("sqlite3VdbeRecordCompare+0x51"), app("sqlite3BtreeMovetoUnpacked+0x22a")}, step...)},
		{PID: 14438, TID: 14441, Comm: "ps", Samples: 14, User: append([]string{libc("fdatasync+0x3a")}, step[1:]...),
			Kernel: []string{"ext4_sync_file+0x241", "do_fsync+0x3a", "__x64_sys_fdatasync+0x11", "do_syscall_64+0x70", "entry_SYSCALL_64_after_hwframe+0x75"}},
		{PID: 14438, TID: 14441, Comm: "ps", Samples: 6, User: append([]string{libc("pwrite64+0x19")}, step[1:]...),
			Kernel: []string{"copy_page_from_iter_atomic+0x2c0", "generic_perform_write+0x11a", "ext4_buffered_write_iter+0x6c", "vfs_write+0x25a", "__x64_sys_pwrite64+0x92", "do_syscall_64+0x70", "entry_SYSCALL_64_after_hwframe+0x75"}},
		{PID: 14438, TID: 14439, Comm: "ps", Samples: 3, User: []string{"runtime.futex.abi0+0x23 (ps)", "runtime.notesleep+0x86 (ps)"},
			UserNote: "the stack walk stopped at an address outside the process's code: a library built without frame pointers"},
		{PID: 14438, TID: 14439, Comm: "ps", Samples: 2, KernelNote: "not taken", UserNote: "not taken"},
	}
	for i := range ta.OnCPU {
		ta.OnCPU[i].Seconds = float64(ta.OnCPU[i].Samples) / float64(ta.OnCPUHz)
	}
	log2 := func(unit int64, counts ...int64) []model.Range {
		var out []model.Range
		for i, c := range counts {
			low := unit << i
			out = append(out, model.Range{Low: low, High: low*2 - 1, Count: c})
		}
		return out
	}
	run.Storage = &model.StorageIO{
		Devices: []model.BlockDevice{{Name: "vda", Dev: "253:0", BusySec: 0.58, UtilPct: 60.4, DriverBusySec: new(0.55), DriverUtilPct: new(57.7), Ops: []model.BlockOp{
			{Op: "write", Requests: 7520, Issued: 7520, Bytes: 27 << 20, WorkloadRequests: 6900, WorkloadBytes: 25 << 20, WritebackRequests: 420,
				WritebackBytes: 1 << 20, QueueMeanSec: 4.1e-6, ServiceMeanSec: 88e-6,
				Size: log2(4096, 6800, 500, 200, 20), Queue: log2(1024, 5200, 1800, 400, 100, 20), Service: log2(16384, 900, 3100, 2800, 600, 100, 20), Depth: log2(1, 7000, 500, 20)},
			{Op: "flush", Requests: 1200, Issued: 1200, QueueMeanSec: 2e-6, ServiceMeanSec: 120e-6,
				Size: []model.Range{{Low: 0, High: 1, Count: 1200}}, Queue: log2(1024, 1100, 100), Service: log2(32768, 300, 700, 180, 20), Depth: log2(1, 1150, 50)},
		}}},
		Cache: &model.PageCache{Lookups: 1204, ReadAdded: 0, HitRatio: 1, OtherAdded: 610, Dirtied: 4450, WrittenBackBytes: 26 << 20},
		Files: []model.FileIO{
			{Path: "/tmp/perfsleuth-sqlite-3734750150/perfsleuth.db-journal", Dev: "253:1", Ino: 131, Instances: 600, PID: 14438, SQLite: "journal",
				Writes: model.FileOps{Count: 3600, Bytes: 14 << 20, Sequential: 3000, Random: 600, Pattern: "sequential", CallSec: 0.02},
				Syncs:  1200, SyncSec: 0.303, BlockedSec: 0.21},
			{Path: "/tmp/perfsleuth-sqlite-3734750150/perfsleuth.db", Dev: "253:1", Ino: 130, Instances: 1, PID: 14438, SQLite: "db",
				Reads:  model.FileOps{Count: 1204, Bytes: 1204 * 4096, Sequential: 100, Random: 1104, Pattern: "random", CallSec: 0.003},
				Writes: model.FileOps{Count: 1200, Bytes: 1200 * 4096, Sequential: 200, Random: 1000, Pattern: "random", CallSec: 0.01},
				Syncs:  600, SyncSec: 0.129, BlockedSec: 0.09, LockSec: 0.001},
		},
		SQLite: &model.SQLiteIO{
			Files:        []model.SQLiteFile{{Path: "/tmp/perfsleuth-sqlite-3734750150/perfsleuth.db", Kind: "db", PageSize: 4096, Pages: 9}},
			ByType:       []model.SQLitePages{{Kind: "db", Type: "table leaf", Reads: 800, Writes: 800, ReadBytes: 800 * 4096, WriteBytes: 800 * 4096, Random: 700, Sequential: 100}},
			ByObject:     []model.SQLitePages{{Object: "contacts", Reads: 600, Writes: 600, WriteBytes: 600 * 4096}, {Object: "contacts_name", Reads: 400, Writes: 400, WriteBytes: 400 * 4096}},
			Transactions: []model.SQLiteTx{{TID: 14441, Steps: []string{"journal header", "journal page 1", "sync journal", "db page 1", "db page 5", "sync db"}}},
			Patterns:     []model.TxPattern{{Steps: []string{"journal header", "journal page", "sync journal", "db page", "sync db"}, Count: 600}},
			Events:       7200,
		},
		Notes: []string{"page-cache readahead tracepoints are missing on this kernel"},
	}
	return run
}

// Hostile strings: markup that must stay text wherever the workload can put
// a name (a file, a thread, an argument, a frame).
const (
	hostileScript = `<script>alert(1)</script>`
	hostileImg    = `"><img src=x onerror=alert(1)>`
	hostileQuote  = `it's "quoted" & 'single'`
	hostileSVG    = `</svg><script>alert(2)</script>`
)

var hostiles = []string{hostileScript, hostileImg, hostileQuote, hostileSVG}

// hostileRun is fullRun with hostile names in every string that comes from
// the workload or the host.
func hostileRun(t testing.TB) *model.Run {
	run := fullRun(t)
	h := func(i int) string { return hostiles[i%len(hostiles)] }
	run.Host.Hostname = h(0)
	run.Host.Storage.Dir = "/tmp/" + h(1)
	run.Tool.Args = []string{"observe", "--", h(0), h(1)}
	run.Target.Notices = append(run.Target.Notices, h(2))
	run.Target.SQLite.Dir = h(3)
	run.Findings = append(run.Findings, model.Finding{ID: "x." + h(0), Severity: h(1), Summary: h(0) + h(1), Evidence: []string{h(2), h(3)}})
	run.Verdict.Summary = h(1)
	run.Warnings = append(run.Warnings, h(0))
	for i := range run.TimeAccounting.Threads {
		run.TimeAccounting.Threads[i].Comm = h(i)
	}
	for i := range run.TimeAccounting.OnCPU {
		run.TimeAccounting.OnCPU[i].Comm = h(i)
		run.TimeAccounting.OnCPU[i].User = append([]string{h(i + 1)}, run.TimeAccounting.OnCPU[i].User...)
	}
	for i := range run.TimeAccounting.OffCPU {
		run.TimeAccounting.OffCPU[i].Kernel = append([]string{h(i)}, run.TimeAccounting.OffCPU[i].Kernel...)
		run.TimeAccounting.OffCPU[i].UserNote = h(i + 2)
	}
	run.TimeAccounting.OffCPU[0].Category = h(0)
	for i := range run.TimeAccounting.SyncedFiles {
		run.TimeAccounting.SyncedFiles[i].Path = "/tmp/" + h(i)
	}
	run.TimeAccounting.Syscalls[0].Name = h(0)
	run.TimeAccounting.Unknown = []string{h(1)}
	for i := range run.Observation.Totals.Threads {
		run.Observation.Totals.Threads[i].Comm = h(i)
	}
	run.Observation.Missing = append(run.Observation.Missing, h(3))
	for i := range run.Observation.Timeline {
		for j := range run.Observation.Timeline[i].Disks {
			run.Observation.Timeline[i].Disks[j].Device = h(1)
		}
	}
	run.Storage.Devices[0].Name = h(0)
	for i := range run.Storage.Files {
		run.Storage.Files[i].Path = "/data/" + h(i)
	}
	run.Storage.SQLite.ByObject[0].Object = h(1)
	run.Storage.SQLite.Files[0].Path = h(2)
	run.Storage.SQLite.Transactions[0].Steps = []string{h(0), h(3)}
	// Statement texts come from the traced program's memory.
	run.Storage.SQLite.SQL = &model.SQLStatements{Notes: []string{h(2)}, Statements: []model.SQLStatement{
		{PID: 1, Kind: "statement", Text: "SELECT " + h(0), Execs: 3, Done: 3, Steps: 6},
		{PID: 1, Kind: "statement", Text: "INSERT INTO t VALUES (" + h(1) + ")", NestedIn: "SELECT " + h(3), Execs: 1, Done: 1, Steps: 1},
	}}
	run.Experiments.Measure.Name = h(0)
	run.Experiments.Measure.Unit = h(1)
	run.Experiments.Conditions[1].Name = h(3)
	run.Experiments.Conditions[1].Reason = h(0)
	run.Experiments.Conditions[2].Settings = []string{h(1)}
	run.Experiments.Conditions[3].Class = h(0)
	return run
}

// The hand-built full record agrees with itself as a real one must: the
// golden page is not built on figures that contradict each other.
func TestFullRunConsistent(t *testing.T) {
	run := fullRun(t)
	analyze.Run(run)
	for _, e := range analyze.Inconsistencies(run) {
		t.Errorf("fullRun disagrees with itself: %s", e)
	}
}
