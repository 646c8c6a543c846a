package htmlreport

import (
	"fmt"
	"strings"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/report"
	"github.com/perfsleuth/perfsleuth/internal/units"
)

// maxFileRows and maxTxExamples bound the storage tables; the record keeps all.
const (
	maxFileRows   = 100
	maxTxExamples = 5
)

// storageSection shows the storage probe's view: block devices with their
// latency, size and depth histograms, the page cache, the files, and the
// SQLite pages.
func storageSection(run *model.Run) *section {
	s := &section{ID: "storage", Title: "Storage"}
	st := run.Storage
	if st == nil {
		s.Why = "no storage view: the storage probe needs eBPF (this run was observed without it, or only measured)"
		return s
	}
	window := 0.0
	if run.TimeAccounting != nil {
		window = run.TimeAccounting.WindowSec
	}
	blockDevices(s, st.Devices, window)
	pageCache(s, st.Cache)
	files(s, st.Files)
	sqlitePages(s, st.SQLite)
	if len(st.Notes) > 0 {
		s.h3("Not measured")
		s.list(st.Notes)
	}
	for _, l := range report.StorageLost(st.Dropped) {
		s.warn(l)
	}
	return s
}

func blockDevices(s *section, devs []model.BlockDevice, window float64) {
	s.h3("Block devices")
	if len(devs) == 0 {
		s.why("no block device completed a request in the window")
		return
	}
	tb := newTable("device", "~op", "requests", "req/s", "MiB", "KiB/req", "merges", "queue", "service", "workload %")
	for _, d := range devs {
		name := d.Name
		if name == "" {
			name = d.Dev
		}
		for _, o := range d.Ops {
			rate, kib, wl := "", "", ""
			if window > 0 {
				rate = fmt.Sprintf("%.1f", float64(o.Requests)/window)
			}
			if o.Requests > 0 {
				kib = fmt.Sprintf("%.1f", float64(o.Bytes)/float64(o.Requests)/1024)
				wl = fmt.Sprintf("%.0f", float64(o.WorkloadRequests+o.WritebackRequests)/float64(o.Requests)*100)
			}
			tb.add(cell{Text: name}, cell{Text: o.Op}, cell{Text: units.FormatCount(o.Requests)}, cell{Text: rate},
				cell{Text: fmt.Sprintf("%.1f", float64(o.Bytes)/(1<<20))}, cell{Text: kib}, cell{Text: units.FormatCount(o.Merges)},
				cell{Text: durSec(o.QueueMeanSec)}, cell{Text: durSec(o.ServiceMeanSec)}, cell{Text: wl})
		}
	}
	tb.t.Foot = "queue: start to issue to the driver; service: issue to completion (means); workload %: requests issued by the workload or written back for its files"
	s.table(tb.t)
	for _, d := range devs {
		name := d.Name
		if name == "" {
			name = d.Dev
		}
		var figs []figure
		for _, o := range d.Ops {
			for _, h := range []struct {
				what, label string
				r           []model.Range
				unit        Unit
				color       string
			}{
				{"service", "service time", o.Service, UnitNs, "#b3322a"},
				{"queue", "queue time", o.Queue, UnitNs, "#e0723a"},
				{"size", "request size", o.Size, UnitBytes, "#3a78c9"},
				{"depth", "requests in flight at issue", o.Depth, UnitCount, "#8b5fbf"},
			} {
				if len(h.r) == 0 {
					continue
				}
				var n int64
				for _, b := range h.r {
					n += b.Count
				}
				figs = append(figs, figure{Caption: fmt.Sprintf("%s %s: %s", name, o.Op, h.label), Sub: units.FormatCount(n) + " requests",
					Chart: Histogram(chartName("block", name, o.Op, h.what), rangeBuckets(h.r), HistogramOptions{
						Title: fmt.Sprintf("%s %s %s", name, o.Op, h.label), Unit: h.unit, Color: h.color})})
			}
		}
		s.h3(fmt.Sprintf("%s (%s): busy %s, %%util %.1f", name, d.Dev, durSec(d.BusySec), d.UtilPct))
		if len(figs) == 0 {
			s.why("no histograms recorded for this device")
			continue
		}
		s.figs(figs...)
	}
}

func pageCache(s *section, c *model.PageCache) {
	s.h3("Page cache (the workload's)")
	if c == nil {
		s.why("not measured: the kernel lacks the page-cache tracepoints (see the notes below)")
		return
	}
	hit := "no buffered read"
	if c.HitRatio >= 0 {
		hit = fmt.Sprintf("%.1f%% (%s pages looked up by reads, %s added to the cache during them)", c.HitRatio*100,
			units.FormatCount(c.Lookups), units.FormatCount(c.ReadAdded))
	}
	throttle := "none"
	switch {
	case c.Throttled > 0 && c.ThrottledSec >= 0:
		throttle = fmt.Sprintf("%s pauses, %s in all", units.FormatCount(c.Throttled), durSec(c.ThrottledSec))
	case c.Throttled > 0:
		throttle = fmt.Sprintf("%s pauses (their length is unknown: no CONFIG_HZ found)", units.FormatCount(c.Throttled))
	}
	s.kvs([]kv{
		{"read hits", hit},
		{"other pages added", fmt.Sprintf("%s (writes to new pages, mmap faults; %s fault lookups)", units.FormatCount(c.OtherAdded), units.FormatCount(c.FaultLookups))},
		{"readahead", fmt.Sprintf("%s windows started by a miss, %s by the previous window", units.FormatCount(c.ReadaheadSync), units.FormatCount(c.ReadaheadAsync))},
		{"writes", fmt.Sprintf("%s pages dirtied; %s written to disk for its files", units.FormatCount(c.Dirtied), units.FormatSize(c.WrittenBackBytes))},
		{"throttled", throttle},
	})
}

func files(s *section, fs []model.FileIO) {
	s.h3("Files")
	if fs == nil {
		s.why("per-file IO not recorded: observe with --storage to see each file's reads, writes, syncs and time blocked")
		return
	}
	if len(fs) == 0 {
		s.why("the workload read, wrote or synced no regular file")
		return
	}
	tb := newTable("~file", "~sqlite", "reads", "per read", "~pattern", "readers", "writes", "per write", "~pattern", "writers", "syncs", "sync time", "blocked", "locked", "errors")
	for i, f := range fs {
		if i == maxFileRows {
			tb.t.Foot = fmt.Sprintf("and %d more files (all are in the JSON record)", len(fs)-maxFileRows)
			break
		}
		path := f.Path
		if f.Deleted {
			path += " (deleted)"
		}
		tip := fmt.Sprintf("dev %s inode %d, pid %d", f.Dev, f.Ino, f.PID)
		if f.Instances > 1 {
			tip += fmt.Sprintf(", %d files had this path", f.Instances)
		}
		tb.add(cell{Text: path, Class: "mono path", Path: true, Tip: tip}, cell{Text: f.SQLite},
			cell{Text: units.FormatCount(f.Reads.Count)}, cell{Text: avgSize(f.Reads)}, cell{Text: f.Reads.Pattern}, cell{Text: threadCount(f.Reads)},
			cell{Text: units.FormatCount(f.Writes.Count)}, cell{Text: avgSize(f.Writes)}, cell{Text: f.Writes.Pattern}, cell{Text: threadCount(f.Writes)},
			cell{Text: units.FormatCount(f.Syncs)}, cell{Text: durSec(f.SyncSec)}, cell{Text: durSec(f.BlockedSec)},
			cell{Text: durSec(f.LockSec)}, cell{Text: units.FormatCount(f.Errors)})
	}
	if tb.t.Foot != "" {
		tb.t.Foot += "; "
	}
	tb.t.Foot += "most time first; per read, per write: mean size of a call; pattern: where each call began against the previous one on the same open file; readers, writers: the threads that read it, wrote it"
	s.table(tb.t)
	s.listIf(report.TopFiles(fs, topFiles))
}

// topFiles is how many files each line of the top files names.
const topFiles = 5

// threadCount is how many threads made the calls, blank without calls or
// in a record made before threads were counted.
func threadCount(o model.FileOps) string {
	if o.Count == 0 || o.Threads == 0 {
		return ""
	}
	return units.FormatCount(o.Threads)
}

// avgSize is the mean bytes per call.
func avgSize(o model.FileOps) string {
	if o.Count == 0 {
		return ""
	}
	return units.FormatSize(o.Bytes / o.Count)
}

func sqlitePages(s *section, q *model.SQLiteIO) {
	s.h3("SQLite pages")
	if q == nil {
		s.why("no SQLite pages: no SQLite file was touched, or --storage was off")
		return
	}
	s.p(fmt.Sprintf("%s reads and writes of SQLite files, mapped to pages", units.FormatCount(q.Events)))
	var fk []kv
	for _, f := range q.Files {
		v := f.Path
		if f.PageSize > 0 {
			v += fmt.Sprintf(" (%d-byte pages", f.PageSize)
			if f.Pages > 0 {
				v += fmt.Sprintf(", %d pages", f.Pages)
			}
			v += ")"
		}
		fk = append(fk, kv{f.Kind, v})
	}
	if len(fk) > 0 {
		s.kvs(fk)
	}
	if len(q.ByType) > 0 {
		tb := newTable("~file", "~page type", "reads", "writes", "read", "written", "random %")
		for _, p := range q.ByType {
			tb.add(cell{Text: p.Kind}, cell{Text: p.Type}, cell{Text: units.FormatCount(p.Reads)}, cell{Text: units.FormatCount(p.Writes)},
				cell{Text: units.FormatSize(p.ReadBytes)}, cell{Text: units.FormatSize(p.WriteBytes)}, cell{Text: randomPct(p)})
		}
		s.table(tb.t)
	}
	if len(q.ByObject) > 0 {
		tb := newTable("table or index", "reads", "writes", "read", "written", "random %")
		for _, p := range q.ByObject {
			tb.add(cell{Text: p.Object, Class: "mono"}, cell{Text: units.FormatCount(p.Reads)}, cell{Text: units.FormatCount(p.Writes)},
				cell{Text: units.FormatSize(p.ReadBytes)}, cell{Text: units.FormatSize(p.WriteBytes)}, cell{Text: randomPct(p)})
		}
		s.table(tb.t)
	}
	if len(q.Patterns) > 0 {
		tb := newTable("transactions", "~wrote, in order")
		for _, p := range q.Patterns {
			tb.add(cell{Text: units.FormatCount(p.Count)}, cell{Text: strings.Join(p.Steps, " → "), Class: "mono"})
		}
		s.table(tb.t)
	}
	if len(q.Transactions) > 0 {
		var lines []string
		for i, tx := range q.Transactions {
			if i == maxTxExamples {
				break
			}
			lines = append(lines, fmt.Sprintf("thread %d: %s", tx.TID, strings.Join(tx.Steps, " → ")))
		}
		s.h3(fmt.Sprintf("The first %d transactions seen", len(lines)))
		s.code(lines)
	}
	s.listIf(q.Notes)
}

func randomPct(p model.SQLitePages) string {
	n := p.Sequential + p.Random
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%.0f", float64(p.Random)/float64(n)*100)
}
