package htmlreport

import (
	"fmt"
	"html/template"
	"slices"
	"strings"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/report/rows"
	"github.com/perfsleuth/perfsleuth/internal/units"
)

// The page shows more than the terminal (the record has everything), but a
// table of thousands of rows helps nobody: these bound the rows, and say
// how many more there are.
const (
	maxThreadBars   = 30
	maxSyncedFiles  = 50
	maxSyscallRows  = 40
	maxSyscallHists = 6
)

// durSec prints seconds with three significant digits in a fitting unit.
func durSec(v float64) string { return units.FormatNs(v * 1e9) }

// totalChart is the busy threads' time per category as one 100% bar.
func totalChart(ta *model.TimeAccounting) (template.HTML, string) {
	a := rows.AccountingOf(ta)
	total := a.TotalSec
	if total <= 0 {
		return "", ""
	}
	var segs []Segment
	var legend []LegendItem
	for _, c := range a.Cats {
		if c.Sec > 0 {
			segs = append(segs, Segment{Label: c.Name, Value: c.Sec, Color: CategoryColor(c.Name)})
			legend = append(legend, LegendItem{Label: fmt.Sprintf("%s %s", c.Name, durSec(c.Sec)), Color: CategoryColor(c.Name)})
		}
	}
	note := fmt.Sprintf("(%s of busy-thread time over a %s window, %s)", durSec(total), durSec(ta.WindowSec), ta.Source)
	if a.CPUSplit {
		note += fmt.Sprintf("; cpu is %.0f%% user, %.0f%% system", a.CPUUser*100, (1-a.CPUUser)*100)
	}
	bars := []BarRow{{Label: "busy threads", Segments: segs, Note: durSec(total)}}
	title := "busy threads' time per category"
	if sum := rows.CriticalPathSec(ta); sum > 0 {
		var cp []Segment
		for _, c := range model.Categories {
			if v := ta.CriticalPath[c]; v > 0 {
				cp = append(cp, Segment{Label: c, Value: v, Color: CategoryColor(c)})
			}
		}
		bars = append(bars, BarRow{Label: "critical path", Segments: cp, Note: durSec(sum)})
		title = "busy threads' time per category, and on the critical path (waits for other threads charged to what they did)"
	}
	return StackedBars("time-total", bars,
		BarOptions{Title: title, Max: total, Percent: true, Legend: legend, Format: durSec}), note
}

// categoryLegend lists every category, in display order.
func categoryLegend() []LegendItem {
	var l []LegendItem
	for _, c := range model.Categories {
		l = append(l, LegendItem{Label: c, Color: CategoryColor(c)})
	}
	return l
}

// accountingSection shows where each thread's time went, the sync calls and
// the syscalls.
func accountingSection(run *model.Run) *section {
	s := &section{ID: "time", Title: "Where the time goes"}
	ta := run.TimeAccounting
	if ta == nil {
		s.Why = "no time accounting: this run was only measured (bench); observe or diagnose it to see where its time goes"
		if !measuredOnly(run) {
			s.Why = "no time accounting in this record (the /proc observation below is all it has)"
		}
		return s
	}
	a := rows.AccountingOf(ta)
	s.p(fmt.Sprintf("source %s, window %s: %d busy thread(s), %d idle (waited for work the whole window; left out of the totals and the verdict)",
		ta.Source, durSec(ta.WindowSec), a.Busy, a.Idle))
	threadBars(s, rows.BusyThreads(ta, maxThreadBars))
	if ta.Source == "ebpf" {
		s.p(fmt.Sprintf("threads: %d created, %d exited, at most %d alive at once; %d process(es) created",
			ta.ThreadsCreated, ta.ThreadsExited, ta.PeakThreads, ta.ProcessesCreated))
	}
	if k := rows.KernelAgreement(ta); k != "" {
		s.p(k)
	}
	if cp := rows.CriticalPath(ta); cp != "" {
		s.p(cp)
	}
	waitsTable(s, ta)
	locksTable(s, ta)
	activitiesTable(s, ta)
	s.listIf(ta.Unknown)
	if a.Dropped != "" {
		s.warn(a.Dropped)
	}
	if a.Unseen != "" {
		s.p(a.Unseen)
	}
	syncSection(s, ta)
	syscallSection(s, ta)
	return s
}

func threadBars(s *section, busy rows.List[rows.ThreadRow]) {
	if busy.Total == 0 {
		s.why("no busy thread: every thread waited for work the whole window")
		return
	}
	sub := "each busy thread's wall time, split by category"
	if busy.More() > 0 {
		sub = fmt.Sprintf("the %d longest of %d busy threads (all are in the JSON record)", len(busy.Rows), busy.Total)
	}
	var bars []BarRow
	maxWall := 0.0
	exited, path, poller := false, false, false
	for _, t := range busy.Rows {
		label := fmt.Sprintf("%s %d", t.Name, t.TID)
		tip := fmt.Sprintf("pid %d tid %d %s", t.PID, t.TID, t.Name)
		if t.Folded > 0 {
			label = t.Name
			tip = fmt.Sprintf("%d exited threads of pid %d, summed", t.Folded, t.PID)
		}
		if t.Exited {
			label += " †"
			tip += " (exited)"
			exited = true
		}
		if t.Role != "" {
			tip += ", " + t.Role
		}
		note := durSec(t.WallSec)
		switch {
		case t.Poller:
			label += " ‡"
			note += " · left out"
			tip += "; left out of the critical path: it slept on timers or waited the whole window while others worked"
			poller = true
		case t.OnPath:
			note += fmt.Sprintf(" · path %.0f%%", t.PathShare*100)
			tip += fmt.Sprintf("; carried %.0f%% of the critical path (its own time, and others' waits for it)", t.PathShare*100)
			path = true
		}
		var segs []Segment
		for _, c := range model.Categories {
			segs = append(segs, Segment{Label: c, Value: t.Seconds[c], Color: CategoryColor(c)})
		}
		bars = append(bars, BarRow{Label: label, Tip: tip, Segments: segs, Note: note})
		maxWall = max(maxWall, t.WallSec)
	}
	if exited {
		sub += "; † exited during the window"
	}
	if path {
		sub += "; path: the share of the critical path the thread carried (its own time, and the waits of others for it)"
	}
	if poller {
		sub += "; ‡ left out of the critical path and the verdict: it slept on timers or waited the whole window while others worked"
	}
	s.figs(figure{Caption: "Time per thread", Sub: sub, Wide: true,
		Chart: StackedBars("time-threads", bars, BarOptions{Title: "time per thread and category", Max: maxWall,
			Format: durSec, Legend: categoryLegend()})})
}

func syncSection(s *section, ta *model.TimeAccounting) {
	s.h3("Sync calls")
	if ta.SyncNote != "" {
		s.why("sync calls not timed: " + ta.SyncNote)
	}
	syncs := rows.Syncs(ta)
	if len(syncs) == 0 {
		if ta.SyncNote == "" {
			s.why("no sync call in the window")
		}
		return
	}
	split := slices.ContainsFunc(syncs, func(s rows.SyncRow) bool { return s.Split != "" })
	cols := []string{"sync call", "calls", "total", "mean", "~median in"}
	if split {
		cols = append(cols, "~in the calls")
	}
	tb := newTable(cols...)
	var figs []figure
	for _, sc := range syncs {
		cells := []cell{{Text: sc.Kind}, {Text: units.FormatCount(sc.Count)}, {Text: durSec(sc.TotalSec)},
			{Text: durSec(sc.MeanSec)}, {Text: sc.MedianIn}}
		if split {
			cells = append(cells, cell{Text: sc.Split})
		}
		tb.add(cells...)
		figs = append(figs, figure{Caption: sc.Kind + " latency", Sub: units.FormatCount(sc.Count) + " calls",
			Chart: Histogram(chartName("sync", sc.Kind), nsBuckets(sc.Buckets), HistogramOptions{
				Title: sc.Kind + " latency", Unit: UnitNs, Color: CategoryColor(model.CatStorageSync)})})
	}
	s.table(tb.t)
	s.figs(figs...)
	files := rows.SyncedFiles(ta, maxSyncedFiles)
	if files.Total > 0 {
		tb := newTable("~file synced", "pid", "syncs", "data only", "total", "mean", "max")
		for _, f := range files.Rows {
			tb.add(cell{Text: f.Path, Class: "mono path", Path: true, Tip: fmt.Sprintf("dev %s inode %d", f.Dev, f.Ino)},
				cell{Text: fmt.Sprint(f.PID)}, cell{Text: units.FormatCount(f.Count)}, cell{Text: units.FormatCount(f.DataSync)},
				cell{Text: durSec(f.TotalSec)}, cell{Text: durSec(f.MeanSec)}, cell{Text: durSec(f.MaxSec)})
		}
		if n := files.More(); n > 0 {
			tb.t.Foot = fmt.Sprintf("and %d more files (all are in the JSON record)", n)
		}
		s.table(tb.t)
	}
}

func syscallSection(s *section, ta *model.TimeAccounting) {
	s.h3("Syscalls")
	list, counted := rows.Syscalls(ta, maxSyscallRows)
	if !counted {
		s.why("syscalls not counted: observe with --syscalls to count and time every syscall per thread")
		return
	}
	if list.Total == 0 {
		s.why("no syscalls counted")
		return
	}
	tb := newTable("syscall", "time %", "total", "calls", "mean", "max", "errors")
	var figs []figure
	for i, a := range list.Rows {
		tb.add(cell{Text: a.Name, Class: "mono"}, cell{Text: fmt.Sprintf("%.1f", a.Pct)}, cell{Text: durSec(a.TotalSec)},
			cell{Text: units.FormatCount(a.Count)}, cell{Text: durSec(a.MeanSec)},
			cell{Text: durSec(a.MaxSec)}, cell{Text: units.FormatCount(a.Errors)})
		if i < maxSyscallHists {
			figs = append(figs, figure{Caption: a.Name + " latency",
				Sub: fmt.Sprintf("%s calls, %s in all", units.FormatCount(a.Count), durSec(a.TotalSec)),
				Chart: Histogram(chartName("syscall", a.Name), nsBuckets(a.Buckets), HistogramOptions{
					Title: a.Name + " latency", Unit: UnitNs, Color: "#2a8c82"})})
		}
	}
	if n := list.More(); n > 0 {
		tb.t.Foot = fmt.Sprintf("and %d more syscalls (all are in the JSON record, per thread); ", n)
	}
	tb.t.Foot += "every thread's calls together, most time first; a thread asleep in a call (futex, epoll_wait) counts its sleep"
	s.table(tb.t)
	s.h3(fmt.Sprintf("Latency of the %d syscalls that took the most time", len(figs)))
	s.figs(figs...)
}

// waitsTable is the wait-for graph: what ended each busy thread's waits.
func waitsTable(s *section, ta *model.TimeAccounting) {
	l := rows.Waits(ta, maxThreadBars)
	if len(l.Rows) == 0 {
		if ta.WaitNote != "" {
			s.why(ta.WaitNote)
		}
		return
	}
	s.h3("What ended the waits (the wait-for graph)")
	tb := newTable("tid", "~comm", "waited", "~ended by")
	for _, r := range l.Rows {
		var by []string
		for _, b := range r.By {
			by = append(by, fmt.Sprintf("%s %.0f%%", b.Name, b.Share*100))
		}
		tb.add(cell{Text: fmt.Sprint(r.TID)}, cell{Text: r.Name}, cell{Text: durSec(r.WaitedSec)}, cell{Text: strings.Join(by, ", ")})
	}
	foot := "each blocked interval of a busy thread, by what woke it: a thread of the workload, a kernel thread, a process outside it, the disk, a timer, an interrupt"
	if ta.WaitNote != "" {
		foot += "; " + ta.WaitNote
	}
	tb.t.Foot = foot
	s.table(tb.t)
}

// locksTable names the locks the threads waited on, most time first.
func locksTable(s *section, ta *model.TimeAccounting) {
	l := rows.Locks(ta, maxThreadBars)
	if len(l.Rows) == 0 {
		return
	}
	s.h3("The locks waited on")
	tb := newTable("share", "waited", "~lock", "in", "waits", "~waiters in", "~the holder let go in")
	for _, r := range l.Rows {
		tb.add(cell{Text: pctOf(r.Share, 1)}, cell{Text: durSec(r.Seconds)}, cell{Text: r.Lock}, cell{Text: r.Activity},
			cell{Text: fmt.Sprint(r.Count), Tip: fmt.Sprintf("%d with their stacks walked (at most one walk every 50 ms per thread)", r.Walked)},
			cell{Text: r.Waiters}, cell{Text: r.Holder})
	}
	foot := "each lock wait by what it waited on: the file its read, write or sync call was on (a kernel lock such as its inode's), a futex, or another kernel lock; the stacks of one wait every 50 ms per thread name the lock and where its holder let go"
	if m := l.More(); m > 0 {
		foot += fmt.Sprintf("; %d more locks not shown", m)
	}
	if ta.LocksNote != "" {
		foot += "; " + ta.LocksNote
	}
	tb.t.Foot = foot
	s.table(tb.t)
}

// activitiesTable is the busy threads' time by what they were doing and
// how: on a CPU, waiting for one, blocked, asleep until what woke them.
func activitiesTable(s *section, ta *model.TimeAccounting) {
	m := rows.MatrixOf(ta)
	if len(m.Rows) == 0 || m.TotalSec <= 0 {
		return
	}
	s.h3("Time by activity and state")
	head := []string{"doing", "time"}
	if m.PathSec > 0 {
		head = append(head, "on the critical path")
	}
	head = append(head, m.States...)
	tb := newTable(head...)
	for _, r := range m.Rows {
		cells := []cell{{Text: r.Activity}, {Text: durSec(r.TotalSec), Tip: pctOf(r.TotalSec, m.TotalSec) + " of the busy threads' time"}}
		if m.PathSec > 0 {
			cells = append(cells, cell{Text: pctOf(r.CriticalSec, m.PathSec), Tip: durSec(r.CriticalSec) + " of the critical path"})
		}
		for _, st := range m.States {
			txt, tip := "", ""
			if v := r.Seconds[st]; v > 0 {
				txt, tip = durSec(v), pctOf(v, m.TotalSec)+" of the busy threads' time"
			}
			cells = append(cells, cell{Text: txt, Tip: tip})
		}
		tb.add(cells...)
	}
	foot := "doing: user code, a page fault, or the syscall class a thread was in; each cell the busy threads' time in that activity and state"
	if m.PathSec > 0 {
		foot += "; on the critical path: the activity's share of it (waits for other threads charged to what they did)"
	}
	tb.t.Foot = foot + "; " + m.Legend()
	s.table(tb.t)
}

// pctOf is part's share of whole, as a whole percentage ("<1%" for a sliver).
func pctOf(part, whole float64) string {
	if whole <= 0 {
		return ""
	}
	x := part / whole
	if x > 0 && x < 0.005 {
		return "<1%"
	}
	return fmt.Sprintf("%.0f%%", x*100)
}
