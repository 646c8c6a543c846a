package htmlreport

import (
	"fmt"
	"html/template"
	"sort"

	"github.com/perfsleuth/perfsleuth/internal/model"
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
	total := 0.0
	for _, v := range ta.Total {
		total += v
	}
	if total <= 0 {
		return "", ""
	}
	var segs []Segment
	var legend []LegendItem
	for _, c := range model.Categories {
		if v := ta.Total[c]; v > 0 {
			segs = append(segs, Segment{Label: c, Value: v, Color: CategoryColor(c)})
			legend = append(legend, LegendItem{Label: fmt.Sprintf("%s %s", c, durSec(v)), Color: CategoryColor(c)})
		}
	}
	note := fmt.Sprintf("(%s of busy-thread time over a %s window, %s)", durSec(total), durSec(ta.WindowSec), ta.Source)
	if ta.UserSec+ta.SystemSec > 0 {
		u := ta.UserSec / (ta.UserSec + ta.SystemSec)
		note += fmt.Sprintf("; cpu is %.0f%% user, %.0f%% system", u*100, (1-u)*100)
	}
	return StackedBars("time-total", []BarRow{{Label: "busy threads", Segments: segs, Note: durSec(total)}},
		BarOptions{Title: "busy threads' time per category", Max: total, Percent: true, Legend: legend, Format: durSec}), note
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
	var busy []model.ThreadTime
	idle := 0
	for _, t := range ta.Threads {
		if t.Idle {
			idle++
		} else {
			busy = append(busy, t)
		}
	}
	s.p(fmt.Sprintf("source %s, window %s: %d busy thread(s), %d idle (waited for work the whole window; left out of the totals and the verdict)",
		ta.Source, durSec(ta.WindowSec), len(busy), idle))
	threadBars(s, busy)
	if ta.Source == "ebpf" {
		s.p(fmt.Sprintf("threads: %d created, %d exited, at most %d alive at once; %d process(es) created",
			ta.ThreadsCreated, ta.ThreadsExited, ta.PeakThreads, ta.ProcessesCreated))
	}
	s.listIf(ta.Unknown)
	if ta.Dropped > 0 {
		s.warn(fmt.Sprintf("%d events were dropped: the accounting is incomplete", ta.Dropped))
	}
	syncSection(s, ta)
	syscallSection(s, ta)
	return s
}

func threadBars(s *section, busy []model.ThreadTime) {
	if len(busy) == 0 {
		s.why("no busy thread: every thread waited for work the whole window")
		return
	}
	sort.SliceStable(busy, func(i, j int) bool { return busy[i].WallSec > busy[j].WallSec })
	sub := "each busy thread's wall time, split by category"
	if len(busy) > maxThreadBars {
		sub = fmt.Sprintf("the %d longest of %d busy threads (all are in the JSON record)", maxThreadBars, len(busy))
		busy = busy[:maxThreadBars]
	}
	var rows []BarRow
	maxWall := 0.0
	exited := false
	for _, t := range busy {
		label := fmt.Sprintf("%s %d", t.Comm, t.TID)
		tip := fmt.Sprintf("pid %d tid %d %s", t.PID, t.TID, t.Comm)
		if t.Folded > 0 {
			label = fmt.Sprintf("%d× %s", t.Folded, t.Comm)
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
		var segs []Segment
		for _, c := range model.Categories {
			segs = append(segs, Segment{Label: c, Value: t.Seconds[c], Color: CategoryColor(c)})
		}
		rows = append(rows, BarRow{Label: label, Tip: tip, Segments: segs, Note: durSec(t.WallSec)})
		maxWall = max(maxWall, t.WallSec)
	}
	if exited {
		sub += "; † exited during the window"
	}
	s.figs(figure{Caption: "Time per thread", Sub: sub, Wide: true,
		Chart: StackedBars("time-threads", rows, BarOptions{Title: "time per thread and category", Max: maxWall,
			Format: durSec, Legend: categoryLegend()})})
}

func syncSection(s *section, ta *model.TimeAccounting) {
	s.h3("Sync calls")
	if ta.SyncNote != "" {
		s.why("sync calls not timed: " + ta.SyncNote)
	}
	if len(ta.Syncs) == 0 {
		if ta.SyncNote == "" {
			s.why("no sync call in the window")
		}
		return
	}
	tb := newTable("sync call", "calls", "total", "mean", "~median in")
	var figs []figure
	for _, sc := range ta.Syncs {
		tb.add(cell{Text: sc.Kind}, cell{Text: units.FormatCount(sc.Count)}, cell{Text: durSec(sc.TotalSec)},
			cell{Text: durSec(sc.TotalSec / float64(max(sc.Count, 1)))}, cell{Text: medianBucket(sc.Buckets, sc.Count)})
		figs = append(figs, figure{Caption: sc.Kind + " latency", Sub: units.FormatCount(sc.Count) + " calls",
			Chart: Histogram(chartName("sync", sc.Kind), nsBuckets(sc.Buckets), HistogramOptions{
				Title: sc.Kind + " latency", Unit: UnitNs, Color: CategoryColor(model.CatStorageSync)})})
	}
	s.table(tb.t)
	s.figs(figs...)
	if len(ta.SyncedFiles) > 0 {
		tb := newTable("~file synced", "pid", "syncs", "data only", "total", "mean", "max")
		for i, f := range ta.SyncedFiles {
			if i == maxSyncedFiles {
				tb.t.Foot = fmt.Sprintf("and %d more files (all are in the JSON record)", len(ta.SyncedFiles)-maxSyncedFiles)
				break
			}
			tb.add(cell{Text: f.Path, Class: "mono path", Path: true, Tip: fmt.Sprintf("dev %s inode %d", f.Dev, f.Ino)},
				cell{Text: fmt.Sprint(f.PID)}, cell{Text: units.FormatCount(f.Count)}, cell{Text: units.FormatCount(f.DataSync)},
				cell{Text: durSec(f.TotalSec)}, cell{Text: durSec(f.TotalSec / float64(max(f.Count, 1)))}, cell{Text: durSec(f.MaxSec)})
		}
		s.table(tb.t)
	}
}

// medianBucket names the log2 bucket that holds the median call.
func medianBucket(bs []model.Bucket, count int64) string {
	var seen int64
	for _, b := range bs {
		seen += b.Count
		if seen*2 >= count {
			return fmt.Sprintf("[%s, %s)", ns(float64(b.LowNs)), ns(float64(b.HighNs+1)))
		}
	}
	return ""
}

// syscallAgg is one syscall summed over the threads, as strace -c -w shows.
type syscallAgg struct {
	name          string
	count, errors int64
	total, maxSec float64
	buckets       map[int64]*model.Bucket
}

func syscallSection(s *section, ta *model.TimeAccounting) {
	s.h3("Syscalls")
	if ta.Syscalls == nil {
		s.why("syscalls not counted: observe with --syscalls to count and time every syscall per thread")
		return
	}
	by := map[string]*syscallAgg{}
	var all float64
	for _, sc := range ta.Syscalls {
		a := by[sc.Name]
		if a == nil {
			a = &syscallAgg{name: sc.Name, buckets: map[int64]*model.Bucket{}}
			by[sc.Name] = a
		}
		a.count += sc.Count
		a.errors += sc.Errors
		a.total += sc.TotalSec
		a.maxSec = max(a.maxSec, sc.MaxSec)
		all += sc.TotalSec
		for _, b := range sc.Buckets {
			if m := a.buckets[b.LowNs]; m != nil {
				m.Count += b.Count
			} else {
				c := b
				a.buckets[b.LowNs] = &c
			}
		}
	}
	list := make([]*syscallAgg, 0, len(by))
	for _, a := range by {
		list = append(list, a)
	}
	sort.Slice(list, func(i, j int) bool {
		if list[i].total != list[j].total {
			return list[i].total > list[j].total
		}
		return list[i].name < list[j].name
	})
	if len(list) == 0 {
		s.why("no syscalls counted")
		return
	}
	tb := newTable("syscall", "time %", "total", "calls", "mean", "max", "errors")
	var figs []figure
	for i, a := range list {
		if i == maxSyscallRows {
			tb.t.Foot = fmt.Sprintf("and %d more syscalls (all are in the JSON record, per thread)", len(list)-maxSyscallRows)
			break
		}
		share := 0.0
		if all > 0 {
			share = a.total / all * 100
		}
		tb.add(cell{Text: a.name, Class: "mono"}, cell{Text: fmt.Sprintf("%.1f", share)}, cell{Text: durSec(a.total)},
			cell{Text: units.FormatCount(a.count)}, cell{Text: durSec(a.total / float64(max(a.count, 1)))},
			cell{Text: durSec(a.maxSec)}, cell{Text: units.FormatCount(a.errors)})
		if i < maxSyscallHists {
			var bs []model.Bucket
			for _, b := range a.buckets {
				bs = append(bs, *b)
			}
			sort.Slice(bs, func(i, j int) bool { return bs[i].LowNs < bs[j].LowNs })
			figs = append(figs, figure{Caption: a.name + " latency",
				Sub: fmt.Sprintf("%s calls, %s in all", units.FormatCount(a.count), durSec(a.total)),
				Chart: Histogram(chartName("syscall", a.name), nsBuckets(bs), HistogramOptions{
					Title: a.name + " latency", Unit: UnitNs, Color: "#2a8c82"})})
		}
	}
	if tb.t.Foot != "" {
		tb.t.Foot += "; "
	}
	tb.t.Foot += "every thread's calls together, most time first; a thread asleep in a call (futex, epoll_wait) counts its sleep"
	s.table(tb.t)
	s.h3(fmt.Sprintf("Latency of the %d syscalls that took the most time", len(figs)))
	s.figs(figs...)
}
