package compare

import (
	"testing"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

func TestDifferenceRules(t *testing.T) {
	cases := []struct {
		name    string
		a, b    func() *model.Run
		edit    func(a, b *model.Run)
		id      string
		absent  bool // the row must not be there
		judged  bool
		differs bool
	}{
		{name: "identical runs: the sync count agrees", a: sqliteRun, b: sqliteRun, edit: func(a, b *model.Run) {},
			id: "sync.fdatasync.calls", judged: true},
		{name: "a category's share moved 25 points", a: sqliteRun, b: sqliteRun,
			edit: func(a, b *model.Run) {
				b.TimeAccounting.Total = map[string]float64{model.CatCPU: 1, model.CatStorageSync: 1}
			},
			id: "accounting.storage-sync", judged: true, differs: true},
		{name: "a category's share moved 15 points", a: sqliteRun, b: sqliteRun,
			edit: func(a, b *model.Run) {
				b.TimeAccounting.Total = map[string]float64{model.CatCPU: 1.2, model.CatStorageSync: 0.8}
			},
			id: "accounting.storage-sync", judged: true},
		{name: "shares of a run under a second are not judged", a: sqliteRun, b: sqliteRun,
			edit: func(a, b *model.Run) {
				b.TimeAccounting.Total = map[string]float64{model.CatCPU: 0.1, model.CatStorageSync: 0.4}
			},
			id: "accounting.storage-sync"},
		{name: "4x the syncs per transaction", a: sqliteRun, b: sqliteRun, edit: func(a, b *model.Run) { setSyncs(b, 4000, 2) },
			id: "sync.fdatasync.calls", judged: true, differs: true},
		{name: "twice the work with twice the syncs is the same", a: sqliteRun, b: sqliteRun,
			edit: func(a, b *model.Run) { b.Result.SQLite.Phases[0].Transactions = 2000; setSyncs(b, 2000, 1) },
			id:   "sync.fdatasync.calls", judged: true},
		{name: "1.5x the syncs is within the threshold", a: sqliteRun, b: sqliteRun, edit: func(a, b *model.Run) { setSyncs(b, 1500, 0.75) },
			id: "sync.fdatasync.calls", judged: true},
		{name: "a few syncs are not judged", a: sqliteRun, b: sqliteRun, edit: func(a, b *model.Run) { setSyncs(a, 10, 0.01); setSyncs(b, 50, 0.05) },
			id: "sync.fdatasync.calls"},
		{name: "a sync kind only one run made", a: sqliteRun, b: sqliteRun,
			edit: func(a, b *model.Run) {
				b.TimeAccounting.Syncs = append(b.TimeAccounting.Syncs, model.SyncCalls{Kind: "fsync", Count: 500, TotalSec: 0.5})
			},
			id: "sync.fsync.calls", judged: true, differs: true},
		{name: "syncs 3x slower, a third of the time", a: sqliteRun, b: sqliteRun, edit: func(a, b *model.Run) { setSyncs(b, 1000, 1.5) },
			id: "sync.fdatasync.latency", judged: true, differs: true},
		{name: "syncs 1.5x slower", a: sqliteRun, b: sqliteRun, edit: func(a, b *model.Run) { setSyncs(b, 1000, 0.75) },
			id: "sync.fdatasync.latency", judged: true},
		{name: "a latency 3x apart that is a sliver of the time", a: sqliteRun, b: sqliteRun,
			edit: func(a, b *model.Run) { setSyncs(a, 1000, 0.001); setSyncs(b, 1000, 0.003) },
			id:   "sync.fdatasync.latency", judged: true},
		{name: "latency means of few calls are not judged", a: sqliteRun, b: sqliteRun,
			edit: func(a, b *model.Run) { setSyncs(a, 200, 0.1); setSyncs(b, 200, 1) },
			id:   "sync.fdatasync.latency"},
		{name: "hit ratio 15 points lower", a: sqliteRun, b: sqliteRun, edit: func(a, b *model.Run) { b.Storage.Cache.HitRatio = 0.85 },
			id: "cache.hit_ratio", judged: true, differs: true},
		{name: "hit ratio 5 points lower", a: sqliteRun, b: sqliteRun, edit: func(a, b *model.Run) { b.Storage.Cache.HitRatio = 0.95 },
			id: "cache.hit_ratio", judged: true},
		{name: "hit ratio of a few lookups", a: sqliteRun, b: sqliteRun,
			edit: func(a, b *model.Run) { b.Storage.Cache.HitRatio, b.Storage.Cache.Lookups = 0.2, 100 },
			id:   "cache.hit_ratio"},
		{name: "no buffered reads: no hit ratio", a: sqliteRun, b: sqliteRun, edit: func(a, b *model.Run) { b.Storage.Cache.HitRatio = -1 },
			id: "cache.hit_ratio", absent: true},
		{name: "pages dirtied 3x per transaction", a: sqliteRun, b: sqliteRun, edit: func(a, b *model.Run) { b.Storage.Cache.Dirtied = 9000 },
			id: "cache.dirtied", judged: true, differs: true},
		{name: "pages not counted in B (no --storage) are not compared", a: sqliteRun, b: sqliteRun,
			edit: func(a, b *model.Run) { b.Storage.Cache = &model.PageCache{HitRatio: -1, PagesNotCounted: true} },
			id:   "cache.dirtied", absent: true},
		{name: "4 busy threads against 1", a: commandRun, b: commandRun,
			edit: func(a, b *model.Run) {
				for i := 2; i <= 4; i++ {
					b.TimeAccounting.Threads = append(b.TimeAccounting.Threads, model.ThreadTime{TID: i, WallSec: 2})
				}
			},
			id: "concurrency.busy_threads", judged: true, differs: true},
		{name: "busy threads at once 1.0 against 1.8", a: commandRun, b: commandRun,
			edit: func(a, b *model.Run) { b.TimeAccounting.Total[model.CatCPU] = 3.1 },
			id:   "concurrency.at_once", judged: true, differs: true},
		{name: "busy threads at once 1.0 against 1.3", a: commandRun, b: commandRun,
			edit: func(a, b *model.Run) { b.TimeAccounting.Total[model.CatCPU] = 2.1 },
			id:   "concurrency.at_once", judged: true},
		{name: "writers per file: 4 threads on 1 file against 1 per file", a: fileioRun, b: fileioRun,
			edit: func(a, b *model.Run) {
				a.Target.FileIO.RW, b.Target.FileIO.RW, b.Target.FileIO.Files = "write", "write", 4
			},
			id: "concurrency.writers_per_file", judged: true, differs: true},
		{name: "measured writers per file (--storage) before the settings: 16 on one file against 1", a: fileioRun, b: fileioRun,
			edit: func(a, b *model.Run) {
				// The settings alone would say 1 against 1.
				a.Target.FileIO.RW, b.Target.FileIO.RW = "write", "write"
				a.Storage = &model.StorageIO{Files: []model.FileIO{{Path: "/f", Writes: model.FileOps{Count: 9, Threads: 16}}}}
				b.Storage = &model.StorageIO{Files: []model.FileIO{{Path: "/f1", Writes: model.FileOps{Count: 9, Threads: 1}},
					{Path: "/f2", Writes: model.FileOps{Count: 9, Threads: 1}}}}
			},
			id: "concurrency.writers_per_file", judged: true, differs: true},
		{name: "writers at once per file: 16 queueing on one file against 1 each", a: fileioRun, b: fileioRun,
			edit: func(a, b *model.Run) {
				// Both counted 16 writers per file over the run.
				a.Storage = &model.StorageIO{Files: []model.FileIO{{Path: "/f", Writes: model.FileOps{Count: 9, Threads: 16, CallSec: 4, Concurrency: 15.2}}}}
				b.Storage = &model.StorageIO{Files: []model.FileIO{{Path: "/f1", Writes: model.FileOps{Count: 9, Threads: 16, CallSec: 1, Concurrency: 1.1}},
					{Path: "/f2", Writes: model.FileOps{Count: 9, Threads: 16, CallSec: 3, Concurrency: 1.3}},
					{Path: "/d", Folded: true, Writes: model.FileOps{Count: 9, Threads: 16, CallSec: 9, Concurrency: 9}}}}
			},
			id: "concurrency.writers_at_once", judged: true, differs: true},
		{name: "writers at once per file 1.1 against 1.3", a: fileioRun, b: fileioRun,
			edit: func(a, b *model.Run) {
				a.Storage = &model.StorageIO{Files: []model.FileIO{{Path: "/f", Writes: model.FileOps{Count: 9, Threads: 16, CallSec: 4, Concurrency: 1.1}}}}
				b.Storage = &model.StorageIO{Files: []model.FileIO{{Path: "/f", Writes: model.FileOps{Count: 9, Threads: 16, CallSec: 4, Concurrency: 1.3}}}}
			},
			id: "concurrency.writers_at_once", judged: true},
		{name: "no spans measured: no writers at once", a: fileioRun, b: fileioRun,
			edit: func(a, b *model.Run) {
				a.Storage = &model.StorageIO{Files: []model.FileIO{{Path: "/f", Writes: model.FileOps{Count: 9, Threads: 16}}}}
				b.Storage = a.Storage
			},
			id: "concurrency.writers_at_once", absent: true},
		{name: "readers have no writers per file", a: fileioRun, b: fileioRun,
			edit: func(a, b *model.Run) { a.Target.FileIO.RW, b.Target.FileIO.RW = "randread", "randread" },
			id:   "concurrency.writers_per_file", absent: true},
		{name: "voluntary switches 3x per transaction", a: sqliteRun, b: sqliteRun,
			edit: func(a, b *model.Run) { b.Observation.Totals.Process.VolCtxSw = 6000 },
			id:   "ctxsw.voluntary", judged: true, differs: true},
		{name: "involuntary switches 3x, but a few hundred", a: sqliteRun, b: sqliteRun,
			edit: func(a, b *model.Run) {
				a.Observation.Totals.Process.InvolCtxSw, b.Observation.Totals.Process.InvolCtxSw = 200, 600
			},
			id: "ctxsw.involuntary"},
		{name: "involuntary switches 3x, thousands", a: sqliteRun, b: sqliteRun,
			edit: func(a, b *model.Run) {
				a.Observation.Totals.Process.InvolCtxSw, b.Observation.Totals.Process.InvolCtxSw = 1000, 3000
			},
			id: "ctxsw.involuntary", judged: true, differs: true},
		{name: "write requests 16 times larger", a: sqliteRun, b: sqliteRun,
			edit: func(a, b *model.Run) {
				w := &b.Storage.Devices[0].Ops[0]
				w.Bytes, w.WorkloadBytes = w.Bytes*16, w.WorkloadBytes*16
			},
			id: "block.write.size", judged: true, differs: true},
		{name: "write service time 3x, all of the time", a: sqliteRun, b: sqliteRun,
			edit: func(a, b *model.Run) { b.Storage.Devices[0].Ops[0].ServiceMeanSec = 300e-6 },
			id:   "block.write.service", judged: true, differs: true},
		{name: "flushes count the device's, not the workload's", a: sqliteRun, b: sqliteRun,
			edit: func(a, b *model.Run) { b.Storage.Devices[0].Ops[1].Requests = 4000 },
			id:   "block.flush.requests", judged: true, differs: true},
		{name: "other tasks' reads are not the workload's", a: sqliteRun, b: sqliteRun,
			edit: func(a, b *model.Run) {
				b.Storage.Devices[0].Ops = append(b.Storage.Devices[0].Ops, model.BlockOp{Op: "read", Requests: 900, Bytes: 900 * 4096})
			},
			id: "block.read.requests", absent: true},
		{name: "devices of other names are paired by the disk under the files", a: sqliteRun, b: sqliteRun,
			edit: func(a, b *model.Run) {
				b.Host.Storage.Disks = []string{"nvme0n1"}
				b.Storage.Devices[0].Name = "nvme0n1"
				b.Storage.Devices[0].Ops[0].WorkloadRequests = 12000
			},
			id: "block.write.requests", judged: true, differs: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, b := tc.a(), tc.b()
			tc.edit(a, b)
			ds := differences(a, b)
			d := row(ds, tc.id)
			if tc.absent {
				if d != nil {
					t.Fatalf("row %s is there: %+v", tc.id, *d)
				}
				return
			}
			if d == nil {
				var got []string
				for _, x := range ds {
					got = append(got, x.ID)
				}
				t.Fatalf("no row %s among %v", tc.id, got)
			}
			if d.Judged != tc.judged || d.Differs != tc.differs {
				t.Errorf("%s: judged %v differs %v (A %g, B %g, %s), want judged %v differs %v",
					tc.id, d.Judged, d.Differs, d.A, d.B, d.Note, tc.judged, tc.differs)
			}
			if !d.Judged && d.Note == "" {
				t.Errorf("%s is not judged and does not say why", tc.id)
			}
			if d.Rule == "" {
				t.Errorf("%s has no rule", tc.id)
			}
		})
	}
}

// Identical runs differ in nothing.
func TestIdenticalRunsDifferInNothing(t *testing.T) {
	for _, mk := range []func() *model.Run{sqliteRun, fileioRun, commandRun} {
		a, b := mk(), mk()
		for _, d := range differences(a, b) {
			if d.Differs {
				t.Errorf("%s: %s differs between identical runs: %s", a.Target.Kind, d.ID, d.Words())
			}
		}
	}
}

// Runs of different kinds set side by side only what they share, per
// second of their measured phases.
func TestDifferentKindsAreComparedPerSecond(t *testing.T) {
	ds := differences(sqliteRun(), fileioRun())
	d := row(ds, "sync.fdatasync.calls")
	if d == nil || d.Per != "second" {
		t.Fatalf("sync calls not compared per second: %+v", d)
	}
	if d.A != 500 || d.B != 1000 {
		t.Errorf("sync calls per second A %g B %g, want 500 and 1000", d.A, d.B)
	}
}
