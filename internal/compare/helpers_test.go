package compare

import (
	"slices"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// sqliteRun is a hand-made observed sqlite run: 1,000 transactions in 2 s,
// one busy thread, 1,000 fdatasync calls of 0.5 ms each (0.5 s), on an ext4
// file system on vda. Tests change what their rule looks at.
func sqliteRun() *model.Run {
	return &model.Run{
		SchemaVersion: model.SchemaVersion,
		Tool:          model.Tool{Name: "perfsleuth", Version: "dev", Args: []string{"observe", "--json", "x.json", "sqlite", "--journal", "wal", "--sync", "normal"}},
		Host: model.Host{
			Hostname: "h", Kernel: "6.1.0 #1 SMP", Arch: "x86_64", CPUModel: "X", CPUsOnline: 2,
			CPUs:          []model.CPU{{ID: 0, Type: "X"}, {ID: 1, Type: "X"}},
			MemTotalBytes: 8 << 30,
			Storage: &model.Storage{Dir: "/d", MountPoint: "/", FSType: "ext4", MountOptions: "rw,relatime",
				Device: "vda", Disks: []string{"vda"}, Scheduler: "mq-deadline"},
		},
		Target: model.Target{Kind: "sqlite", SQLite: &model.SQLiteConfig{Rows: 1000, TxSize: 1, Journal: "wal", Sync: "normal",
			PageSize: 4096, CacheSize: -2000, Index: true, Phases: []string{"insert"}, Dir: "/d/x", Seed: 1}},
		Result: &model.Result{DurationSec: 2, SQLite: &model.SQLiteResult{Phases: []model.PhaseStats{
			{Phase: "insert", Transactions: 1000, DurationSec: 2, TxPerSec: 500}}}},
		TimeAccounting: &model.TimeAccounting{
			Source: "ebpf", WindowSec: 2,
			Total:       map[string]float64{model.CatCPU: 1.5, model.CatStorageSync: 0.5},
			Threads:     []model.ThreadTime{{PID: 1, TID: 1, WallSec: 2}, {PID: 1, TID: 2, WallSec: 2, Idle: true}},
			PeakThreads: 2,
			Syncs:       []model.SyncCalls{{Kind: "fdatasync", Count: 1000, TotalSec: 0.5}},
		},
		Observation: &model.Observation{Source: "procfs", DurationSec: 2,
			Totals: model.Totals{Process: model.ProcessUse{VolCtxSw: 2000, InvolCtxSw: 50}}},
		Storage: &model.StorageIO{
			Devices: []model.BlockDevice{{Name: "vda", Ops: []model.BlockOp{
				{Op: "write", Requests: 3000, Bytes: 3000 * 4096, WorkloadRequests: 3000, WorkloadBytes: 3000 * 4096, ServiceMeanSec: 100e-6, QueueMeanSec: 10e-6},
				{Op: "flush", Requests: 1000, ServiceMeanSec: 50e-6},
			}}},
			Cache: &model.PageCache{Lookups: 5000, HitRatio: 1, Dirtied: 3000},
		},
	}
}

// fileioRun is a hand-made observed fileio run: 4 threads writing 10,000
// 4 KiB blocks at random offsets of 1 file in 1 s.
func fileioRun() *model.Run {
	r := sqliteRun()
	r.Tool.Args = []string{"observe", "fileio", "--rw", "randwrite"}
	r.Target = model.Target{Kind: "fileio", FileIO: &model.FileIOConfig{RW: "randwrite", BS: 4096, Size: 1 << 30, Files: 1, Threads: 4, Dir: "/d/f", Seed: 1}}
	r.Result = &model.Result{DurationSec: 1, FileIO: &model.FileIOResult{Ops: []model.OpStats{{Op: "write", Count: 10000, Bytes: 10000 * 4096}}}}
	return r
}

// commandRun is a hand-made observed command that ran for 2 s.
func commandRun() *model.Run {
	r := sqliteRun()
	r.Tool.Args = []string{"observe", "--", "./bench", "--fast"}
	r.Target = model.Target{Kind: "command", Command: &model.CommandConfig{Argv: []string{"./bench", "--fast"}, Dir: "/d"}}
	r.Result = &model.Result{DurationSec: 2, Command: &model.CommandResult{ExitCode: 0, Exited: true, WallSec: 2}}
	return r
}

// withRepeats makes r a diagnose record whose baseline runs have these values.
func withRepeats(r *model.Run, noise float64, values ...float64) *model.Run {
	m := measureOf(r)
	ex := &model.Experiments{Measure: m, Repeat: len(values), BaselineNoise: noise}
	c := model.Condition{Name: "baseline"}
	for i, v := range values {
		c.Runs = append(c.Runs, model.ExperimentRun{Seq: i + 1, Value: v})
	}
	ex.Conditions = []model.Condition{c}
	r.Experiments = ex
	r.Tool.Args = append([]string{"diagnose", "--conditions", "baseline", "--repeat", "5"}, r.Tool.Args[1:]...)
	return r
}

// setSyncs sets the sync calls (and the storage-sync time they blocked).
func setSyncs(r *model.Run, count int64, sec float64) {
	r.TimeAccounting.Syncs = []model.SyncCalls{{Kind: "fdatasync", Count: count, TotalSec: sec}}
}

// setTime makes the run take sec for its work, with this accounting.
func setTime(r *model.Run, sec float64, total map[string]float64) {
	r.Result.DurationSec = sec
	if r.Result.SQLite != nil {
		r.Result.SQLite.Phases[0].DurationSec = sec
	}
	if r.Result.Command != nil {
		r.Result.Command.WallSec = sec
	}
	r.TimeAccounting.WindowSec = sec
	r.TimeAccounting.Total = total
	r.TimeAccounting.Threads[0].WallSec = sec
}

// setSteal gives the run's first thread 1 s on a CPU with frac of it
// stolen, measured.
func setSteal(r *model.Run, frac float64) {
	r.TimeAccounting.StealMeasured = true
	th := &r.TimeAccounting.Threads[0]
	if th.Seconds == nil {
		th.Seconds = map[string]float64{}
	}
	th.Seconds[model.CatCPU] = 1
	th.StealSec, th.UnchargedSec = frac, frac
}

func ids(is []Issue) []string {
	var out []string
	for _, x := range is {
		out = append(out, x.ID)
	}
	return out
}

func row(ds []Difference, id string) *Difference {
	i := slices.IndexFunc(ds, func(d Difference) bool { return d.ID == id })
	if i < 0 {
		return nil
	}
	return &ds[i]
}
