package rows

import (
	"fmt"
	"sort"
	"strings"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/units"
)

// CPURow is one CPU's (or all CPUs', Name "all") time over the window, in
// percent, in iostat's columns.
type CPURow struct {
	Name                                   string
	User, System, IOWait, IRQ, Steal, Idle float64
}

// CPUs builds the CPU rows: user includes nice, irq includes softirq.
func CPUs(cs []model.CPUUse) []CPURow {
	var out []CPURow
	for _, c := range cs {
		name := fmt.Sprintf("cpu%d", c.CPU)
		if c.CPU < 0 {
			name = "all"
		}
		out = append(out, CPURow{name, c.User + c.Nice, c.System, c.IOWait, c.IRQ + c.SoftIRQ, c.Steal, c.Idle})
	}
	return out
}

// Busy is a CPU's busy percentage: neither idle nor waiting for IO; never
// below 0, which rounding in the kernel's counters can make it.
func Busy(c model.CPUUse) float64 { return max(100-c.Idle-c.IOWait, 0) }

// Process says what the workload's process tree did over the window, one
// sentence a line; the delays are "" when none was measured.
type Process struct {
	// Storage is what reached the block devices for the workload, from
	// the block probe; "" without it.
	Storage                                   string
	Workload, Switches, IO, IODelay, RunDelay string
}

// asyncIO is what the workload's asynchronous IO moved, which rchar and
// wchar leave out: from the storage probe, or a word that it is in
// neither when there is no storage probe to count it.
func asyncIO(st *model.StorageIO) string {
	if st == nil {
		return "; asynchronous IO (io_submit, io_uring) is in neither, and is counted only by the eBPF storage probe"
	}
	var parts []string
	for _, a := range st.AsyncIO {
		part := fmt.Sprintf("%s moved %s read (%s reads) and %s written (%s writes)", a.Interface,
			units.FormatSize(a.ReadBytes), units.FormatCount(a.Reads), units.FormatSize(a.WriteBytes), units.FormatCount(a.Writes))
		if a.Errors > 0 {
			part += fmt.Sprintf(", %s failed", units.FormatCount(a.Errors))
		}
		if a.Uncounted > 0 {
			part += fmt.Sprintf(", %s completions not read", units.FormatCount(a.Uncounted))
		}
		part += ringDepth(a.Rings)
		parts = append(parts, part)
	}
	if !st.FilesTraced {
		parts = append(parts, "libaio's is counted with --storage")
	}
	if len(parts) == 0 {
		return ""
	}
	return "; asynchronous IO, in neither: " + strings.Join(parts, "; ")
}

// ringDepth is the queue depth io_uring's rings kept (--storage): the
// busiest ring's, and how many rings there were.
func ringDepth(rings []model.URing) string {
	if len(rings) == 0 {
		return ""
	}
	r := rings[0]
	s := fmt.Sprintf(" (in flight %.1f on average, at most %d, %s from submission to completion",
		r.InFlightMean, r.InFlightMax, units.FormatNs(r.LatencyMeanSec*1e9))
	if len(rings) > 1 {
		s += fmt.Sprintf(", on the busiest of %d rings", len(rings))
	}
	return s + ")"
}

// ProcessOf describes the observation's process totals.
func ProcessOf(o *model.Observation, st *model.StorageIO, u Units) Process {
	p := o.Totals.Process
	cpuShare := ""
	if o.DurationSec > 0 {
		cpuShare = fmt.Sprintf(" (%.2f CPUs busy on average)", (p.UserSec+p.SystemSec)/o.DurationSec)
	}
	out := Process{
		Workload: fmt.Sprintf("%d process(es), %d thread(s); CPU user %s, system %s%s",
			p.Processes, p.Threads, u.Dur(p.UserSec), u.Dur(p.SystemSec), cpuShare),
		Switches: fmt.Sprintf("%s voluntary (blocked), %s involuntary (preempted)",
			units.FormatCount(p.VolCtxSw), units.FormatCount(p.InvolCtxSw)),
		// /proc/PID/io: rchar and wchar count what read and write calls
		// (read, pread, readv, sendfile...) moved, not io_submit's or
		// io_uring's; read_bytes what the kernel read from storage for
		// it; write_bytes the pages it dirtied, a page dirtied again after
		// its writeback counted again, so not what reached storage
		// (PostgreSQL's WAL: 5.7 GiB of write_bytes for 234.5 MiB
		// written). What reached storage is the block probe's.
		IO: fmt.Sprintf("read calls moved %s (%s calls), write calls %s (%s calls)%s; /proc counts %s read from storage for it and %s of pages it dirtied (a page dirtied again after its writeback counts again)",
			units.FormatSize(p.RChar), units.FormatCount(p.SyscR), units.FormatSize(p.WChar), units.FormatCount(p.SyscW),
			asyncIO(st), units.FormatSize(p.ReadBytes), units.FormatSize(p.WriteBytes)),
	}
	if st != nil && len(st.Devices) > 0 {
		var r, w int64
		for _, d := range st.Devices {
			for _, op := range d.Ops {
				switch op.Op {
				case "read":
					r += op.WorkloadBytes
				case "write":
					w += op.WorkloadBytes + op.WritebackBytes
				}
			}
		}
		out.Storage = fmt.Sprintf("%s read and %s written by block requests for it (its own, and the writeback of its files: eBPF)", units.FormatSize(r), units.FormatSize(w))
	}
	if p.IODelaySec > 0 {
		out.IODelay = u.Dur(p.IODelaySec) + " blocked on block IO (delay accounting)"
	}
	if p.RunDelaySec > 0 {
		out.RunDelay = u.Dur(p.RunDelaySec) + " runnable but waiting for a CPU (schedstat)"
	}
	return out
}

// ProcThreads lists the threads /proc saw, most CPU time first, at most n;
// exited is true when one of those listed exited during the window.
func ProcThreads(ts []model.ThreadUse, n int) (l List[model.ThreadUse], exited bool) {
	sorted := append([]model.ThreadUse(nil), ts...)
	sort.SliceStable(sorted, func(i, j int) bool {
		return sorted[i].UserSec+sorted[i].SystemSec > sorted[j].UserSec+sorted[j].SystemSec
	})
	l = first(sorted, n)
	for _, t := range l.Rows {
		exited = exited || t.Exited
	}
	return l, exited
}

// Sample is one timeline sample with the rates its interval gives.
type Sample struct {
	model.Sample
	// DT is the time since the previous sample (the first's since the
	// start).
	DT float64
	// Busy and IOWait are the whole machine's (the all-CPU line), in
	// percent.
	Busy, IOWait float64
	// UserCPUs, SystemCPUs and CPUs are the workload's CPUs busy;
	// VolPerSec and InvolPerSec its context switches per second.
	UserCPUs, SystemCPUs, CPUs float64
	VolPerSec, InvolPerSec     float64
	// Disk is the busiest disk ("-" for none), with its figures.
	Disk                string
	ReadMBps, WriteMBps float64
	UtilPct             float64
}

// Timeline builds the samples.
func Timeline(o *model.Observation) []Sample {
	out := make([]Sample, len(o.Timeline))
	for i, sm := range o.Timeline {
		s := Sample{Sample: sm, DT: o.IntervalSec, Disk: "-"}
		switch {
		case i > 0:
			s.DT = sm.TSec - o.Timeline[i-1].TSec
		case sm.TSec > 0:
			s.DT = sm.TSec
		}
		for _, c := range sm.CPUs {
			if c.CPU < 0 {
				s.Busy, s.IOWait = Busy(c), c.IOWait
			}
		}
		if s.DT > 0 {
			p := sm.Process
			s.UserCPUs, s.SystemCPUs, s.CPUs = p.UserSec/s.DT, p.SystemSec/s.DT, (p.UserSec+p.SystemSec)/s.DT
			s.VolPerSec, s.InvolPerSec = float64(p.VolCtxSw)/s.DT, float64(p.InvolCtxSw)/s.DT
		}
		for _, x := range sm.Disks {
			if x.UtilPct >= s.UtilPct {
				s.Disk, s.ReadMBps, s.WriteMBps, s.UtilPct = x.Device, x.ReadMBps, x.WriteMBps, x.UtilPct
			}
		}
		out[i] = s
	}
	return out
}

// Overhead says what observing cost: the /proc sampling's CPU and the eBPF
// programs'; long explains how the programs' cost was estimated. "" for
// an observation of no duration.
func Overhead(run *model.Run, o *model.Observation, u Units, long bool) string {
	if o.DurationSec <= 0 {
		return ""
	}
	txt := fmt.Sprintf("/proc sampling used %s of CPU (%.2f%% of one CPU)", u.Dur(o.ObserverCPUSec), o.ObserverCPUSec/o.DurationSec*100)
	if ta := run.TimeAccounting; ta != nil && ta.Source == "ebpf" {
		how := ""
		if long {
			how = ": each program's runs times its cost calibrated on this host"
		}
		txt += fmt.Sprintf("; the eBPF programs ran %s times for an estimated %s of CPU in all (%.2f%% of one CPU%s)",
			units.FormatCount(ta.ProbeRuns), u.Dur(ta.ProbeCPUSec), ta.ProbeCPUSec/o.DurationSec*100, how)
		if ta.ProbeNote != "" {
			txt += "; " + ta.ProbeNote
		}
	}
	return txt
}
