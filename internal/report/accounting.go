package report

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/symbolize"
	"github.com/perfsleuth/perfsleuth/internal/units"
)

// barWidth is the width of a full (100%) bar in "where the time goes".
const barWidth = 30

// accounting renders the time accounting as bars per category, the
// busiest threads, the verdict and the findings.
func (d *doc) accounting(run *model.Run) {
	ta := run.TimeAccounting
	if ta != nil {
		busy, idle := 0, 0
		for _, t := range ta.Threads {
			if t.Idle {
				idle++
			} else {
				busy++
			}
		}
		d.heading(fmt.Sprintf("where the time goes (%s, %d busy thread(s), %d idle)", ta.Source, busy, idle))
		total := 0.0
		for _, s := range ta.Total {
			total += s
		}
		for _, c := range model.Categories {
			s, ok := ta.Total[c]
			if !ok || (s == 0 && c == model.CatUnknown) {
				continue
			}
			frac := 0.0
			if total > 0 {
				frac = s / total
			}
			n := int(frac*barWidth + 0.5)
			extra := ""
			if c == model.CatCPU && s > 0 && ta.UserSec+ta.SystemSec > 0 {
				u := ta.UserSec / (ta.UserSec + ta.SystemSec)
				extra = fmt.Sprintf(" user %.0f%% sys %.0f%%", u*100, (1-u)*100)
			}
			d.line("  %-13s %-*s %5.1f%% %8s%s", c, barWidth, strings.Repeat("#", n), frac*100, secs(s), extra)
		}
		d.threadShares(ta)
		if ta.Source == "ebpf" {
			d.line("  threads: %d created, %d exited, at most %d alive at once", ta.ThreadsCreated, ta.ThreadsExited, ta.PeakThreads)
		}
		d.syncCalls(ta)
		d.syncedFiles(ta)
		d.syscalls(ta)
		d.offCPU(ta)
		d.onCPU(ta)
		for _, u := range ta.Unknown {
			d.wrapped("  - ", "    ", u)
		}
		if ta.Dropped > 0 {
			d.wrapped("  "+d.paint(ansiRed, "!")+" ", "    ", fmt.Sprintf("%d events were dropped: the accounting is incomplete", ta.Dropped))
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

// threadShares lists the busiest threads with their three largest categories.
func (d *doc) threadShares(ta *model.TimeAccounting) {
	var busy []model.ThreadTime
	for _, t := range ta.Threads {
		if !t.Idle {
			busy = append(busy, t)
		}
	}
	if len(busy) == 0 {
		return
	}
	sort.SliceStable(busy, func(i, j int) bool { return busy[i].WallSec > busy[j].WallSec })
	if len(busy) > maxThreads {
		busy = busy[:maxThreads]
	}
	d.line("  %8s %-14s %8s  %s", "tid", "comm", "wall", "largest shares")
	for _, t := range busy {
		type cs struct {
			c string
			s float64
		}
		var parts []cs
		for c, s := range t.Seconds {
			if s > 0 {
				parts = append(parts, cs{c, s})
			}
		}
		sort.Slice(parts, func(i, j int) bool {
			if parts[i].s != parts[j].s {
				return parts[i].s > parts[j].s
			}
			return parts[i].c < parts[j].c
		})
		var txt []string
		for i, p := range parts {
			if i == 3 {
				break
			}
			if t.WallSec > 0 {
				txt = append(txt, fmt.Sprintf("%s %.0f%%", p.c, p.s/t.WallSec*100))
			}
		}
		tid, comm := fmt.Sprint(t.TID), fit(t.Comm, 14)
		if t.Folded > 0 {
			// Exited threads folded together: their walls add up.
			tid, comm = "-", fit(fmt.Sprintf("%d× %s", t.Folded, t.Comm), 14)
		}
		d.line("  %8s %-14s %8s  %s", tid, comm, secs(t.WallSec), fit(strings.Join(txt, ", "), 42))
	}
}

// syncCalls lists the sync calls by kind: count, total and mean time, and
// the log2 bucket that holds the median.
func (d *doc) syncCalls(ta *model.TimeAccounting) {
	if ta.SyncNote != "" {
		d.wrapped("  - ", "    ", "sync calls not timed: "+ta.SyncNote)
	}
	if len(ta.Syncs) == 0 {
		return
	}
	d.line("  %-16s %9s %9s %9s  %s", "sync call", "calls", "total", "mean", "median in")
	for _, s := range ta.Syncs {
		mean := s.TotalSec / float64(s.Count) * 1e9
		med := ""
		var seen int64
		for _, b := range s.Buckets {
			seen += b.Count
			if seen*2 >= s.Count {
				med = fmt.Sprintf("[%s, %s)", units.FormatNs(float64(b.LowNs)), units.FormatNs(float64(b.HighNs+1)))
				break
			}
		}
		d.line("  %-16s %9s %9s %9s  %s", s.Kind, units.FormatCount(s.Count), secs(s.TotalSec), units.FormatNs(mean), med)
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
	if len(ta.SyncedFiles) == 0 {
		return
	}
	d.line("  %-40s %7s %9s %9s %9s", "file synced", "syncs", "total", "mean", "max")
	for i, f := range ta.SyncedFiles {
		if i == maxFiles {
			d.line("  ... and %d more files", len(ta.SyncedFiles)-maxFiles)
			break
		}
		d.line("  %-40s %7s %9s %9s %9s", fitLeft(f.Path, 40), units.FormatCount(f.Count), secs(f.TotalSec),
			units.FormatNs(f.TotalSec/float64(max(f.Count, 1))*1e9), units.FormatNs(f.MaxSec*1e9))
	}
}

// fitLeft shortens s to n columns by cutting its start (paths end in what
// matters).
func fitLeft(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return "…" + string(r[len(r)-n+1:])
}

// syscalls lists the syscalls of all threads together, most time first, as
// strace -c -w does (the record has them per thread).
func (d *doc) syscalls(ta *model.TimeAccounting) {
	if ta.Syscalls == nil {
		return
	}
	type agg struct {
		name          string
		count, errors int64
		total, maxSec float64
	}
	by := map[string]*agg{}
	var all float64
	for _, s := range ta.Syscalls {
		a := by[s.Name]
		if a == nil {
			a = &agg{name: s.Name}
			by[s.Name] = a
		}
		a.count += s.Count
		a.errors += s.Errors
		a.total += s.TotalSec
		a.maxSec = max(a.maxSec, s.MaxSec)
		all += s.TotalSec
	}
	list := make([]*agg, 0, len(by))
	for _, a := range by {
		list = append(list, a)
	}
	sort.Slice(list, func(i, j int) bool {
		if list[i].total != list[j].total {
			return list[i].total > list[j].total
		}
		return list[i].name < list[j].name
	})
	d.line("  %-18s %6s %9s %9s %9s %9s %7s", "syscall", "time%", "total", "calls", "mean", "max", "errors")
	for i, a := range list {
		if i == maxSyscalls {
			d.line("  ... and %d more syscalls", len(list)-maxSyscalls)
			break
		}
		pct := 0.0
		if all > 0 {
			pct = a.total / all * 100
		}
		d.line("  %-18s %6.1f %9s %9s %9s %9s %7s", fit(a.name, 18), pct, secs(a.total), units.FormatCount(a.count),
			units.FormatNs(a.total/float64(max(a.count, 1))*1e9), units.FormatNs(a.maxSec*1e9), units.FormatCount(a.errors))
	}
	if len(list) == 0 {
		d.line("  no syscalls counted")
	}
}

// offCPU shows, per blocked category, the stacks that slept longest.
func (d *doc) offCPU(ta *model.TimeAccounting) {
	if ta.OffCPU == nil {
		return
	}
	shown := map[string]int{}
	d.line("  off-CPU stacks, longest per category (innermost frame first):")
	for _, o := range ta.OffCPU {
		if shown[o.Category] == maxStacksPerCategory {
			continue
		}
		shown[o.Category]++
		d.line("  %s %s in %s sleeps (pid %d)", o.Category, secs(o.Seconds), units.FormatCount(o.Count), o.PID)
		frames := func(fs []string, note string) {
			for i, f := range fs {
				if i == maxFrames {
					d.line("      ... %d more", len(fs)-maxFrames)
					break
				}
				d.line("      %s", fit(f, 72))
			}
			if note != "" {
				d.wrapped("      (", "       ", note+")")
			}
		}
		frames(o.Kernel, o.KernelNote)
		d.line("      --")
		frames(o.User, o.UserNote)
	}
	if len(ta.OffCPU) == 0 {
		d.line("  no sleeps of busy threads seen")
	}
	if ta.OffCPUIdleSec > 0 {
		d.line("  (idle threads' stacks, %s of sleep, left out)", secs(ta.OffCPUIdleSec))
	}
}

// maxHotFunctions is how many functions the on-CPU view lists.
const maxHotFunctions = 10

// onCPU shows where the workload's threads ran: the functions the samples
// fell in (the innermost frame: kernel when the sample hit the kernel,
// else user), as perf report --no-children does, and the hottest stack.
func (d *doc) onCPU(ta *model.TimeAccounting) {
	if ta.OnCPU == nil {
		if ta.OnCPUNote != "" {
			d.wrapped("  on-CPU: ", "          ", ta.OnCPUNote)
		}
		return
	}
	var total int64
	self := map[string]int64{}
	for _, o := range ta.OnCPU {
		total += o.Samples
		leaf := "[unknown]"
		switch {
		case len(o.Kernel) > 0:
			leaf = symbolize.Function(o.Kernel[0]) + " [k]"
		case len(o.User) > 0:
			leaf = symbolize.Function(o.User[0])
		}
		self[leaf] += o.Samples
	}
	d.line("  on-CPU samples at %d Hz: %s (%s of CPU); functions the samples fell in:", ta.OnCPUHz, units.FormatCount(total), secs(float64(total)/float64(max(ta.OnCPUHz, 1))))
	names := slices.Collect(maps.Keys(self))
	slices.SortFunc(names, func(a, b string) int { return cmp.Or(cmp.Compare(self[b], self[a]), strings.Compare(a, b)) })
	for i, n := range names {
		if i == maxHotFunctions {
			d.line("    ... %d more", len(names)-maxHotFunctions)
			break
		}
		d.line("    %5.1f%%  %s", 100*float64(self[n])/float64(max(total, 1)), fit(n, 68))
	}
	if len(ta.OnCPU) == 0 {
		d.line("    %s", orDash(ta.OnCPUNote))
		return
	}
	o := ta.OnCPU[0]
	d.line("  hottest stack: %s samples of tid %d (%s), innermost frame first:", units.FormatCount(o.Samples), o.TID, o.Comm)
	for k, fs := range [][]string{o.Kernel, o.User} {
		if k == 1 && len(o.Kernel) > 0 && len(o.User) > 0 {
			d.line("      --")
		}
		for i, f := range fs {
			if i == maxFrames {
				d.line("      ... %d more", len(fs)-maxFrames)
				break
			}
			d.line("      %s", fit(f, 72))
		}
	}
	for _, note := range []string{o.KernelNote, o.UserNote} {
		if note != "" && !strings.HasPrefix(note, "no stack") {
			d.wrapped("      (", "       ", note+")")
		}
	}
}
