package report

import (
	"cmp"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/units"
)

// maxIOFiles bounds the files listed; the JSON record keeps all.
const maxIOFiles = 8

// storage renders the storage probe's view: devices, page cache, files,
// SQLite pages.
func (d *doc) storage(run *model.Run) {
	st := run.Storage
	if st == nil {
		return
	}
	window := 0.0
	if run.TimeAccounting != nil {
		window = run.TimeAccounting.WindowSec
	}
	d.blockDevices(st.Devices, window)
	d.pageCache(st.Cache)
	d.files(st.Files, window)
	d.sqlitePages(st.SQLite)
	lost := StorageLost(st.Dropped)
	if len(st.Notes) > 0 || len(lost) > 0 {
		d.blank()
		for _, n := range st.Notes {
			d.wrapped("  - ", "    ", n)
		}
		for _, l := range lost {
			d.wrapped("  ! ", "    ", l)
		}
	}
}

// StorageLost says what the storage probe could not record, one warning a
// cause, none when it recorded everything.
func StorageLost(x model.StorageDropped) []string {
	var out []string
	if x.Requests+x.FileOps+x.SQLiteEvents > 0 {
		out = append(out, fmt.Sprintf("lost: %d requests, %d file calls, %d SQLite events (maps or ring buffer full): the counts above are short by that much",
			x.Requests, x.FileOps, x.SQLiteEvents))
	}
	if x.ThreadFiles > 0 {
		out = append(out, fmt.Sprintf("%d threads' first calls on a file were not counted among its threads (the map of thread-file pairs was full): the thread counts are short", x.ThreadFiles))
	}
	if len(x.MissedRuns) > 0 {
		names := slices.Sorted(maps.Keys(x.MissedRuns))
		parts := make([]string, len(names))
		for i, n := range names {
			parts[i] = fmt.Sprintf("%s %d", n, x.MissedRuns[n])
		}
		out = append(out, "runs the kernel skipped because the program was already running on that CPU: "+strings.Join(parts, ", ")+
			" (a skipped block_rq_complete is a request not counted)")
	}
	return out
}

func (d *doc) blockDevices(devs []model.BlockDevice, window float64) {
	if len(devs) == 0 {
		return
	}
	d.heading("block devices (eBPF, every request in the window)")
	d.line("  %-7s %-7s %8s %7s %7s %6s %7s %8s %8s %5s", "device", "op", "requests", "req/s", "MiB", "KiB/rq", "merges", "queue", "service", "wl%")
	for _, dev := range devs {
		name := dev.Name
		if name == "" {
			name = dev.Dev
		}
		for _, o := range dev.Ops {
			rate, kib, wl := "", "", ""
			if window > 0 {
				rate = num(float64(o.Requests)/window, 7)
			}
			if o.Requests > 0 {
				kib = num(float64(o.Bytes)/float64(o.Requests)/1024, 6)
				wl = num(float64(o.WorkloadRequests+o.WritebackRequests)/float64(o.Requests)*100, 5)
			}
			d.line("  %-7s %-7s %8s %7s %7s %6s %7s %8s %8s %5s", fit(name, 7), o.Op, units.FormatCount(o.Requests), rate,
				num(float64(o.Bytes)/(1<<20), 7), kib, units.FormatCount(o.Merges), units.FormatNs(o.QueueMeanSec*1e9), units.FormatNs(o.ServiceMeanSec*1e9), wl)
			name = ""
		}
		d.line("  %-7s busy %s, %%util %.1f", "", secs(dev.BusySec), dev.UtilPct)
	}
	d.line("  queue: start to issue to the driver; service: issue to completion (means);")
	d.line("  wl%%: requests issued by the workload or written back for its files")
}

func (d *doc) pageCache(c *model.PageCache) {
	if c == nil {
		return
	}
	d.heading("page cache (the workload's)")
	hit := "no buffered read"
	if c.HitRatio >= 0 {
		hit = fmt.Sprintf("%.1f%% (%s pages looked up by reads, %s added to the cache during them)", c.HitRatio*100,
			units.FormatCount(c.Lookups), units.FormatCount(c.ReadAdded))
	}
	d.field("  read hits", hit)
	d.field("  readahead", fmt.Sprintf("%s windows started by a miss, %s by the previous window", units.FormatCount(c.ReadaheadSync), units.FormatCount(c.ReadaheadAsync)))
	d.field("  writes", fmt.Sprintf("%s pages dirtied; %s written to disk for its files", units.FormatCount(c.Dirtied), units.FormatSize(c.WrittenBackBytes)))
	throttle := "none"
	switch {
	case c.Throttled > 0 && c.ThrottledSec >= 0:
		throttle = fmt.Sprintf("%s pauses, %s in all", units.FormatCount(c.Throttled), secs(c.ThrottledSec))
	case c.Throttled > 0:
		throttle = fmt.Sprintf("%s pauses (their length is unknown: no CONFIG_HZ found)", units.FormatCount(c.Throttled))
	}
	d.field("  throttled", throttle)
}

func (d *doc) files(fs []model.FileIO, window float64) {
	if len(fs) == 0 {
		return
	}
	title := "files, by time in calls"
	list := fs
	if len(list) > maxIOFiles {
		title = fmt.Sprintf("files, top %d of %d by time in calls", maxIOFiles, len(fs))
		list = list[:maxIOFiles]
	}
	d.heading(title)
	d.line("  %-30s %7s %6s %-6s %7s %6s %-6s %5s %7s %7s %7s", "file", "reads", "KiB", "", "writes", "KiB", "", "syncs", "blocked", "locked", "threads")
	for _, f := range list {
		path := f.Path
		if f.Deleted {
			path += " (deleted)"
		}
		d.line("  %-30s %7s %6s %-6s %7s %6s %-6s %5s %7s %7s %7s", fitLeft(path, 30),
			units.FormatCount(f.Reads.Count), avgKiB(f.Reads), short(f.Reads.Pattern),
			units.FormatCount(f.Writes.Count), avgKiB(f.Writes), short(f.Writes.Pattern),
			units.FormatCount(f.Syncs), secs(f.BlockedSec), secs(f.LockSec), threadCounts(f))
	}
	d.line("  KiB: average per call; seq/rand/mixed: where each call began against the")
	d.line("  previous one on the same open file; threads: that read it / that wrote it")
	for _, l := range TopFiles(fs, topFiles) {
		d.wrapped("  ", "    ", l)
	}
}

// topFiles is how many files each TopFiles line names.
const topFiles = 3

// TopFiles names the n files first by time blocked on storage, by bytes
// read and written, and by calls (reads, writes, syncs), one line each, as
// filetop sorts by any column; none with fewer than two files. A file's
// entry is its path's last element (the table above has the whole path).
func TopFiles(fs []model.FileIO, n int) []string {
	if len(fs) < 2 {
		return nil
	}
	type by struct {
		what  string
		key   func(f *model.FileIO) float64
		shown func(v float64) string
	}
	var out []string
	for _, b := range []by{
		{"blocked on storage", func(f *model.FileIO) float64 { return f.BlockedSec }, secs},
		{"bytes", func(f *model.FileIO) float64 { return float64(f.Reads.Bytes + f.Writes.Bytes) },
			func(v float64) string { return units.FormatSize(int64(v)) }},
		{"calls", func(f *model.FileIO) float64 { return float64(f.Reads.Count + f.Writes.Count + f.Syncs) },
			func(v float64) string { return units.FormatCount(int64(v)) }},
	} {
		idx := make([]int, len(fs))
		for i := range idx {
			idx[i] = i
		}
		slices.SortStableFunc(idx, func(i, j int) int { return cmp.Compare(b.key(&fs[j]), b.key(&fs[i])) })
		var parts []string
		for _, i := range idx[:min(n, len(idx))] {
			if v := b.key(&fs[i]); v > 0 {
				parts = append(parts, fmt.Sprintf("%s %s", filepath.Base(fs[i].Path), b.shown(v)))
			}
		}
		if len(parts) > 0 {
			out = append(out, "most "+b.what+": "+strings.Join(parts, ", "))
		}
	}
	return out
}

// threadCounts is "readers/writers", blank in a record made before
// threads were counted.
func threadCounts(f model.FileIO) string {
	if f.Reads.Threads+f.Writes.Threads == 0 {
		return ""
	}
	return fmt.Sprintf("%d/%d", f.Reads.Threads, f.Writes.Threads)
}

func avgKiB(o model.FileOps) string {
	if o.Count == 0 {
		return ""
	}
	return num(float64(o.Bytes)/float64(o.Count)/1024, 6)
}

func short(pattern string) string {
	switch pattern {
	case "sequential":
		return "seq"
	case "random":
		return "rand"
	}
	return pattern
}

func (d *doc) sqlitePages(s *model.SQLiteIO) {
	if s == nil {
		return
	}
	d.heading(fmt.Sprintf("sqlite pages (%s reads and writes of SQLite files)", units.FormatCount(s.Events)))
	for _, f := range s.Files {
		extra := ""
		if f.PageSize > 0 {
			extra = fmt.Sprintf(", %d-byte pages", f.PageSize)
		}
		if f.Pages > 0 {
			extra += fmt.Sprintf(", %d pages", f.Pages)
		}
		d.wrapped("  ", "    ", fmt.Sprintf("%s: %s%s", f.Kind, f.Path, extra))
	}
	d.line("  %-8s %-32s %8s %8s %9s %8s", "file", "what", "reads", "writes", "written", "random%")
	for _, p := range s.ByType {
		d.line("  %-8s %-32s %8s %8s %9s %8s", p.Kind, fit(p.Type, 32), units.FormatCount(p.Reads), units.FormatCount(p.Writes),
			units.FormatSize(p.WriteBytes), randomPct(p))
	}
	if len(s.ByObject) > 0 {
		d.line("  %-41s %8s %8s %9s", "table or index", "reads", "writes", "written")
		for _, p := range s.ByObject {
			d.line("  %-41s %8s %8s %9s", fit(p.Object, 41), units.FormatCount(p.Reads), units.FormatCount(p.Writes), units.FormatSize(p.WriteBytes))
		}
	}
	for i, p := range s.Patterns {
		if i == 3 {
			break
		}
		d.wrapped("  ", "      ", fmt.Sprintf("%s transactions wrote: %s", units.FormatCount(p.Count), strings.Join(p.Steps, " → ")))
	}
	if len(s.Transactions) > 0 {
		tx := s.Transactions[len(s.Transactions)-1]
		d.wrapped("  ", "      ", fmt.Sprintf("e.g. (thread %d): %s", tx.TID, strings.Join(tx.Steps, " → ")))
	}
	for _, n := range s.Notes {
		d.wrapped("  - ", "    ", n)
	}
}

func randomPct(p model.SQLitePages) string {
	n := p.Sequential + p.Random
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%.0f", float64(p.Random)/float64(n)*100)
}
