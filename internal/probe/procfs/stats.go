package procfs

import (
	"math"
	"sort"
	"time"

	promfs "github.com/prometheus/procfs"
	"github.com/prometheus/procfs/blockdevice"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// cpuUses turns two /proc/stat readings into top's per-CPU percentages, the
// all-CPU line (CPU -1) first. Each CPU's denominator is the sum of its own
// time deltas, as top and mpstat do, so the eight shares add up to 100. User
// includes guest time (the kernel counts it in both).
func cpuUses(a, b promfs.Stat) []model.CPUUse {
	out := []model.CPUUse{cpuUse(-1, a.CPUTotal, b.CPUTotal)}
	ids := make([]int64, 0, len(b.CPU))
	for id := range b.CPU {
		if _, ok := a.CPU[id]; ok {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		out = append(out, cpuUse(int(id), a.CPU[id], b.CPU[id]))
	}
	return out
}

func cpuUse(id int, a, b promfs.CPUStat) model.CPUUse {
	// iowait can go backwards on NO_HZ kernels (Documentation/filesystems/proc.rst).
	d := func(x, y float64) float64 { return math.Max(y-x, 0) }
	u := model.CPUUse{
		CPU:     id,
		User:    d(a.User, b.User),
		Nice:    d(a.Nice, b.Nice),
		System:  d(a.System, b.System),
		IOWait:  d(a.Iowait, b.Iowait),
		IRQ:     d(a.IRQ, b.IRQ),
		SoftIRQ: d(a.SoftIRQ, b.SoftIRQ),
		Steal:   d(a.Steal, b.Steal),
		Idle:    d(a.Idle, b.Idle),
	}
	total := u.User + u.Nice + u.System + u.IOWait + u.IRQ + u.SoftIRQ + u.Steal + u.Idle
	if total <= 0 {
		return model.CPUUse{CPU: id}
	}
	pct := func(v float64) float64 { return v / total * 100 }
	u.User, u.Nice, u.System, u.IOWait = pct(u.User), pct(u.Nice), pct(u.System), pct(u.IOWait)
	u.IRQ, u.SoftIRQ, u.Steal, u.Idle = pct(u.IRQ), pct(u.SoftIRQ), pct(u.Steal), pct(u.Idle)
	return u
}

// sectorBytes is the unit of /proc/diskstats sector counts, whatever the
// device's real sector size (Documentation/admin-guide/iostats.rst).
const sectorBytes = 512

// diskUse computes iostat -x (sysstat) for one device between two readings
// dt apart:
//
//	r/s = Δreads/s            rMB/s = Δsectors_read*512/2^20/s (MiB, as iostat -m)
//	rrqm/s = Δread_merges/s   areq-sz = (Δsectors_read+Δsectors_written)/2 / (Δreads+Δwrites) KiB
//	r_await = Δread_ticks/Δreads ms        aqu-sz = Δweighted_ticks / interval_ms
//	%util = Δio_ticks / interval_ms * 100, at most 100
//
// and the same for writes. A counter that went backwards (device re-added)
// counts as 0.
func diskUse(name string, a, b blockdevice.IOStats, dt time.Duration) model.DiskUse {
	reads, writes := sat(b.ReadIOs, a.ReadIOs), sat(b.WriteIOs, a.WriteIOs)
	rsect, wsect := sat(b.ReadSectors, a.ReadSectors), sat(b.WriteSectors, a.WriteSectors)
	u := model.DiskUse{
		Device:     name,
		Reads:      int64(reads),
		Writes:     int64(writes),
		ReadBytes:  int64(rsect * sectorBytes),
		WriteBytes: int64(wsect * sectorBytes),
	}
	secs := dt.Seconds()
	if secs <= 0 {
		return u
	}
	ms := secs * 1000
	u.ReadsPerSec = float64(reads) / secs
	u.WritesPerSec = float64(writes) / secs
	u.ReadMBps = float64(rsect) * sectorBytes / (1 << 20) / secs
	u.WriteMBps = float64(wsect) * sectorBytes / (1 << 20) / secs
	u.RMergedPerSec = float64(sat(b.ReadMerges, a.ReadMerges)) / secs
	u.WMergedPerSec = float64(sat(b.WriteMerges, a.WriteMerges)) / secs
	if n := reads + writes; n > 0 {
		u.AvgRqKiB = float64(rsect+wsect) * sectorBytes / 1024 / float64(n)
	}
	u.AvgQueue = float64(sat(b.WeightedIOTicks, a.WeightedIOTicks)) / ms
	if reads > 0 {
		u.RAwaitMs = float64(sat(b.ReadTicks, a.ReadTicks)) / float64(reads)
	}
	if writes > 0 {
		u.WAwaitMs = float64(sat(b.WriteTicks, a.WriteTicks)) / float64(writes)
	}
	u.UtilPct = math.Min(float64(sat(b.IOsTotalTicks, a.IOsTotalTicks))/ms*100, 100)
	return u
}

// diskMoved says whether any request was issued or completed between the
// readings.
func diskMoved(a, b blockdevice.IOStats) bool {
	return a.ReadIOs != b.ReadIOs || a.WriteIOs != b.WriteIOs || a.DiscardIOs != b.DiscardIOs ||
		a.FlushRequestsCompleted != b.FlushRequestsCompleted || a.IOsTotalTicks != b.IOsTotalTicks
}
