package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/report/rows"
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
	window := rows.StorageWindow(run)
	d.blockDevices(rows.Devices(st.Devices, window))
	if st.Cache != nil {
		d.pageCache(rows.PageCacheOf(st.Cache, termUnits))
	}
	d.files(st.Files)
	if st.SQLite != nil {
		if st.SQLite.Events > 0 || len(st.SQLite.Files) > 0 {
			d.sqlitePages(rows.SQLitePagesOf(st.SQLite))
		}
		if st.SQLite.SQL != nil {
			d.statements(rows.StatementsOf(st.SQLite.SQL, maxStatements))
		}
	}
	lost := rows.StorageLost(st.Dropped)
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

func (d *doc) blockDevices(devs []rows.DeviceRow) {
	if len(devs) == 0 {
		return
	}
	d.heading("block devices (eBPF, every request in the window)")
	d.line("  %-7s %-8s %8s %6s %7s %6s %6s %8s %8s %5s", "device", "op", "requests", "req/s", "MiB", "KiB/rq", "merges", "queue", "service", "wl%")
	for _, dev := range devs {
		name := dev.Name
		for _, o := range dev.Ops {
			d.line("  %-7s %-8s %8s %6s %7s %6s %6s %8s %8s %5s", fit(name, 7), o.Op, units.FormatCount(o.Requests), orBlank(o.PerSec, 6),
				num(o.MiB, 7), orBlank(o.KiBPerReq, 6), count(o.Merges, 6), units.FormatNs(o.QueueSec*1e9),
				units.FormatNs(o.ServiceSec*1e9), orBlank(o.WorkloadPct, 5))
			name = ""
		}
		d.wrapped("          ", "            ", dev.Busy())
		if dev.Unseen > 0 {
			d.line("  %-7s %s requests started before the window and completed in it: in no figure above", "", units.FormatCount(dev.Unseen))
		}
	}
	notes := rows.BlockNotes
	if slices.ContainsFunc(devs, func(r rows.DeviceRow) bool { return r.DriverBusySec != nil }) {
		notes = append(slices.Clone(notes), rows.BusyNote)
	}
	for _, n := range notes {
		d.wrapped("  ", "    ", n)
	}
}

// orBlank prints a value that may be missing in w columns (num), blank
// when it is.
func orBlank(v *float64, w int) string {
	if v == nil {
		return ""
	}
	return num(*v, w)
}

func (d *doc) pageCache(c rows.PageCache) {
	d.heading("page cache (the workload's)")
	d.field("  read hits", c.ReadHits)
	d.field("  readahead", c.Readahead)
	d.field("  writes", c.Writes)
	d.field("  throttled", c.Throttled)
}

func (d *doc) files(fs []model.FileIO) {
	list := rows.Files(fs, maxIOFiles)
	if list.Total == 0 {
		return
	}
	title := "files, by time in calls"
	if list.More() > 0 {
		title = fmt.Sprintf("files, top %d of %d by time in calls", len(list.Rows), list.Total)
	}
	d.heading(title)
	// Each path on its own line, its calls below it: a path and eleven
	// columns do not fit in Width.
	const row = "    %7s %6s %-5s %7s %6s %-5s %6s %8s %8s %7s"
	d.line("  file")
	d.row(row, "reads", "KiB", "", "writes", "KiB", "", "syncs", "blocked", "locked", "threads")
	for _, f := range list.Rows {
		d.line("  %s", fitLeft(f.Path, Width-2))
		d.row(row, units.FormatCount(f.Reads.Count), meanKiB(f.Reads), short(f.Reads.Pattern),
			units.FormatCount(f.Writes.Count), meanKiB(f.Writes), short(f.Writes.Pattern),
			units.FormatCount(f.Syncs), rows.Secs(f.BlockedSec), rows.Secs(f.LockSec), threadCounts(f))
		if q := rows.Queue(f); q != "" {
			d.wrapped("      ", "        ", q)
		}
	}
	d.line("  KiB: average per call; seq/rand/mixed: where each call began against the")
	d.line("  previous one on the same open file; threads: that read it / that wrote it")
	dirs, files := rows.Directories(fs, maxIOFiles)
	d.directories(dirs, files)
	for _, l := range rows.TopFiles(fs, dirs, topFiles) {
		d.wrapped("  ", "    ", l)
	}
}

// directories sums the files by directory when the table above could not
// show them all (rows.Directories).
func (d *doc) directories(dirs []rows.DirRow, files int64) {
	if dirs == nil {
		return
	}
	shown := dirs[:min(len(dirs), maxIOFiles)]
	title := fmt.Sprintf("  %s files in %s, by time in calls", units.FormatCount(files), rows.Dirs(len(dirs)))
	if len(shown) < len(dirs) {
		title = fmt.Sprintf("  %s files in %s, top %d by time in calls", units.FormatCount(files), rows.Dirs(len(dirs)), len(shown))
	}
	d.line("%s", title)
	const row = "    %7s %8s %9s %8s %9s %6s %8s %8s"
	d.row(row, "files", "reads", "read", "writes", "written", "syncs", "blocked", "locked")
	for _, r := range shown {
		d.line("  %s/", fitLeft(strings.TrimSuffix(r.Path, "/"), Width-3))
		d.row(row, units.FormatCount(r.Files), units.FormatCount(r.Reads), units.FormatSize(r.ReadBytes), units.FormatCount(r.Writes),
			units.FormatSize(r.WriteBytes), units.FormatCount(r.Syncs), rows.Secs(r.BlockedSec), rows.Secs(r.LockSec))
	}
}

// topFiles is how many files each TopFiles line names.
const topFiles = 3

// threadCounts is "readers/writers", blank in a record made before
// threads were counted.
func threadCounts(f rows.FileRow) string {
	if f.Reads.Threads+f.Writes.Threads == 0 {
		return ""
	}
	return fmt.Sprintf("%d/%d", f.Reads.Threads, f.Writes.Threads)
}

// meanKiB is the mean size of a call in KiB, blank without calls.
func meanKiB(s rows.FileSide) string {
	if s.Count == 0 {
		return ""
	}
	return num(s.MeanBytes/1024, 6)
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

func (d *doc) sqlitePages(s rows.SQLitePages) {
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
			units.FormatSize(p.WriteBytes), p.RandomPct)
	}
	if len(s.ByObject) > 0 {
		d.line("  %-41s %8s %8s %9s", "table or index", "reads", "writes", "written")
		for _, p := range s.ByObject {
			d.line("  %-41s %8s %8s %9s", fit(p.Object, 41), units.FormatCount(p.Reads), units.FormatCount(p.Writes), units.FormatSize(p.WriteBytes))
		}
	}
	for _, p := range s.Patterns[:min(maxPatterns, len(s.Patterns))] {
		d.wrapped("  ", "      ", fmt.Sprintf("%s transactions wrote: %s", units.FormatCount(p.Count), p.Steps))
	}
	if n := len(s.Transactions); n > 0 {
		tx := s.Transactions[n-1]
		d.wrapped("  ", "      ", fmt.Sprintf("e.g. (thread %d): %s", tx.TID, tx.Steps))
	}
	for _, n := range s.Notes {
		d.wrapped("  - ", "    ", n)
	}
}

// maxPatterns is how many of the transactions' write patterns are shown.
const maxPatterns = 3

// maxStatements is how many SQL statements the terminal lists.
const maxStatements = 10

func (d *doc) statements(s rows.Statements) {
	d.heading("sql statements")
	d.wrapped("  ", "  ", s.Attributed)
	if len(s.Rows) == 0 {
		d.line("  no statement ran while the probe was attached")
	}
	d.line("  %9s %8s %9s %9s %9s %8s %8s %7s %9s %9s", "execs", "rows", "time", "p50", "p99", "reads", "writes", "syncs", "sync time", "written")
	for _, r := range s.Rows {
		d.line("  %9s %8s %9s %9s %9s %8s %8s %7s %9s %9s", r.Execs, r.Rows, r.Total, r.P50, r.P99, r.Reads, r.Writes, r.Syncs, r.SyncTime, r.Written)
		var notes []string
		if r.NestedIn != "" {
			notes = append(notes, "inside: "+r.NestedIn)
		}
		if r.States != "" {
			notes = append(notes, "time: "+r.States)
		}
		if r.Locks != "" {
			notes = append(notes, "lock waits: "+r.Locks)
		}
		if r.TopPages != "" {
			notes = append(notes, r.TopPages)
		}
		if r.ReadIn != "" {
			notes = append(notes, r.ReadIn+" pages read in from the device")
		}
		if r.Faults != "" {
			notes = append(notes, r.Faults+" page faults")
		}
		text := r.Text
		if len(notes) > 0 {
			text += "  [" + strings.Join(notes, "; ") + "]"
		}
		d.wrapped("    ", "      ", text)
	}
	if s.More > 0 {
		d.line("  (%d more statements in the JSON record)", s.More)
	}
	if len(s.Transactions) > 0 {
		d.line("")
		d.line("  transactions, by the statements they ran:")
		d.line("  %9s %9s %9s %9s %9s %10s %9s", "count", "time", "p50", "p99", "max", "syncs each", "sync time")
		for _, r := range s.Transactions {
			d.line("  %9s %9s %9s %9s %9s %10s %9s", r.Count, r.Total, r.P50, r.P99, r.Max, r.SyncsEach, r.SyncTime)
			d.wrapped("    ", "      ", r.Statements)
		}
		if s.TxMore > 0 {
			d.line("  (%d more kinds of transaction in the JSON record)", s.TxMore)
		}
	}
	for _, n := range s.Notes {
		d.wrapped("  - ", "    ", n)
	}
}
