package report

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/report/rows"
	"github.com/perfsleuth/perfsleuth/internal/units"
)

// maxThreads and maxTimeline bound the text view; the JSON record keeps all.
const (
	maxThreads  = 8
	maxTimeline = 12
)

// termUnits are how the terminal prints durations in sentences: "850ms",
// "12.3s".
var termUnits = rows.Units{Dur: rows.Secs}

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

func (d *doc) title(run *model.Run) {
	t := rows.TitleOf(run)
	verb := t.Verb
	switch {
	case t.Side != "":
		verb = fmt.Sprintf("%s (side %s: its run with the median result; %d runs of A and B, interleaved)", t.Verb, t.Side, t.Runs)
	case t.Verb == "diagnose":
		verb = fmt.Sprintf("diagnose (the baseline run with the median result, of %d runs)", t.Runs)
	}
	head := "perfsleuth " + verb + " · " + t.What
	if t.Interrupted {
		head += " · INTERRUPTED"
	}
	d.wrapped("", "  ", head)
}

func (d *doc) host(h model.Host) {
	d.blank()
	d.field("host", rows.HostLine(h))
	if cpus := rows.CPUGroups(h.CPUs); cpus != "" {
		d.field("cpus", cpus)
	}
	if s := h.Storage; s != nil {
		d.field("storage", rows.StorageDesc(s))
		d.field("mount", s.MountPoint+" "+s.MountOptions)
	}
}

func (d *doc) target(t model.Target) {
	set, dur := rows.TargetSettings(t)
	var parts []string
	for _, s := range set {
		parts = append(parts, s.Name+"="+s.Value)
	}
	if dur != nil {
		parts = append(parts, fmt.Sprintf("duration=%gs", *dur))
	}
	d.field("settings", strings.Join(parts, " "))
	if len(t.Notices) > 0 {
		d.heading("what this run does that you might not expect")
		for _, n := range t.Notices {
			d.wrapped("  "+d.paint(ansiYellow, "*")+" ", "    ", n)
		}
	}
}

func (d *doc) result(run *model.Run) {
	r := rows.ResultOf(run)
	switch r.Kind {
	case "":
		if r.None {
			d.heading("result")
			d.line("  no result: the run ended before its measured phase")
		}
	case "fileio":
		d.heading(fmt.Sprintf("result: %s measured (%s)", rows.Secs(r.DurationSec), r.Prepare))
		d.line("  %-10s %11s %9s %8s %8s %8s %8s %8s", "op", "ops/s", "MiB/s", "p50", "p90", "p99", "p99.9", "max")
		for _, op := range r.Ops {
			d.line("  %-10s %11s %9s %s", op.Op, op.Rate, op.MiBPerSec, latencyCols(op.Latency))
			if op.Submit != nil {
				d.line("  %-10s %11s %9s %s", "  submit", "", "", latencyCols(*op.Submit))
				d.line("  %-10s %11s %9s %s", "  complete", "", "", latencyCols(*op.Complete))
			}
		}
		if r.Engine != "" {
			d.line("  engine: %s", r.Engine)
		}
		if r.Depths != "" {
			d.line("  in flight after each submit: %s", r.Depths)
		}
		if r.Verify != "" {
			d.line("  verify: %s", r.Verify)
		}
		for _, op := range r.Ops {
			total := units.FormatCount(op.Count) + " " + op.Op + "s"
			if op.Bytes > 0 {
				total += ", " + units.FormatSize(op.Bytes)
			}
			d.line("  in total: %s", total)
		}
		if r.Fairness != "" {
			d.line("  per thread: %s", r.Fairness)
		}
	case "sqlite":
		d.heading(fmt.Sprintf("result: %s measured", rows.Secs(r.DurationSec)))
		d.line("  %-7s %9s %6s %8s %8s %8s %8s %8s %7s", "phase", "tx/s", "txs", "p50", "p90", "p99", "p99.9", "max", "rows")
		for _, p := range r.Phases {
			d.line("  %-7s %9s %6d %s %7d", p.Phase, p.Rate, p.Transactions, latencyCols(p.Latency), p.RowsAfter)
		}
		d.line("  latency is per transaction; rows is the table's row count after the phase")
	case "command":
		d.heading("result")
		if rp := r.Reported; rp != nil {
			d.line("  %s", printable(rp.Headline))
			if len(rp.Rows) > 0 {
				d.line("  %-24s %-28s %s", "job", "figure", "value")
			}
			for _, row := range rp.Rows {
				job := row.Job
				if job == "" {
					job = "-"
				}
				d.line("  %-24s %-28s %s", fit(printable(job), 24), fit(printable(row.Name), 28), row.Value)
			}
			if rp.More > 0 {
				d.line("  ... %d more figures in --json", rp.More)
			}
		}
		d.line("  %s", r.Command)
	}
}

func latencyCols(l rows.Latency) string {
	c := l.Cols
	return fmt.Sprintf("%8s %8s %8s %8s %8s", c[0], c[1], c[2], c[3], c[4])
}

// num prints v in at most w columns, with one decimal if it fits,
// then with k or M suffixes: iostat columns stay aligned on any device.
// count fits a count in w columns: in full with separators when it fits
// ("12,345"), else as num shortens it.
func count(n int64, w int) string {
	if s := units.FormatCount(n); len(s) <= w {
		return s
	}
	return num(float64(n), w)
}

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

func (d *doc) observation(run *model.Run, o *model.Observation) {
	d.heading(fmt.Sprintf("observation: %s every %s over %s, %d samples", o.Source, rows.Secs(o.IntervalSec), rows.Secs(o.DurationSec), len(o.Timeline)))
	t := o.Totals
	if len(t.CPUs) > 0 {
		d.line("  %-8s %7s %7s %7s %7s %7s %7s", "cpu", "user%", "sys%", "iowait%", "irq%", "steal%", "idle%")
	}
	for _, c := range rows.CPUs(t.CPUs) {
		d.line("  %-8s %7.1f %7.1f %7.1f %7.1f %7.1f %7.1f", c.Name, c.User, c.System, c.IOWait, c.IRQ, c.Steal, c.Idle)
	}
	p := rows.ProcessOf(o, run.Storage, termUnits)
	d.blank()
	d.field("  workload", p.Workload)
	d.field("  switches", p.Switches)
	d.field("  io", p.IO)
	if p.Storage != "" {
		d.field("  storage", p.Storage)
	}
	if p.IODelay != "" {
		d.field("  io delay", p.IODelay)
	}
	d.threads(t.Threads)
	d.disks("disks (iostat -x over the window)", t.Disks)
	d.timeline(o)
	if txt := rows.Overhead(run, o, termUnits, true); txt != "" {
		d.blank()
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
	l, exited := rows.ProcThreads(ts, maxThreads)
	title := "threads, by CPU time"
	if l.More() > 0 {
		title = fmt.Sprintf("threads, top %d of %d by CPU time", len(l.Rows), l.Total)
	}
	d.heading(title)
	d.line("  %8s %8s %-16s %9s %9s %10s %10s", "pid", "tid", "comm", "user", "sys", "vol cs", "invol cs")
	for _, th := range l.Rows {
		name := rows.ThreadName(th.Comm, th.Title)
		comm := fit(printable(name), 16)
		if th.Exited {
			comm = fit(printable(name), 14) + " †"
		}
		d.line("  %8d %8d %-16s %9s %9s %10s %10s", th.PID, th.TID, comm, rows.Secs(th.UserSec), rows.Secs(th.SystemSec),
			units.FormatCount(th.VolCtxSw), units.FormatCount(th.InvolCtxSw))
	}
	if exited {
		d.line("  † exited during the window")
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
	samples := rows.Timeline(o)
	step := (len(samples) + maxTimeline - 1) / maxTimeline
	title := "timeline"
	if step > 1 {
		title = fmt.Sprintf("timeline (every %d. of %d samples; all are in the JSON record)", step, len(samples))
	}
	d.heading(title)
	d.line("  %7s %6s %7s %8s %8s %-7s %8s %8s %6s", "t", "busy%", "iowait%", "wl CPUs", "wl ctxsw", "disk", "rMB/s", "wMB/s", "%util")
	tDecimals := 1
	if o.IntervalSec < 0.1 {
		tDecimals = 3
	} else if o.IntervalSec < 1 {
		tDecimals = 2
	}
	for i := step - 1; i < len(samples); i += step {
		s := samples[i]
		d.line("  %6.*fs %6.1f %7.1f %8.2f %8s %-7s %8.1f %8.1f %6.1f", tDecimals, s.TSec, s.Busy, s.IOWait, s.CPUs,
			units.FormatCount(s.Process.VolCtxSw+s.Process.InvolCtxSw), fit(s.Disk, 7), s.ReadMBps, s.WriteMBps, s.UtilPct)
	}
	d.line("  busy%% and iowait%% are the whole machine's; wl CPUs is the workload's CPU use")
}
