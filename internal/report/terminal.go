package report

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/units"
)

// maxThreads and maxTimeline bound the text view; the JSON record keeps all.
const (
	maxThreads  = 8
	maxTimeline = 12
)

// Terminal renders a run for an 80-column terminal.
func Terminal(run *model.Run, o Options) []byte {
	d := &doc{color: o.Color}
	d.title(run)
	d.host(run.Host)
	d.target(run.Target)
	d.result(run)
	d.accounting(run)
	d.experiments(run)
	d.storage(run)
	if run.Observation != nil {
		d.observation(run, run.Observation)
	}
	if len(run.Warnings) > 0 {
		d.heading("warnings")
		for _, w := range run.Warnings {
			d.wrapped("  "+d.paint(ansiRed, "!")+" ", "    ", w)
		}
	}
	return d.b.Bytes()
}

// Describe says what ran in one line: the workload and its main settings,
// the command, or the process.
func Describe(t model.Target) string {
	switch {
	case t.FileIO != nil:
		c := t.FileIO
		return fmt.Sprintf("fileio %s, %s blocks, %d file(s), %s, %d thread(s)",
			c.RW, units.FormatSize(c.BS), c.Files, units.FormatSize(c.Size), c.Threads)
	case t.SQLite != nil:
		c := t.SQLite
		return fmt.Sprintf("sqlite %s, journal=%s sync=%s, %d rows, %d per tx",
			strings.Join(c.Phases, "/"), c.Journal, c.Sync, c.Rows, c.TxSize)
	case t.Command != nil:
		return "command: " + strings.Join(t.Command.Argv, " ")
	case t.PID != nil:
		return fmt.Sprintf("pid %d (%s)", t.PID.PID, t.PID.Comm)
	}
	return t.Kind
}

func (d *doc) title(run *model.Run) {
	verb := "bench"
	if run.Observation != nil {
		verb = "observe"
	}
	if ex := run.Experiments; ex != nil {
		verb = fmt.Sprintf("diagnose (the baseline run with the median result, of %d runs)", len(ex.Order))
	}
	head := "perfsleuth " + verb + " · " + Describe(run.Target)
	if run.Interrupted {
		head += " · INTERRUPTED"
	}
	d.wrapped("", "  ", head)
}

func (d *doc) host(h model.Host) {
	d.blank()
	mem := ""
	if h.MemTotalBytes > 0 {
		mem = ", " + units.FormatSize(h.MemTotalBytes) + " memory"
	}
	release, _, _ := strings.Cut(h.Kernel, " ")
	d.field("host", fmt.Sprintf("%s, Linux %s %s, %d CPUs%s", h.Hostname, release, h.Arch, h.CPUsOnline, mem))
	if cpus := CPUGroups(h.CPUs); cpus != "" {
		d.field("cpus", cpus)
	}
	if s := h.Storage; s != nil {
		d.field("storage", StorageDesc(s))
		d.field("mount", s.MountPoint+" "+s.MountOptions)
	}
}

// CPUGroups describes the CPUs as runs of the same type and frequency, so a
// big.LITTLE phone reads "0-3 Cortex-A53 1.80 GHz; 4-7 Cortex-A73 2.36 GHz".
func CPUGroups(cpus []model.CPU) string {
	type key struct {
		typ string
		max int64
		gov string
	}
	var parts []string
	for i := 0; i < len(cpus); {
		k := key{cpus[i].Type, cpus[i].MaxFreqKHz, cpus[i].Governor}
		j := i
		for j+1 < len(cpus) && (key{cpus[j+1].Type, cpus[j+1].MaxFreqKHz, cpus[j+1].Governor}) == k {
			j++
		}
		ids := fmt.Sprint(cpus[i].ID)
		if j > i {
			ids += fmt.Sprintf("-%d", cpus[j].ID)
		}
		p := ids + " " + k.typ
		if k.max > 0 {
			p += fmt.Sprintf(" %.2f GHz", float64(k.max)/1e6)
		}
		if k.gov != "" {
			p += " (" + k.gov + ")"
		}
		parts = append(parts, p)
		i = j + 1
	}
	return strings.Join(parts, "; ")
}

func (d *doc) target(t model.Target) {
	var s string
	switch {
	case t.FileIO != nil:
		s = settings(t.FileIO)
	case t.SQLite != nil:
		s = settings(t.SQLite)
	case t.Command != nil:
		s = "argv=" + strings.Join(t.Command.Argv, " ") + " dir=" + t.Command.Dir
	case t.PID != nil:
		s = fmt.Sprintf("pid=%d comm=%s duration=%gs cmdline=%s", t.PID.PID, t.PID.Comm, t.PID.DurationSec, t.PID.Cmdline)
	}
	d.field("settings", s)
	if len(t.Notices) > 0 {
		d.heading("what this run does that you might not expect")
		for _, n := range t.Notices {
			d.wrapped("  "+d.paint(ansiYellow, "*")+" ", "    ", n)
		}
	}
}

func (d *doc) result(run *model.Run) {
	r := run.Result
	if r == nil {
		d.heading("result")
		d.line("  no result: the run ended before its measured phase")
		return
	}
	switch {
	case r.FileIO != nil:
		p := r.FileIO.Prepare
		prep := fmt.Sprintf("prepare: %d file(s), %s in %s, not measured", p.Files, units.FormatSize(p.Bytes), secs(p.DurationSec))
		if p.Reused {
			prep = fmt.Sprintf("prepare: reused %d kept file(s), %s", p.Files, units.FormatSize(p.Bytes))
		}
		d.heading(fmt.Sprintf("result: %s measured (%s)", secs(r.DurationSec), prep))
		d.line("  %-10s %11s %9s %8s %8s %8s %8s %8s", "op", "ops/s", "MiB/s", "p50", "p90", "p99", "p99.9", "max")
		for _, op := range r.FileIO.Ops {
			mib := fmt.Sprintf("%.1f", op.MiBPerSec)
			if op.Bytes == 0 {
				mib = "-"
			}
			d.line("  %-10s %11s %9s %s", op.Op, rate(op.OpsPerSec), mib, latencyCols(op.Latency))
		}
		for _, op := range r.FileIO.Ops {
			total := units.FormatCount(op.Count) + " " + op.Op + "s"
			if op.Bytes > 0 {
				total += ", " + units.FormatSize(op.Bytes)
			}
			d.line("  in total: %s", total)
		}
		if n := len(r.FileIO.ThreadOps); n > 1 {
			d.line("  per thread: %s", Fairness(r.FileIO.ThreadOps))
		}
	case r.SQLite != nil:
		d.heading(fmt.Sprintf("result: %s measured", secs(r.DurationSec)))
		d.line("  %-7s %9s %6s %8s %8s %8s %8s %8s %7s", "phase", "tx/s", "txs", "p50", "p90", "p99", "p99.9", "max", "rows")
		for _, p := range r.SQLite.Phases {
			d.line("  %-7s %9s %6d %s %7d", p.Phase, rate(p.TxPerSec), p.Transactions, latencyCols(p.Latency), p.RowsAfter)
		}
		d.line("  latency is per transaction; rows is the table's row count after the phase")
	case r.Command != nil:
		c := r.Command
		d.heading("result")
		switch {
		case run.Target.Kind == "pid" && !c.Exited:
			d.line("  observed for %s; the process is still running", secs(c.WallSec))
		case run.Target.Kind == "pid":
			d.line("  the process exited after %s of observation", secs(c.WallSec))
		case c.Signal != "":
			d.line("  killed by %s after %s", c.Signal, secs(c.WallSec))
		default:
			d.line("  exit status %d after %s", c.ExitCode, secs(c.WallSec))
		}
	}
}

func latencyCols(l model.Latency) string {
	if l.Count == 0 {
		return fmt.Sprintf("%8s %8s %8s %8s %8s", "-", "-", "-", "-", "-")
	}
	f := func(ns int64) string { return units.FormatNs(float64(ns)) }
	return fmt.Sprintf("%8s %8s %8s %8s %8s", f(l.P50Ns), f(l.P90Ns), f(l.P99Ns), f(l.P999Ns), f(l.MaxNs))
}

// Fairness summarises per-thread op counts: min, max and their spread.
func Fairness(ops []int64) string {
	lo, hi, sum := ops[0], ops[0], int64(0)
	for _, v := range ops {
		lo, hi, sum = min(lo, v), max(hi, v), sum+v
	}
	mean := float64(sum) / float64(len(ops))
	spread := 0.0
	if mean > 0 {
		spread = float64(hi-lo) / mean * 100
	}
	return fmt.Sprintf("%d threads did %s to %s reads+writes (spread %.0f%%)", len(ops), units.FormatCount(lo), units.FormatCount(hi), spread)
}

// num prints v in at most w columns, with one decimal if it fits,
// then with k or M suffixes: iostat columns stay aligned on any device.
func num(v float64, w int) string {
	for dec := 1; dec >= 0; dec-- {
		if s := strconv.FormatFloat(v, 'f', dec, 64); len(s) <= w {
			return s
		}
	}
	for _, u := range []struct {
		div float64
		suf string
	}{{1e3, "k"}, {1e6, "M"}, {1e9, "G"}} {
		for dec := 1; dec >= 0; dec-- {
			if s := strconv.FormatFloat(v/u.div, 'f', dec, 64) + u.suf; len(s) <= w {
				return s
			}
		}
	}
	return strconv.FormatFloat(v, 'g', 2, 64)
}

func rate(v float64) string {
	if v >= 100 {
		return units.FormatCount(int64(v + 0.5))
	}
	return fmt.Sprintf("%.1f", v)
}

func secs(s float64) string {
	return units.FormatDuration(time.Duration(s * float64(time.Second)))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (d *doc) observation(run *model.Run, o *model.Observation) {
	d.heading(fmt.Sprintf("observation: %s every %s over %s, %d samples", o.Source, secs(o.IntervalSec), secs(o.DurationSec), len(o.Timeline)))
	t := o.Totals
	if len(t.CPUs) > 0 {
		d.line("  %-8s %7s %7s %7s %7s %7s %7s", "cpu", "user%", "sys%", "iowait%", "irq%", "steal%", "idle%")
	}
	for _, c := range t.CPUs {
		name := fmt.Sprintf("cpu%d", c.CPU)
		if c.CPU < 0 {
			name = "all"
		}
		d.line("  %-8s %7.1f %7.1f %7.1f %7.1f %7.1f %7.1f",
			name, c.User+c.Nice, c.System, c.IOWait, c.IRQ+c.SoftIRQ, c.Steal, c.Idle)
	}
	p := t.Process
	d.blank()
	cpuShare := ""
	if o.DurationSec > 0 {
		cpuShare = fmt.Sprintf(" (%.2f CPUs busy on average)", (p.UserSec+p.SystemSec)/o.DurationSec)
	}
	d.field("  workload", fmt.Sprintf("%d process(es), %d thread(s); CPU user %s, system %s%s",
		p.Processes, p.Threads, secs(p.UserSec), secs(p.SystemSec), cpuShare))
	d.field("  switches", fmt.Sprintf("%s voluntary (blocked), %s involuntary (preempted)",
		units.FormatCount(p.VolCtxSw), units.FormatCount(p.InvolCtxSw)))
	d.field("  io", fmt.Sprintf("read %s from storage of %s asked (%s read calls); wrote %s to storage of %s (%s write calls)",
		units.FormatSize(p.ReadBytes), units.FormatSize(p.RChar), units.FormatCount(p.SyscR),
		units.FormatSize(p.WriteBytes), units.FormatSize(p.WChar), units.FormatCount(p.SyscW)))
	if p.IODelaySec > 0 {
		d.field("  io delay", fmt.Sprintf("%s blocked on block IO (delay accounting)", secs(p.IODelaySec)))
	}
	d.threads(t.Threads)
	d.disks("disks (iostat -x over the window)", t.Disks)
	d.timeline(o)
	if o.DurationSec > 0 {
		d.blank()
		txt := fmt.Sprintf("/proc sampling used %s of CPU (%.2f%% of one CPU)", secs(o.ObserverCPUSec), o.ObserverCPUSec/o.DurationSec*100)
		if ta := run.TimeAccounting; ta != nil && ta.Source == "ebpf" {
			txt += fmt.Sprintf("; the eBPF programs ran %s times for an estimated %s of CPU in all (%.2f%% of one CPU: each program's runs times its cost calibrated on this host)",
				units.FormatCount(ta.ProbeRuns), secs(ta.ProbeCPUSec), ta.ProbeCPUSec/o.DurationSec*100)
			if ta.ProbeNote != "" {
				txt += "; " + ta.ProbeNote
			}
		}
		d.field("overhead", txt)
	}
	if len(o.Missing) > 0 {
		d.heading("not visible to this observer")
		for _, m := range o.Missing {
			d.wrapped("  - ", "    ", m)
		}
	}
}

func (d *doc) threads(ts []model.ThreadUse) {
	if len(ts) == 0 {
		return
	}
	sorted := append([]model.ThreadUse(nil), ts...)
	sort.SliceStable(sorted, func(i, j int) bool {
		return sorted[i].UserSec+sorted[i].SystemSec > sorted[j].UserSec+sorted[j].SystemSec
	})
	title := "threads, by CPU time"
	if len(sorted) > maxThreads {
		title = fmt.Sprintf("threads, top %d of %d by CPU time", maxThreads, len(sorted))
		sorted = sorted[:maxThreads]
	}
	d.heading(title)
	d.line("  %8s %8s %-16s %9s %9s %10s %10s", "pid", "tid", "comm", "user", "sys", "vol cs", "invol cs")
	for _, th := range sorted {
		comm := fit(th.Comm, 16)
		if th.Exited {
			comm = fit(th.Comm, 14) + " †"
		}
		d.line("  %8d %8d %-16s %9s %9s %10s %10s", th.PID, th.TID, comm, secs(th.UserSec), secs(th.SystemSec),
			units.FormatCount(th.VolCtxSw), units.FormatCount(th.InvolCtxSw))
	}
	for _, th := range ts {
		if th.Exited {
			d.line("  † exited during the window")
			break
		}
	}
}

func (d *doc) disks(title string, ds []model.DiskUse) {
	if len(ds) == 0 {
		return
	}
	d.heading(title)
	d.line("  %-6s %6s %6s %6s %6s %5s %5s %6s %5s %5s %5s %5s", "device", "r/s", "w/s", "rMB/s", "wMB/s", "rrqm", "wrqm", "rq-KiB", "qu-sz", "r_awt", "w_awt", "util%")
	for _, x := range ds {
		d.line("  %-6s %6s %6s %6s %6s %5s %5s %6s %5s %5s %5s %5s", fit(x.Device, 6),
			num(x.ReadsPerSec, 6), num(x.WritesPerSec, 6), num(x.ReadMBps, 6), num(x.WriteMBps, 6),
			num(x.RMergedPerSec, 5), num(x.WMergedPerSec, 5), num(x.AvgRqKiB, 6), num(x.AvgQueue, 5),
			num(x.RAwaitMs, 5), num(x.WAwaitMs, 5), num(x.UtilPct, 5))
	}
	d.line("  rrqm, wrqm: merged requests/s; rq-KiB: average request size; awaits in ms")
}

// timeline prints the samples (at most maxTimeline rows, evenly picked):
// machine CPU use, the workload's CPU, and the busiest disk.
func (d *doc) timeline(o *model.Observation) {
	if len(o.Timeline) < 2 {
		return
	}
	step := (len(o.Timeline) + maxTimeline - 1) / maxTimeline
	title := "timeline"
	if step > 1 {
		title = fmt.Sprintf("timeline (every %d. of %d samples; all are in the JSON record)", step, len(o.Timeline))
	}
	d.heading(title)
	d.line("  %7s %6s %7s %8s %8s %-7s %8s %8s %6s", "t", "busy%", "iowait%", "wl CPUs", "wl ctxsw", "disk", "rMB/s", "wMB/s", "%util")
	tDecimals := 1
	if o.IntervalSec < 0.1 {
		tDecimals = 3
	} else if o.IntervalSec < 1 {
		tDecimals = 2
	}
	for i := step - 1; i < len(o.Timeline); i += step {
		s := o.Timeline[i]
		busy, iow := 0.0, 0.0
		for _, c := range s.CPUs {
			if c.CPU < 0 {
				busy, iow = 100-c.Idle-c.IOWait, c.IOWait
			}
		}
		interval := o.IntervalSec
		if i > 0 {
			interval = s.TSec - o.Timeline[i-1].TSec
		} else if s.TSec > 0 {
			interval = s.TSec
		}
		wl := 0.0
		if interval > 0 {
			wl = (s.Process.UserSec + s.Process.SystemSec) / interval
		}
		disk, rmb, wmb, util := "-", 0.0, 0.0, 0.0
		for _, x := range s.Disks {
			if x.UtilPct >= util {
				disk, rmb, wmb, util = x.Device, x.ReadMBps, x.WriteMBps, x.UtilPct
			}
		}
		d.line("  %6.*fs %6.1f %7.1f %8.2f %8s %-7s %8.1f %8.1f %6.1f", tDecimals, s.TSec, busy, iow, wl,
			units.FormatCount(s.Process.VolCtxSw+s.Process.InvolCtxSw), fit(disk, 7), rmb, wmb, util)
	}
	d.line("  busy%% and iowait%% are the whole machine's; wl CPUs is the workload's CPU use")
}

// StorageDesc describes the file system and devices behind the workload's
// directory: "DIR: ext4 on vda, scheduler mq-deadline, non-rotational,
// 78 GiB free of 252 GiB".
func StorageDesc(s *model.Storage) string {
	dev := s.Device
	if len(s.Disks) > 0 && !(len(s.Disks) == 1 && s.Disks[0] == s.Device) {
		dev += " (disks " + strings.Join(s.Disks, ",") + ")"
	}
	desc := fmt.Sprintf("%s: %s on %s", s.Dir, s.FSType, orDash(dev))
	if s.Scheduler != "" {
		desc += ", scheduler " + s.Scheduler
	}
	if s.Rotational != nil {
		if *s.Rotational {
			desc += ", rotational"
		} else {
			desc += ", non-rotational"
		}
	}
	if s.FreeBytes > 0 {
		desc += fmt.Sprintf(", %s free of %s", units.FormatSize(s.FreeBytes), units.FormatSize(s.SizeBytes))
	}
	return desc
}
