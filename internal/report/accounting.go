package report

import (
	"fmt"
	"sort"
	"strings"

	"github.com/perfsleuth/perfsleuth/internal/model"
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
