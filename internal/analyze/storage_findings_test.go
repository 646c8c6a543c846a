package analyze

import (
	"strings"
	"testing"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// storageIDs are the findings that read run.Storage.
var storageIDs = []string{"io.random_small", "cache.miss_heavy", "writeback.throttled", "device.saturated",
	"device.queue_shallow", "device.discards", "storage.write_amplification", "sqlite.journal_overhead", "sqlite.index_write_amplification"}

// storageRun is a 10 s window with one busy thread whose seconds are secs,
// and the storage record s.
func storageRun(secs map[string]float64, s *model.StorageIO) *model.Run {
	r := runWith(2, 10, thread(1, secs))
	r.Observation = &model.Observation{DurationSec: 10}
	r.Storage = s
	return r
}

// storageBound waits on storage 60% of its time.
var storageBound = map[string]float64{"cpu": 3, "storage-read": 1, "storage-write": 1, "storage-sync": 4, "sleep": 1}

// cpuBound waits on storage 10% of its time.
var cpuBound = map[string]float64{"cpu": 9, "storage-read": 1}

// readBound waits on storage reads 50% of its time, 60% on storage in all
// (fio at iodepth 1).
var readBound = map[string]float64{"cpu": 3, "storage-read": 5, "storage-write": 0.5, "storage-sync": 0.5, "sleep": 1}

func files(fs ...model.FileIO) *model.StorageIO { return &model.StorageIO{Files: fs} }

func file(path string, reads, writes model.FileOps) model.FileIO {
	return model.FileIO{Path: path, Dev: "8:1", Ino: 12, Reads: reads, Writes: writes}
}

func ops(pattern string, calls, size int64) model.FileOps {
	return model.FileOps{Count: calls, Bytes: calls * size, Pattern: pattern}
}

func cache(c model.PageCache) *model.StorageIO { return &model.StorageIO{Cache: &c} }

// device is a disk with one op of requests (workload requests when own),
// depth1 of them issued with no other in flight, the rest at depth 2-3.
func device(name string, util float64, requests, depth1 int64, queueSec, serviceSec float64, own bool) model.BlockDevice {
	op := model.BlockOp{Op: "write", Requests: requests, Bytes: requests * 4096, QueueMeanSec: queueSec, ServiceMeanSec: serviceSec,
		Depth: []model.Range{{Low: 0, High: 1, Count: depth1}, {Low: 2, High: 3, Count: requests - depth1}}}
	if own {
		op.WorkloadRequests = requests
		op.WorkloadDepth, op.WorkloadServiceMeanSec = op.Depth, serviceSec
	}
	return model.BlockDevice{Name: name, Dev: "8:0", UtilPct: util, BusySec: util / 10, Ops: []model.BlockOp{op}}
}

func devices(ds ...model.BlockDevice) *model.StorageIO { return &model.StorageIO{Devices: ds} }

// rotational puts the run's files on a rotational disk.
func rotational(r *model.Run) *model.Run {
	yes := true
	r.Host.Storage = &model.Storage{Rotational: &yes}
	return r
}

func sqlite(q model.SQLiteIO) *model.StorageIO { return &model.StorageIO{SQLite: &q} }

// deleteFull is a single-row insert in journal_mode=DELETE,
// synchronous=FULL: the journal is synced twice, the database once.
var deleteFull = []string{"journal header", "journal record ×3", "sync journal", "journal header", "sync journal",
	"db header+table-leaf", "db table-leaf contacts", "db index-leaf contacts_name", "sync db"}

// walNormal is a single-row insert in WAL mode, synchronous=NORMAL.
var walNormal = []string{"wal frame (table-leaf contacts)", "wal frame (index-leaf contacts_name)", "wal commit-frame-header", "wal frame (header+table-leaf)"}

func written(kind string, bytes int64) model.SQLitePages {
	return model.SQLitePages{Kind: kind, Type: "any", Writes: bytes / 4096, WriteBytes: bytes}
}

func pages(kind, typ string, writes int64) model.SQLitePages {
	return model.SQLitePages{Kind: kind, Type: typ, Writes: writes, WriteBytes: writes * 4096}
}

func object(name string, writes int64) model.SQLitePages {
	return model.SQLitePages{Object: name, Writes: writes, WriteBytes: writes * 4096}
}

func TestStorageFindings(t *testing.T) {
	cases := []struct {
		name string
		id   string
		run  *model.Run
		// severity is the finding's, "" when it must not be reported.
		severity string
		// evidence must all appear in the summary or evidence; absent
		// must not.
		evidence []string
		absent   []string
	}{
		{
			name: "random 4 KiB reads beside a sequential log", id: "io.random_small", severity: "info",
			run: storageRun(cpuBound, files(
				file("/data/db.dat", ops("random", 8000, 4096), model.FileOps{}),
				file("/data/log", model.FileOps{}, ops("sequential", 2000, 64<<10)))),
			evidence: []string{"80% of the file calls", "8,000 of 10,000 file calls", "/data/db.dat: 8,000 random reads of 4 KiB on average (800/s)"},
			absent:   []string{"/data/log"},
		},
		{
			name: "sysbench rndwr's default 16 KiB blocks count as small", id: "io.random_small", severity: "info",
			run:      storageRun(cpuBound, files(file("/sb/test_file.0", model.FileOps{}, ops("random", 5000, 16<<10)))),
			evidence: []string{"/sb/test_file.0: 5,000 random writes of 16 KiB on average (500/s)"},
		},
		{
			name: "random small calls that are a side stream", id: "io.random_small",
			run: storageRun(cpuBound, files(
				file("/data/db.dat", ops("random", 4000, 4096), model.FileOps{}),
				file("/data/log", model.FileOps{}, ops("sequential", 6000, 4096)))),
		},
		{
			name: "random 32 KiB calls are not small", id: "io.random_small",
			run: storageRun(cpuBound, files(file("/data/db.dat", ops("random", 8000, 32<<10), model.FileOps{}))),
		},
		{
			name: "mostly sequential small calls", id: "io.random_small",
			run: storageRun(cpuBound, files(file("/data/db.dat", ops("mixed", 8000, 4096), model.FileOps{}))),
		},
		{
			name: "without --storage there are no files", id: "io.random_small",
			run: storageRun(cpuBound, &model.StorageIO{Devices: []model.BlockDevice{device("sda", 10, 100, 100, 0, 1e-4, true)}}),
		},
		{
			name: "cold reads", id: "cache.miss_heavy", severity: "warning",
			run: storageRun(map[string]float64{"cpu": 6, "storage-read": 4}, cache(model.PageCache{
				Lookups: 100000, ReadAdded: 60000, HitRatio: 0.4, ReadaheadSync: 500, ReadaheadAsync: 20})),
			evidence: []string{"hit ratio 0.40", "100,000 pages looked up", "60,000 pages added", "500 windows started by a miss, 20 by reaching",
				"storage-read 4.000s of 10.000s busy-thread time (40.0%)"},
		},
		{
			// Without the storage-read time, the misses' cost is unknown:
			// worth knowing, not a warning.
			name: "the /proc fallback cannot tell storage-read time", id: "cache.miss_heavy", severity: "info",
			run: func() *model.Run {
				r := storageRun(map[string]float64{"cpu": 6, "unknown": 4}, cache(model.PageCache{Lookups: 100000, ReadAdded: 60000, HitRatio: 0.4}))
				r.TimeAccounting.Source = "procfs"
				return r
			}(),
			evidence: []string{"hit ratio 0.40"},
			absent:   []string{"storage-read"},
		},
		{
			name: "a warm cache", id: "cache.miss_heavy",
			run: storageRun(cpuBound, cache(model.PageCache{Lookups: 100000, ReadAdded: 5000, HitRatio: 0.95})),
		},
		{
			name: "a cold start of a few pages", id: "cache.miss_heavy",
			run: storageRun(cpuBound, cache(model.PageCache{Lookups: 500, ReadAdded: 500, HitRatio: 0})),
		},
		{
			name: "no buffered read", id: "cache.miss_heavy",
			run: storageRun(cpuBound, cache(model.PageCache{HitRatio: -1, Dirtied: 1000})),
		},
		{
			name: "no page-cache tracepoints", id: "cache.miss_heavy",
			run: storageRun(cpuBound, &model.StorageIO{}),
		},
		{
			name: "a writer paused 10% of its time", id: "writeback.throttled", severity: "warning",
			run: storageRun(map[string]float64{"cpu": 7, "storage-write": 3}, cache(model.PageCache{
				HitRatio: -1, Dirtied: 500000, WrittenBackBytes: 1 << 30, Throttled: 120, ThrottledSec: 1})),
			evidence: []string{"120 dirty-throttling pauses planned to last 1.000s, 10% of busy-thread time", "500,000 pages dirtied, 1 GiB written back",
				"storage-write 3.000s"},
		},
		{
			// Without --storage the pages dirtied are not counted: the
			// evidence gives /proc's write_bytes, never "0 pages dirtied".
			name: "a writer paused, pages not counted", id: "writeback.throttled", severity: "warning",
			run: func() *model.Run {
				r := storageRun(map[string]float64{"cpu": 7, "storage-write": 3}, cache(model.PageCache{
					HitRatio: -1, PagesNotCounted: true, WrittenBackBytes: 1 << 30, Throttled: 120, ThrottledSec: 1}))
				r.Observation = &model.Observation{DurationSec: 10, Totals: model.Totals{Process: model.ProcessUse{WriteBytes: 2 << 30}}}
				return r
			}(),
			evidence: []string{"2 GiB dirtied or written directly (/proc/PID/io write_bytes), 1 GiB written back"},
			absent:   []string{"pages dirtied"},
		},
		{
			name: "without accounting the window is the base", id: "writeback.throttled", severity: "warning",
			run: func() *model.Run {
				r := storageRun(cpuBound, cache(model.PageCache{HitRatio: -1, Throttled: 120, ThrottledSec: 1}))
				r.TimeAccounting = nil
				return r
			}(),
			evidence: []string{"10% of the window"},
			absent:   []string{"storage-write"},
		},
		{
			name: "a few stray pauses", id: "writeback.throttled",
			run: storageRun(cpuBound, cache(model.PageCache{HitRatio: -1, Throttled: 40, ThrottledSec: 0.4})),
		},
		{
			name: "pauses of unknown length (HZ unknown)", id: "writeback.throttled",
			run: storageRun(cpuBound, cache(model.PageCache{HitRatio: -1, Throttled: 5000, ThrottledSec: -1})),
		},
		{
			name: "no pause", id: "writeback.throttled",
			run: storageRun(cpuBound, cache(model.PageCache{HitRatio: -1, Dirtied: 500000})),
		},
		{
			name: "a rotational disk busy 97% of the time", id: "device.saturated", severity: "warning",
			run:      rotational(storageRun(storageBound, devices(device("sda", 97, 20000, 19000, 1e-4, 5e-4, true)))),
			evidence: []string{"1 block device looks saturated", "sda: 97% util, 20,000 requests (2,000/s), 78.1 MiB (7.8 MiB/s), mean queue 100µs, service 500µs", "rotational disk busy this much"},
		},
		// Regression: %util alone called a virtual disk that serves
		// requests in parallel saturated (sysbench rndwr at 4% util, fio
		// at iodepth 1): busy is not full.
		{
			name: "a parallel device busy 97% of the time, requests not waiting", id: "device.saturated",
			run: storageRun(storageBound, devices(device("vda", 97, 20000, 19000, 1e-4, 5e-4, true))),
		},
		{
			name: "requests queue as long as they are served, at depth", id: "device.saturated", severity: "warning",
			run:      storageRun(storageBound, devices(device("nvme0n1", 85, 20000, 8000, 2e-3, 1e-3, true))),
			evidence: []string{"nvme0n1: 85% util", "mean queue 2.00ms, service 1.00ms", "60% of requests issued with another in flight"},
			absent:   []string{"serves requests in parallel"},
		},
		{
			name: "untimed requests print no times", id: "device.saturated", severity: "warning",
			run:      rotational(storageRun(storageBound, devices(device("sda", 97, 20000, 19000, 0, 0, true)))),
			evidence: []string{"sda: 97% util, 20,000 requests (2,000/s), 78.1 MiB (7.8 MiB/s), 5% of requests issued with another in flight"},
			absent:   []string{"mean queue", ", service "},
		},
		{
			name: "busy but requests do not wait", id: "device.saturated",
			run: storageRun(storageBound, devices(device("sda", 85, 20000, 8000, 1e-4, 1e-3, true))),
		},
		{
			name: "queue time at depth 1 is the scheduler's, not the device's", id: "device.saturated",
			run: storageRun(storageBound, devices(device("sda", 50, 20000, 19000, 2e-3, 1e-3, true))),
		},
		{
			name: "a saturated device the workload does not use", id: "device.saturated",
			run: storageRun(storageBound, devices(device("sdb", 99, 20000, 1000, 2e-3, 1e-3, false))),
		},
		{
			name: "no device recorded", id: "device.saturated",
			run: storageRun(storageBound, &model.StorageIO{}),
		},
		{
			name: "waiting on storage one request at a time", id: "device.queue_shallow", severity: "warning",
			run: storageRun(readBound, devices(device("vda", 40, 5000, 4800, 1e-5, 8e-4, true))),
			evidence: []string{"waits on storage 60% of its time", "vda: 96% of the workload's 5,000 requests issued with none of its others in flight, 40% util, its requests' mean service 800µs, 4 KiB per request",
				"storage-read 5.000s, storage-write 0.500s, storage-sync 0.500s: 60% of 10.000s", "iodepth"},
		},
		{
			// rm -rf on a file system mounted with discard.
			name: "deleting files on a discard mount", id: "device.discards", severity: "warning",
			run: func() *model.Run {
				r := storageRun(map[string]float64{"cpu": 4, "storage-write": 3, "other": 2, "sleep": 1}, devices(model.BlockDevice{Name: "vda", Ops: []model.BlockOp{
					{Op: "discard", Requests: 20201, Bytes: 80 << 20, LatencyMeanSec: 4e-4}, {Op: "write", Requests: 30, Bytes: 30 << 12}}}))
				r.Host.Storage = &model.Storage{MountOptions: "rw,relatime,discard"}
				return r
			}(),
			evidence: []string{"20,201 discards", "mounted with discard", "fstrim"},
		},
		{
			name: "a few discards beside many writes", id: "device.discards",
			run: storageRun(storageBound, devices(model.BlockDevice{Name: "vda", Ops: []model.BlockOp{
				{Op: "discard", Requests: 150, Bytes: 1 << 20, LatencyMeanSec: 1e-4}, {Op: "write", Requests: 30000, Bytes: 30000 << 12}}})),
		},
		{
			// Redis with appendfsync always: 47x.
			name: "small synced appends", id: "storage.write_amplification", severity: "warning",
			run: func() *model.Run {
				r := storageRun(storageBound, devices(model.BlockDevice{Name: "vda", Ops: []model.BlockOp{
					{Op: "write", Requests: 80000, Bytes: 330 << 20, WorkloadRequests: 77000, WorkloadBytes: 318 << 20}}}))
				r.Observation.Totals.Process.WChar, r.Observation.Totals.Process.SyscW = 7<<20, 60000
				r.TimeAccounting.Syncs = []model.SyncCalls{{Kind: "fdatasync", Count: 60000, TotalSec: 4}}
				return r
			}(),
			evidence: []string{"the device wrote 318 MiB for the workload's files", "45x", "smaller than a block", "60,000 sync calls for 60,000 writes", "12 MiB was written by others"},
		},
		{
			name: "writes in whole blocks", id: "storage.write_amplification",
			run: func() *model.Run {
				r := storageRun(storageBound, devices(model.BlockDevice{Name: "vda", Ops: []model.BlockOp{
					{Op: "write", Requests: 8000, Bytes: 32 << 20, WorkloadRequests: 8000, WorkloadBytes: 32 << 20}}}))
				r.Observation.Totals.Process.WChar, r.Observation.Totals.Process.SyscW = 30<<20, 7680
				return r
			}(),
		},
		{
			// A single-threaded appender that syncs: fewer syncs is its
			// remedy, not a deeper queue.
			name: "a shallow queue under a sync-bound appender", id: "device.queue_shallow",
			run: storageRun(storageBound, devices(device("vda", 40, 5000, 4800, 1e-5, 8e-4, true))),
		},
		// Regression: fio at iodepth 1 read "98% of requests issued with
		// another in flight": the disk's depth counted others' requests.
		// The workload's own depth is what it keeps in flight.
		{
			name: "depth 1 for the workload while others keep the disk deeper", id: "device.queue_shallow", severity: "warning",
			run: storageRun(readBound, devices(func() model.BlockDevice {
				d := device("vda", 40, 5000, 100, 1e-5, 8e-4, true)
				d.Ops[0].WorkloadDepth = []model.Range{{Low: 0, High: 1, Count: 5000}}
				return d
			}())),
			evidence: []string{"vda: 100% of the workload's 5,000 requests issued with none of its others in flight"},
		},
		{
			name: "shallow queue but the workload is CPU-bound", id: "device.queue_shallow",
			run: storageRun(cpuBound, devices(device("vda", 40, 5000, 4800, 1e-5, 8e-4, true))),
		},
		{
			name: "shallow queue on a busy device", id: "device.queue_shallow",
			run: storageRun(storageBound, devices(device("vda", 80, 5000, 4800, 1e-5, 8e-4, true))),
		},
		{
			name: "a shallow queue on a device the workload does not use", id: "device.queue_shallow",
			run: storageRun(storageBound, devices(device("vdb", 40, 5000, 4800, 1e-5, 8e-4, false))),
		},
		{
			name: "85% at depth 1 is not shallow enough", id: "device.queue_shallow",
			run: storageRun(storageBound, devices(device("vda", 40, 5000, 4250, 1e-5, 8e-4, true))),
		},
		{
			name: "a device without a depth histogram", id: "device.queue_shallow",
			run: storageRun(storageBound, devices(model.BlockDevice{Name: "vda", UtilPct: 40, Ops: []model.BlockOp{{Op: "write", Requests: 5000, WorkloadRequests: 5000}}})),
		},
		{
			name: "the /proc fallback cannot tell storage time", id: "device.queue_shallow",
			run: func() *model.Run {
				r := storageRun(map[string]float64{"cpu": 4, "unknown": 6}, devices(device("vda", 40, 5000, 4800, 1e-5, 8e-4, true)))
				r.TimeAccounting.Source = "procfs"
				return r
			}(),
		},
		{
			name: "single-row inserts in DELETE mode with FULL syncs", id: "sqlite.journal_overhead", severity: "warning",
			run: storageRun(storageBound, sqlite(model.SQLiteIO{
				Patterns: []model.TxPattern{{Steps: []string{"journal header", "sync db"}, Count: 50}, {Steps: deleteFull, Count: 950}},
				ByType:   []model.SQLitePages{written("db", 3*4096*1000), written("journal", 3*4112*1000+2*512*1000)}})),
			evidence: []string{"each SQLite transaction makes 2.9 syncs", "2.9 syncs per transaction on average",
				"most common transaction (950 of 1,000): journal header → journal record ×3 → sync journal → journal header → sync journal → db header+table-leaf → db table-leaf contacts → db index-leaf contacts_name → sync db",
				"bytes written: db 11.7 MiB, journal 12.7 MiB"},
		},
		{
			// The /proc fallback cannot tell sync waits apart: what the
			// syncs cost is unknown, so they are not called a warning.
			name: "DELETE mode's syncs without eBPF accounting", id: "sqlite.journal_overhead", severity: "info",
			run: func() *model.Run {
				r := storageRun(map[string]float64{"cpu": 4, "unknown": 6}, sqlite(model.SQLiteIO{
					Patterns: []model.TxPattern{{Steps: deleteFull, Count: 1000}},
					ByType:   []model.SQLitePages{written("db", 3*4096*1000), written("journal", 3*4112*1000)}}))
				r.TimeAccounting.Source = "procfs"
				return r
			}(),
			evidence: []string{"each SQLite transaction makes 3.0 syncs", "what the syncs cost is not known"},
		},
		{
			name: "WAL with NORMAL: no sync, but the WAL writes more than the checkpoints", id: "sqlite.journal_overhead", severity: "info",
			run: storageRun(cpuBound, sqlite(model.SQLiteIO{
				Patterns: []model.TxPattern{{Steps: walNormal, Count: 500}},
				ByType:   []model.SQLitePages{written("db", 1<<20), written("wal", 5<<20)}})),
			evidence: []string{"the journal or WAL writes as many bytes as the database", "0.0 syncs per transaction", "bytes written: db 1 MiB, wal 5 MiB",
				"wal frame (table-leaf contacts) → wal frame (index-leaf contacts_name)"},
		},
		{
			name: "WAL not checkpointed in the window: nothing to compare with", id: "sqlite.journal_overhead",
			run: storageRun(cpuBound, sqlite(model.SQLiteIO{
				Patterns: []model.TxPattern{{Steps: walNormal, Count: 500}},
				ByType:   []model.SQLitePages{written("wal", 5<<20)}})),
		},
		{
			name: "bulk inserts that append pages: the journal holds little", id: "sqlite.journal_overhead",
			run: storageRun(storageBound, sqlite(model.SQLiteIO{
				Patterns: []model.TxPattern{{Steps: []string{"journal header", "journal record", "db table-leaf t ×40", "sync db"}, Count: 200}},
				ByType:   []model.SQLitePages{written("db", 200*41*4096), written("journal", 200*(512+4112))}})),
		},
		{
			name: "too few transactions", id: "sqlite.journal_overhead",
			run: storageRun(storageBound, sqlite(model.SQLiteIO{
				Patterns: []model.TxPattern{{Steps: deleteFull, Count: 50}},
				ByType:   []model.SQLitePages{written("db", 3*4096*50), written("journal", 4*4112*50)}})),
		},
		{
			name: "no transaction seen", id: "sqlite.journal_overhead",
			run: storageRun(storageBound, sqlite(model.SQLiteIO{ByType: []model.SQLitePages{written("db", 1<<20), written("journal", 2<<20)}})),
		},
		{
			name: "two indexes on a table", id: "sqlite.index_write_amplification", severity: "info",
			run: storageRun(cpuBound, sqlite(model.SQLiteIO{
				ByType: []model.SQLitePages{pages("db", "header+table-leaf", 1000), pages("db", "table-leaf", 1000),
					pages("db", "index-leaf", 1200), pages("db", "index-interior", 50), pages("wal", "frame-page (index-leaf)", 300),
					pages("journal", "record-page", 3000)},
				ByObject:     []model.SQLitePages{object("contacts", 1000), object("sqlite_schema", 1000), object("contacts_email", 650), object("contacts_name", 900)},
				Patterns:     []model.TxPattern{{Steps: deleteFull, Count: 1000}},
				Transactions: []model.SQLiteTx{{TID: 1, Steps: []string{"wal frame (index-leaf contacts_email p12)", "db index-leaf p7"}}}})),
			evidence: []string{"writes index pages 1.6x as often as table pages", "index pages written 1,550 times (300 of them as WAL frames), table pages 1,000 times",
				"indexes by page writes: contacts_name 900 writes (3.5 MiB), contacts_email 650 writes (2.5 MiB)"},
			absent: []string{"contacts 1,000", "sqlite_schema", "p7"},
		},
		{
			name: "the table's pages outnumber its index's", id: "sqlite.index_write_amplification",
			run: storageRun(cpuBound, sqlite(model.SQLiteIO{
				ByType: []model.SQLitePages{pages("db", "table-leaf", 1000), pages("db", "index-leaf", 900), pages("db", "header+table-leaf", 1000)}})),
		},
		{
			name: "a schema setup", id: "sqlite.index_write_amplification",
			run: storageRun(cpuBound, sqlite(model.SQLiteIO{ByType: []model.SQLitePages{pages("db", "table-leaf", 10), pages("db", "index-leaf", 60)}})),
		},
		{
			name: "no page typed", id: "sqlite.index_write_amplification",
			run: storageRun(cpuBound, sqlite(model.SQLiteIO{Patterns: []model.TxPattern{{Steps: deleteFull, Count: 1000}}})),
		},
	}
	for _, c := range cases {
		t.Run(c.id+"/"+c.name, func(t *testing.T) {
			Analyze(c.run)
			f := findingOf(c.run, c.id)
			if c.severity == "" {
				if f != nil {
					t.Fatalf("%s reported: %s %q", c.id, f.Summary, f.Evidence)
				}
				return
			}
			if f == nil {
				t.Fatalf("%s not reported; findings %q", c.id, ids(c.run.Findings))
			}
			if f.Severity != c.severity {
				t.Errorf("severity %s, want %s", f.Severity, c.severity)
			}
			// Its threshold holds for the figure it prints, and a
			// warning gives what its cause costs, at least the material
			// share: perfsleuth's check holds every finding to that.
			for _, e := range findingsHold(&model.Run{Findings: []model.Finding{*f}}) {
				t.Errorf("the finding disagrees with itself: %s", e)
			}
			text := f.Summary + "\n" + strings.Join(f.Evidence, "\n")
			for _, want := range c.evidence {
				if !strings.Contains(text, want) {
					t.Errorf("no %q in\n%s", want, text)
				}
			}
			for _, not := range c.absent {
				if strings.Contains(text, not) {
					t.Errorf("%q in\n%s", not, text)
				}
			}
		})
	}
}

// findingOf is the finding with id, or nil.
func findingOf(run *model.Run, id string) *model.Finding {
	for i := range run.Findings {
		if run.Findings[i].ID == id {
			return &run.Findings[i]
		}
	}
	return nil
}

// A storage-bound run without a storage record, or with an empty one, gets
// no storage finding: nothing is reported from zeros that were not measured.
func TestStorageFindingsNeedTheirData(t *testing.T) {
	for name, s := range map[string]*model.StorageIO{
		"no storage probe": nil,
		"empty record":     {},
		"empty parts":      {Cache: &model.PageCache{HitRatio: -1}, SQLite: &model.SQLiteIO{}},
	} {
		r := storageRun(storageBound, s)
		Analyze(r)
		for _, id := range storageIDs {
			if f := findingOf(r, id); f != nil {
				t.Errorf("%s: %s reported: %s %q", name, id, f.Summary, f.Evidence)
			}
		}
	}
}

func TestSyncStepsCountsFoldedRuns(t *testing.T) {
	if n := syncSteps([]string{"journal record ×3", "sync journal ×2", "db table-leaf t", "sync db", "sync wal ×x"}); n != 4 {
		t.Errorf("syncSteps = %d, want 4 (a run of 2, one, and one whose count does not parse)", n)
	}
}

func TestIndexNamesFromSteps(t *testing.T) {
	got := indexNames(&model.SQLiteIO{
		Patterns:     []model.TxPattern{{Steps: []string{"db index-leaf contacts_name ×2", "db table-leaf contacts", "wal frame (index-interior by_date)"}}},
		Transactions: []model.SQLiteTx{{Steps: []string{"wal frame (index-leaf by_email p12)", "db index-leaf p7", "db index-interior ×2"}}},
	})
	want := map[string]bool{"contacts_name": true, "by_date": true, "by_email": true}
	if len(got) != len(want) {
		t.Errorf("indexNames = %v, want %v", got, want)
	}
	for n := range want {
		if !got[n] {
			t.Errorf("indexNames = %v: %s missing", got, n)
		}
	}
}
