package report

import (
	"fmt"
	"strings"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/report/rows"
	"github.com/perfsleuth/perfsleuth/internal/units"
)

// barWidth is the width of a full (100%) bar in "where the time goes".
const barWidth = 30

// accounting renders the time accounting as bars per category, the
// busiest threads, the verdict and the findings.
func (d *doc) accounting(run *model.Run) {
	if ta := run.TimeAccounting; ta != nil {
		a := rows.AccountingOf(ta)
		d.heading(fmt.Sprintf("where the time goes (%s, %d busy thread(s), %d idle)", ta.Source, a.Busy, a.Idle))
		for _, c := range a.Cats {
			n := int(c.Share*barWidth + 0.5)
			extra := ""
			if c.Name == model.CatCPU && c.Sec > 0 && a.CPUSplit {
				extra = fmt.Sprintf(" user %.0f%% sys %.0f%%", a.CPUUser*100, (1-a.CPUUser)*100)
			}
			d.line("  %-13s %-*s %5.1f%% %8s%s", c.Name, barWidth, strings.Repeat("#", n), c.Share*100, rows.Secs(c.Sec), extra)
		}
		d.roles(ta)
		d.threadShares(ta)
		if ta.Source == "ebpf" {
			d.line("  threads: %d created, %d exited, at most %d alive at once", ta.ThreadsCreated, ta.ThreadsExited, ta.PeakThreads)
		}
		if k := rows.KernelAgreement(ta); k != "" {
			d.wrapped("  ", "    ", k)
		}
		if cp := rows.CriticalPath(ta); cp != "" {
			d.wrapped("  ", "    ", cp)
		}
		d.waits(ta)
		d.locks(ta)
		d.activities(ta)
		d.syncCalls(ta)
		d.syncedFiles(ta)
		d.syscalls(ta)
		d.offCPU(ta)
		d.onCPU(ta)
		for _, u := range ta.Unknown {
			d.wrapped("  - ", "    ", u)
		}
		if a.Dropped != "" {
			d.wrapped("  "+d.paint(ansiRed, "!")+" ", "    ", a.Dropped)
		}
		if a.Unseen != "" {
			d.wrapped("  - ", "    ", a.Unseen)
		}
	}
	if v := run.Verdict; v != nil {
		d.blank()
		d.field("verdict", v.Summary)
	}
	if len(run.Findings) > 0 {
		d.heading("findings")
		for _, f := range run.Findings {
			mark := d.paint(ansiYellow, "!")
			if f.Severity == "critical" {
				mark = d.paint(ansiRed, "!")
			}
			d.wrapped("  "+mark+" ", "    ", fmt.Sprintf("%s (%s): %s", f.ID, f.Severity, f.Summary))
			for _, e := range f.Evidence {
				d.wrapped("      ", "      ", e)
			}
		}
	}
}

// roles says each program's share of the CPU time when the workload ran
// several (a server and its client), and sums the threads that play one
// role (a server's backends, a pool's workers) when some role has several.
func (d *doc) roles(ta *model.TimeAccounting) {
	roles, programs := rows.Roles(ta)
	if programs != nil {
		var parts []string
		for _, p := range programs {
			n := fmt.Sprintf("%d processes", p.Processes)
			if p.Processes == 1 {
				n = "1 process"
			}
			parts = append(parts, fmt.Sprintf("%s (%s) %.0f%%", p.Name, n, p.CPUShare*100))
		}
		d.wrapped("  ", "    ", "CPU time by program: "+strings.Join(parts, ", "))
	}
	if roles == nil {
		return
	}
	d.line("  %-26s %7s %8s  %s", "role", "threads", "wall", "largest shares")
	for _, r := range roles[:min(len(roles), maxThreads)] {
		var txt []string
		for _, c := range r.Largest[:min(maxShares, len(r.Largest))] {
			txt = append(txt, fmt.Sprintf("%s %.0f%%", c.Name, c.Share*100))
		}
		d.line("  %-26s %7d %8s  %s", fit(r.Name, 26), r.Threads, rows.Secs(r.WallSec), fit(strings.Join(txt, ", "), Width-47))
	}
	if len(roles) > maxThreads {
		d.line("  ... and %d more roles", len(roles)-maxThreads)
	}
}

// maxShares is how many of a thread's categories threadShares names.
const maxShares = 3

// threadShares lists the busiest threads with their largest categories.
func (d *doc) threadShares(ta *model.TimeAccounting) {
	busy := rows.BusyThreads(ta, maxThreads)
	if len(busy.Rows) == 0 {
		return
	}
	d.line("  %8s %-14s %8s  %s", "tid", "comm", "wall", "largest shares")
	for _, t := range busy.Rows {
		var txt []string
		for _, c := range t.Largest[:min(maxShares, len(t.Largest))] {
			if t.WallSec > 0 {
				txt = append(txt, fmt.Sprintf("%s %.0f%%", c.Name, c.Share*100))
			}
		}
		tid := fmt.Sprint(t.TID)
		if t.Folded > 0 {
			tid = "-"
		}
		// Its part of the critical path first: the column is cut to fit.
		switch {
		case t.Poller:
			txt = append([]string{"left out:"}, txt...)
		case t.OnPath:
			txt = append([]string{fmt.Sprintf("path %.0f%%:", t.PathShare*100)}, txt...)
		}
		d.line("  %8s %-14s %8s  %s", tid, fit(t.Name, 14), rows.Secs(t.WallSec), fit(strings.Replace(strings.Join(txt, ", "), ":,", ":", 1), 44))
	}
}

// waits lists what ended the busy threads' waits (the wait-for graph).
func (d *doc) waits(ta *model.TimeAccounting) {
	l := rows.Waits(ta, maxThreads)
	if len(l.Rows) == 0 {
		if ta.WaitNote != "" {
			d.wrapped("  - ", "    ", ta.WaitNote)
		}
		return
	}
	d.line("  %8s %-14s %8s  %s", "tid", "comm", "waited", "ended by")
	for _, r := range l.Rows {
		var by []string
		for _, b := range r.By[:min(3, len(r.By))] {
			by = append(by, fmt.Sprintf("%s %.0f%%", b.Name, b.Share*100))
		}
		d.line("  %8d %-14s %8s  %s", r.TID, fit(r.Name, 14), rows.Secs(r.WaitedSec), fit(strings.Join(by, ", "), 44))
	}
	if ta.WaitNote != "" {
		d.wrapped("  - ", "    ", ta.WaitNote)
	}
}

// locks names the locks the threads waited on, most time first.
func (d *doc) locks(ta *model.TimeAccounting) {
	l := rows.Locks(ta, 5)
	if len(l.Rows) == 0 {
		return
	}
	d.line("  lock waits, by lock:")
	for _, r := range l.Rows {
		txt := fmt.Sprintf("%3.0f%% %8s  %s, in %s calls (%d waits)", r.Share*100, rows.Secs(r.Seconds), r.Lock, r.Activity, r.Count)
		if r.Waiters != "" {
			txt += "; waiters in " + r.Waiters
		}
		if r.Holder != "" {
			txt += "; the holder let go in " + r.Holder
		}
		d.wrapped("  ", "              ", txt)
	}
	if m := l.More(); m > 0 {
		d.line("  (%d more)", m)
	}
	if ta.LocksNote != "" {
		d.wrapped("  - ", "    ", ta.LocksNote)
	}
}

// activities is the busy threads' time as what they were doing by how:
// each cell a share of their time, and each activity's share of the
// critical path.
func (d *doc) activities(ta *model.TimeAccounting) {
	m := rows.MatrixOf(ta)
	if len(m.Rows) == 0 || m.TotalSec <= 0 {
		return
	}
	// The storage states under one label, so that all nine fit in Width.
	head := func(st string) string {
		if h, ok := strings.CutPrefix(st, "storage-"); ok {
			return h
		}
		return st
	}
	width := func(st string) int { return max(len(head(st)), 4) }
	line := fmt.Sprintf("  %-9s %7s", "doing", "time")
	if m.PathSec > 0 {
		line += fmt.Sprintf(" %5s", "path")
	}
	from, to := -1, -1 // the storage columns' span in line
	for _, st := range m.States {
		line += " "
		if strings.HasPrefix(st, "storage-") {
			if from < 0 {
				from = len(line)
			}
			to = len(line) + width(st)
		}
		line += fmt.Sprintf("%*s", width(st), head(st))
	}
	if from >= 0 {
		// "storage" over its columns, centred in dashes when it fits.
		label := "storage"
		if w := to - from; w >= len(label)+4 {
			left := (w - len(label) - 2) / 2
			label = strings.Repeat("-", left) + " " + label + " " + strings.Repeat("-", w-len(label)-2-left)
		}
		d.line("%s", strings.Repeat(" ", from)+label)
	}
	d.line("%s", line)
	for _, r := range m.Rows[:min(maxActivities, len(m.Rows))] {
		line := fmt.Sprintf("  %-9s %7s", fit(r.Activity, 9), rows.Secs(r.TotalSec))
		if m.PathSec > 0 {
			line += fmt.Sprintf(" %5s", sharePct(r.CriticalSec/m.PathSec))
		}
		for _, st := range m.States {
			cell := ""
			if s := r.Seconds[st]; s > 0 {
				cell = sharePct(s / m.TotalSec)
			}
			line += fmt.Sprintf(" %*s", width(st), cell)
		}
		d.line("%s", strings.TrimRight(line, " "))
	}
	if n := len(m.Rows) - maxActivities; n > 0 {
		d.line("  ... and %d more activities", n)
	}
	note := "doing: user code, a page fault, or the syscall class a thread was in; time: the busy threads' seconds in it, each state a share of their time"
	if m.PathSec > 0 {
		note += "; path: its share of the critical path"
	}
	d.wrapped("  ", "    ", note+"; "+m.Legend())
}

// maxActivities bounds the activity rows of the terminal view.
const maxActivities = 8

// sharePct prints a share as a whole percentage, "<1%" for a sliver.
func sharePct(x float64) string {
	if x > 0 && x < 0.005 {
		return "<1%"
	}
	return fmt.Sprintf("%.0f%%", x*100)
}

// syncCalls lists the sync calls by kind: count, total and mean time, and
// the log2 bucket that holds the median.
func (d *doc) syncCalls(ta *model.TimeAccounting) {
	if ta.SyncNote != "" {
		d.wrapped("  - ", "    ", "sync calls not timed: "+ta.SyncNote)
	}
	syncs := rows.Syncs(ta)
	if len(syncs) == 0 {
		return
	}
	d.line("  %-16s %9s %9s %9s  %s", "sync call", "calls", "total", "mean", "median in")
	for _, s := range syncs {
		d.line("  %-16s %9s %9s %9s  %s", s.Kind, units.FormatCount(s.Count), rows.Secs(s.TotalSec), units.FormatNs(s.MeanSec*1e9), s.MedianIn)
		if s.Split != "" {
			d.wrapped("    in it: ", "      ", s.Split)
		}
	}
}

// maxFiles, maxSyscalls, maxStacksPerCategory and maxFrames bound the
// detail tables of the terminal view (the run record has all of it).
const (
	maxFiles             = 5
	maxSyscalls          = 12
	maxStacksPerCategory = 2
	maxFrames            = 6
)

// syncedFiles lists the files synced, most time first.
func (d *doc) syncedFiles(ta *model.TimeAccounting) {
	files := rows.SyncedFiles(ta, maxFiles)
	if files.Total == 0 {
		return
	}
	d.line("  %-40s %7s %9s %9s %9s", "file synced", "syncs", "total", "mean", "max")
	for _, f := range files.Rows {
		d.line("  %-40s %7s %9s %9s %9s", fitLeft(f.Path, 40), units.FormatCount(f.Count), rows.Secs(f.TotalSec),
			units.FormatNs(f.MeanSec*1e9), units.FormatNs(f.MaxSec*1e9))
	}
	if n := files.More(); n > 0 {
		what := "files"
		for _, f := range ta.SyncedFiles {
			if f.Folded {
				what = "entries (files, and directories of files counted together)"
				break
			}
		}
		d.line("  ... and %d more %s", n, what)
	}
}

// fitLeft shortens s to n columns by cutting its start (paths end in what
// matters), made printable as fit does.
func fitLeft(s string, n int) string {
	r := []rune(printable(s))
	if len(r) <= n {
		return string(r)
	}
	return "…" + string(r[len(r)-n+1:])
}

// syscalls lists the syscalls of all threads together, most time first, as
// strace -c -w does (the record has them per thread).
func (d *doc) syscalls(ta *model.TimeAccounting) {
	list, counted := rows.Syscalls(ta, maxSyscalls)
	if !counted {
		return
	}
	d.line("  %-18s %6s %9s %9s %9s %9s %7s", "syscall", "time%", "total", "calls", "mean", "max", "errors")
	for _, s := range list.Rows {
		d.line("  %-18s %6.1f %9s %9s %9s %9s %7s", fit(s.Name, 18), s.Pct, rows.Secs(s.TotalSec), units.FormatCount(s.Count),
			units.FormatNs(s.MeanSec*1e9), units.FormatNs(s.MaxSec*1e9), units.FormatCount(s.Errors))
	}
	if n := list.More(); n > 0 {
		d.line("  ... and %d more syscalls", n)
	}
	if list.Total == 0 {
		d.line("  no syscalls counted")
	}
}

// offCPU shows, per blocked category, the stacks that slept longest.
func (d *doc) offCPU(ta *model.TimeAccounting) {
	o := rows.OffCPUOf(ta)
	if !o.Taken {
		return
	}
	d.line("  off-CPU stacks, longest per category (innermost frame first):")
	for _, s := range o.Longest(maxStacksPerCategory) {
		d.line("  %s %s in %s sleeps (pid %d)", s.Category, rows.Secs(s.Seconds), units.FormatCount(s.Count), s.PID)
		d.frames(s.Kernel)
		d.note(s.KernelNote)
		d.line("      --")
		d.frames(s.User)
		d.note(s.UserNote)
	}
	if len(o.Stacks) == 0 {
		d.line("  no sleeps of busy threads seen")
	}
	if o.IdleSec > 0 {
		d.line("  (idle threads' stacks, %s of sleep, left out)", rows.Secs(o.IdleSec))
	}
}

// frames prints a stack's innermost frames, at most maxFrames.
func (d *doc) frames(fs []string) {
	for i, f := range fs {
		if i == maxFrames {
			d.line("      ... %d more", len(fs)-maxFrames)
			break
		}
		d.line("      %s", fit(f, 72))
	}
}

// note prints what a stack walk said about a stack, if anything.
func (d *doc) note(n string) {
	if n != "" {
		d.wrapped("      (", "       ", n+")")
	}
}

// maxHotFunctions is how many functions the on-CPU view lists.
const maxHotFunctions = 10

// onCPU shows where the workload's threads ran: the functions the samples
// fell in (the innermost frame: kernel when the sample hit the kernel,
// else user), as perf report --no-children does, and the hottest stack.
func (d *doc) onCPU(ta *model.TimeAccounting) {
	o := rows.OnCPUOf(ta, maxHotFunctions)
	if !o.Taken {
		if o.Note != "" {
			d.wrapped("  on-CPU: ", "          ", o.Note)
		}
		return
	}
	if o.Kept < o.Samples {
		d.wrapped("  ", "    ", fmt.Sprintf("on-CPU samples %s: %s (%s of CPU), %s of them in the %d stacks kept; functions those fell in:",
			o.Rate, units.FormatCount(o.Samples), rows.Secs(o.CPUSec), units.FormatCount(o.Kept), len(o.Stacks)))
	} else {
		d.wrapped("  ", "    ", fmt.Sprintf("on-CPU samples %s: %s (%s of CPU); functions the samples fell in:", o.Rate, units.FormatCount(o.Samples), rows.Secs(o.CPUSec)))
	}
	for _, f := range o.Funcs.Rows {
		d.line("    %5.1f%%  %s", f.Pct, fit(f.Name, 68))
	}
	if n := o.Funcs.More(); n > 0 {
		d.line("    ... %d more", n)
	}
	if len(o.Stacks) == 0 {
		d.line("    %s", rows.OrDash(o.Note))
		return
	}
	s := o.Stacks[0]
	d.line("  hottest stack: %s samples of tid %d (%s), innermost frame first:", units.FormatCount(s.Samples), s.TID, s.Comm)
	d.frames(s.Kernel)
	if len(s.Kernel) > 0 && len(s.User) > 0 {
		d.line("      --")
	}
	d.frames(s.User)
	for _, n := range []string{s.KernelNote, s.UserNote} {
		if !strings.HasPrefix(n, "no stack") {
			d.note(n)
		}
	}
}
