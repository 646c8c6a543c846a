package procfs

import (
	"math"
	"testing"
	"time"

	promfs "github.com/prometheus/procfs"
	"github.com/prometheus/procfs/blockdevice"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// TestDiskUseIostat checks the iostat -x arithmetic on diskstats pairs
// whose results were worked out by hand.
func TestDiskUseIostat(t *testing.T) {
	base := blockdevice.IOStats{
		ReadIOs: 1000, ReadMerges: 10, ReadSectors: 80000, ReadTicks: 500,
		WriteIOs: 2000, WriteMerges: 100, WriteSectors: 160000, WriteTicks: 3000,
		IOsTotalTicks: 10000, WeightedIOTicks: 20000,
	}
	for _, tc := range []struct {
		name string
		b    blockdevice.IOStats
		dt   time.Duration
		want model.DiskUse
	}{
		{
			// +100 reads (+10 merges, +800 sectors, +200 ms), +400 writes
			// (+50 merges, +16000 sectors, +1000 ms), +500 ms busy,
			// +1500 ms weighted, in 1 s.
			name: "mixed",
			b: blockdevice.IOStats{
				ReadIOs: 1100, ReadMerges: 20, ReadSectors: 80800, ReadTicks: 700,
				WriteIOs: 2400, WriteMerges: 150, WriteSectors: 176000, WriteTicks: 4000,
				IOsTotalTicks: 10500, WeightedIOTicks: 21500,
			},
			dt: time.Second,
			want: model.DiskUse{
				ReadsPerSec: 100, WritesPerSec: 400,
				ReadMBps: 800 * 512.0 / 1048576, WriteMBps: 16000 * 512.0 / 1048576, // 0.390625, 7.8125
				RMergedPerSec: 10, WMergedPerSec: 50,
				AvgRqKiB: (800 + 16000) / 2.0 / 500, // 16.8
				AvgQueue: 1.5, RAwaitMs: 2, WAwaitMs: 2.5, UtilPct: 50,
				Reads: 100, Writes: 400, ReadBytes: 409600, WriteBytes: 8192000,
			},
		},
		{
			// Writes only, in 0.5 s; busy 600 ms of 500 ms (rounding in the
			// kernel's accounting) is capped at 100 %.
			name: "writes, util capped",
			b: blockdevice.IOStats{
				ReadIOs: 1000, ReadMerges: 10, ReadSectors: 80000, ReadTicks: 500,
				WriteIOs: 2010, WriteMerges: 100, WriteSectors: 160080, WriteTicks: 3050,
				IOsTotalTicks: 10600, WeightedIOTicks: 20250,
			},
			dt: 500 * time.Millisecond,
			want: model.DiskUse{
				WritesPerSec: 20, WriteMBps: 80 * 512.0 / 1048576 / 0.5, // 0.078125
				AvgRqKiB: 4, AvgQueue: 0.5, WAwaitMs: 5, UtilPct: 100,
				Writes: 10, WriteBytes: 40960,
			},
		},
		{
			name: "idle",
			b:    base,
			dt:   time.Second,
			want: model.DiskUse{},
		},
		{
			// The device was removed and re-added: counters restart.
			name: "counters reset",
			b:    blockdevice.IOStats{ReadIOs: 3, ReadSectors: 24, ReadTicks: 1},
			dt:   time.Second,
			want: model.DiskUse{},
		},
	} {
		got := diskUse("vda", base, tc.b, tc.dt)
		tc.want.Device = "vda"
		if !diskUseEqual(got, tc.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, got, tc.want)
		}
	}
}

func diskUseEqual(a, b model.DiskUse) bool {
	eq := func(x, y float64) bool { return math.Abs(x-y) < 1e-9 }
	return a.Device == b.Device && eq(a.ReadsPerSec, b.ReadsPerSec) && eq(a.WritesPerSec, b.WritesPerSec) &&
		eq(a.ReadMBps, b.ReadMBps) && eq(a.WriteMBps, b.WriteMBps) && eq(a.RMergedPerSec, b.RMergedPerSec) &&
		eq(a.WMergedPerSec, b.WMergedPerSec) && eq(a.AvgRqKiB, b.AvgRqKiB) && eq(a.AvgQueue, b.AvgQueue) &&
		eq(a.RAwaitMs, b.RAwaitMs) && eq(a.WAwaitMs, b.WAwaitMs) && eq(a.UtilPct, b.UtilPct) &&
		a.Reads == b.Reads && a.Writes == b.Writes && a.ReadBytes == b.ReadBytes && a.WriteBytes == b.WriteBytes
}

func TestCPUUses(t *testing.T) {
	a := promfs.Stat{
		CPUTotal: promfs.CPUStat{User: 20, System: 10, Idle: 160, Iowait: 10},
		CPU: map[int64]promfs.CPUStat{
			0: {User: 10, System: 5, Idle: 80, Iowait: 5},
			1: {User: 10, System: 5, Idle: 80, Iowait: 5},
		},
	}
	b := promfs.Stat{
		CPUTotal: promfs.CPUStat{User: 21, System: 10.5, Idle: 161.4, Iowait: 10.1},
		CPU: map[int64]promfs.CPUStat{
			// 1 s user, 0.5 s system, 0.4 s idle, 0.1 s iowait of 2 s.
			0: {User: 11, System: 5.5, Idle: 80.4, Iowait: 5.1},
			// iowait went backwards (NO_HZ): counts as 0.
			1: {User: 10, System: 5, Idle: 81, Iowait: 4.9},
		},
	}
	got := cpuUses(a, b)
	if len(got) != 3 || got[0].CPU != -1 || got[1].CPU != 0 || got[2].CPU != 1 {
		t.Fatalf("cpuUses = %+v", got)
	}
	c0 := got[1]
	if math.Abs(c0.User-50) > 1e-9 || math.Abs(c0.System-25) > 1e-9 || math.Abs(c0.Idle-20) > 1e-9 || math.Abs(c0.IOWait-5) > 1e-9 {
		t.Errorf("cpu0 = %+v, want 50/25/20/5", c0)
	}
	if c1 := got[2]; c1.IOWait != 0 || math.Abs(c1.Idle-100) > 1e-9 {
		t.Errorf("cpu1 = %+v, want 100 %% idle and no negative iowait", c1)
	}
}
