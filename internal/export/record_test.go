package export

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// Names a workload chose, made to break every format that does not escape:
// the folded format's separators (';', ' ', line breaks), JSON's and the
// Prometheus format's quotes and backslashes, and text that is not UTF-8.
const (
	hostileComm = "db worker;1"
	hostilePath = "/data/a \"quoted\" \\dir\n/x;y z.db\xff"
	hostileArg  = "--name=\"a\\b\"\n</script>"
)

// stackRun is a hand-made record with on- and off-CPU stacks, as
// `perfsleuth observe --stacks` writes them: frames innermost first,
// "function+0xoff" for the kernel, "function+0xoff (file)" for user code,
// and unresolved addresses.
func stackRun() *model.Run {
	return &model.Run{
		SchemaVersion: model.SchemaVersion,
		Tool:          model.Tool{Name: "perfsleuth", Version: "test", Args: []string{"observe", "--stacks", "--", "app"}},
		StartedAt:     time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC),
		EndedAt:       time.Date(2026, 11, 22, 10, 0, 2, 0, time.UTC),
		Host:          model.Host{Hostname: "box", Kernel: "6.1.0", Arch: "x86_64"},
		Target:        model.Target{Kind: "command", Command: &model.CommandConfig{Argv: []string{"app", hostileArg}, Dir: "/tmp"}},
		TimeAccounting: &model.TimeAccounting{
			Source:    "ebpf",
			WindowSec: 2,
			Total:     map[string]float64{model.CatCPU: 0.5, model.CatStorageSync: 1.25, model.CatSleep: 0.25},
			Threads: []model.ThreadTime{
				{PID: 100, TID: 100, Comm: "app", WallSec: 2, Seconds: map[string]float64{model.CatCPU: 0.1, model.CatSleep: 1.9}, Idle: true},
				{PID: 100, TID: 101, Comm: hostileComm, WallSec: 2, Seconds: map[string]float64{model.CatCPU: 0.4, model.CatStorageSync: 1.25, model.CatSleep: 0.35}, Role: "worker"},
			},
			OnCPUHz: 100,
			OnCPU: []model.OnCPUStack{
				{PID: 100, TID: 101, Comm: hostileComm, Samples: 30, Seconds: 0.3,
					Kernel: []string{"copy_user_generic+0x2", "vfs_write+0x10"},
					User:   []string{"crc32+0x10 (app)", "save+0x20 (app)", "main+0x30 (app)", "_start+0x5 (app)"}},
				// The same functions at other offsets: one folded line.
				{PID: 100, TID: 101, Comm: hostileComm, Samples: 12, Seconds: 0.12,
					Kernel: []string{"copy_user_generic+0x8", "vfs_write+0x10"},
					User:   []string{"crc32+0x18 (app)", "save+0x20 (app)", "main+0x30 (app)", "_start+0x5 (app)"}},
				{PID: 100, TID: 101, Comm: hostileComm, Samples: 50, Seconds: 0.5,
					User: []string{"hash;mix it+0x4 (libweird so.1)", "0x7f0000001234 (libc.so.6)", "main+0x40 (app)", "_start+0x5 (app)"}},
				{PID: 100, TID: 100, Comm: "app", Samples: 8, Seconds: 0.08,
					Kernel: []string{"0xffffffff81000010", "do_idle+0x1"}},
			},
			OffCPU: []model.OffCPUStack{
				{PID: 100, TID: 101, Category: model.CatStorageSync, Seconds: 1.2500004, Count: 500,
					Kernel: []string{"io_schedule+0x3e", "ext4_sync_file+0x225", "do_fsync+0x3a"},
					User:   []string{"fdatasync+0x3a (libc.so.6)", "save+0x60 (app)", "main+0x30 (app)", "_start+0x5 (app)"}},
				{PID: 100, TID: 101, Category: model.CatSleep, Seconds: 0.35, Count: 7,
					Kernel: []string{"hrtimer_nanosleep+0x9"},
					User:   []string{"nanosleep+0x1 (libc.so.6)", "main+0x50 (app)", "_start+0x5 (app)"}},
				// An unknown thread of another process, slept since before
				// the probe: no stack, no comm.
				{PID: 200, TID: 201, Category: model.CatSleep, Seconds: 0.0000004, Count: 1, UserNote: "not taken"},
				{PID: 200, TID: 201, Category: model.CatSleep, Seconds: 0.002, Count: 1, UserNote: "not taken"},
			},
			ProbeCPUSec: 0.0125,
			ProbeRuns:   4000,
		},
	}
}

// loadTestdata loads a real record that internal/report's tests keep, or
// this package's own: observe-stacks, the fileio benchmark observed with
// --stacks (on- and off-CPU stacks, Go and kernel frames symbolised).
func loadTestdata(t *testing.T, name string) *model.Run {
	t.Helper()
	path := filepath.Join("..", "report", "testdata", name+".json")
	if name == "observe-stacks" {
		path = filepath.Join("testdata", name+".json")
	}
	r, err := model.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
