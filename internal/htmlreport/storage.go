package htmlreport

import (
	"fmt"
	"slices"
	"strings"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/report/rows"
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
	window := rows.StorageWindow(run)
	blockDevices(s, rows.Devices(st.Devices, window))
	pageCache(s, st.Cache)
	files(s, st.Files)
	sqlitePages(s, st.SQLite)
	if len(st.Notes) > 0 {
		s.h3("Not measured")
		s.list(st.Notes)
	}
	for _, l := range rows.StorageLost(st.Dropped) {
		s.warn(l)
	}
	return s
}

// histStyles are how each of a request's histograms is drawn.
var histStyles = map[string]struct {
	unit  Unit
	color string
}{
	"service": {UnitNs, "#b3322a"},
	"queue":   {UnitNs, "#e0723a"},
	"size":    {UnitBytes, "#3a78c9"},
	"depth":   {UnitCount, "#8b5fbf"},
}

func blockDevices(s *section, devs []rows.DeviceRow) {
	s.h3("Block devices")
	if len(devs) == 0 {
		s.why("no block device completed a request in the window")
		return
	}
	f := func(format string, v *float64) string {
		if v == nil {
			return ""
		}
		return fmt.Sprintf(format, *v)
	}
	tb := newTable("device", "~op", "requests", "req/s", "MiB", "KiB/req", "merges", "queue", "service", "workload %")
	for _, d := range devs {
		for _, o := range d.Ops {
			tb.add(cell{Text: d.Name}, cell{Text: o.Op}, cell{Text: units.FormatCount(o.Requests)}, cell{Text: f("%.1f", o.PerSec)},
				cell{Text: fmt.Sprintf("%.1f", o.MiB)}, cell{Text: f("%.1f", o.KiBPerReq)}, cell{Text: units.FormatCount(o.Merges)},
				cell{Text: durSec(o.QueueSec)}, cell{Text: durSec(o.ServiceSec)}, cell{Text: f("%.0f", o.WorkloadPct)})
		}
	}
	notes := rows.BlockNotes
	if slices.ContainsFunc(devs, func(r rows.DeviceRow) bool { return r.DriverBusySec != nil }) {
		notes = append(slices.Clone(notes), rows.BusyNote)
	}
	for _, d := range devs {
		if d.Unseen > 0 {
			notes = append(slices.Clone(notes), fmt.Sprintf("%s: %s requests started before the window and completed in it: in no figure above", d.Name, units.FormatCount(d.Unseen)))
		}
	}
	tb.t.Foot = strings.Join(notes, "; ")
	s.table(tb.t)
	for _, d := range devs {
		var figs []figure
		for _, o := range d.Ops {
			for _, h := range o.Hists {
				style := histStyles[h.What]
				figs = append(figs, figure{Caption: fmt.Sprintf("%s %s: %s", d.Name, o.Op, h.Label), Sub: units.FormatCount(h.Count) + " requests",
					Chart: Histogram(chartName("block", d.Name, o.Op, h.What), rangeBuckets(h.Buckets), HistogramOptions{
						Title: fmt.Sprintf("%s %s %s", d.Name, o.Op, h.Label), Unit: style.unit, Color: style.color})})
			}
		}
		s.h3(fmt.Sprintf("%s (%s): %s", d.Name, d.Dev, d.Busy()))
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
	p := rows.PageCacheOf(c, rows.Units{Dur: durSec})
	s.kvs([]kv{
		{"read hits", p.ReadHits},
		{"other pages added", p.OtherAdded},
		{"readahead", p.Readahead},
		{"writes", p.Writes},
		{"throttled", p.Throttled},
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
	list := rows.Files(fs, maxFileRows)
	tb := newTable("~file", "~sqlite", "reads", "per read", "~pattern", "readers", "writes", "per write", "~pattern", "writers", "syncs", "sync time", "blocked", "locked", "errors")
	for _, f := range list.Rows {
		tip := fmt.Sprintf("dev %s inode %d, pid %d", f.Dev, f.Ino, f.PID)
		if q := rows.Queue(f); q != "" {
			tip += "; " + q
		}
		if f.Instances > 1 {
			tip += fmt.Sprintf(", %d files had this path", f.Instances)
		}
		tb.add(cell{Text: f.Path, Class: "mono path", Path: true, Tip: tip}, cell{Text: f.SQLite},
			cell{Text: units.FormatCount(f.Reads.Count)}, cell{Text: meanSize(f.Reads)}, cell{Text: f.Reads.Pattern}, cell{Text: threadCount(f.Reads)},
			cell{Text: units.FormatCount(f.Writes.Count)}, cell{Text: meanSize(f.Writes)}, cell{Text: f.Writes.Pattern}, cell{Text: threadCount(f.Writes)},
			cell{Text: units.FormatCount(f.Syncs)}, cell{Text: durSec(f.SyncSec)}, cell{Text: durSec(f.BlockedSec)},
			cell{Text: durSec(f.LockSec)}, cell{Text: units.FormatCount(f.Errors)})
	}
	if n := list.More(); n > 0 {
		tb.t.Foot = fmt.Sprintf("and %d more files (all are in the JSON record); ", n)
	}
	tb.t.Foot += "most time first; per read, per write: mean size of a call; pattern: where each call began against the previous one on the same open file; readers, writers: the threads that read it, wrote it"
	s.table(tb.t)
	dirs, n := rows.Directories(fs, maxFileRows)
	if dirs != nil {
		dt := newTable("~directory", "files", "reads", "read", "writes", "written", "syncs", "sync time", "blocked", "locked")
		for _, d := range dirs[:min(len(dirs), maxFileRows)] {
			dt.add(cell{Text: strings.TrimSuffix(d.Path, "/") + "/", Class: "mono path", Path: true}, cell{Text: units.FormatCount(d.Files)},
				cell{Text: units.FormatCount(d.Reads)}, cell{Text: units.FormatSize(d.ReadBytes)}, cell{Text: units.FormatCount(d.Writes)},
				cell{Text: units.FormatSize(d.WriteBytes)}, cell{Text: units.FormatCount(d.Syncs)}, cell{Text: durSec(d.SyncSec)},
				cell{Text: durSec(d.BlockedSec)}, cell{Text: durSec(d.LockSec)})
		}
		dt.t.Foot = fmt.Sprintf("%s files in %s, the files of each directory and those below it together", units.FormatCount(n), rows.Dirs(len(dirs)))
		if len(dirs) > maxFileRows {
			dt.t.Foot += fmt.Sprintf("; and %d more directories", len(dirs)-maxFileRows)
		}
		s.table(dt.t)
	}
	s.listIf(rows.TopFiles(fs, dirs, topFiles))
}

// topFiles is how many files each line of the top files names.
const topFiles = 5

// threadCount is how many threads made the calls, blank without calls or
// in a record made before threads were counted.
func threadCount(o rows.FileSide) string {
	if o.Count == 0 || o.Threads == 0 {
		return ""
	}
	if o.AtOnce >= 1.5 {
		return fmt.Sprintf("%s (%.1f at once)", units.FormatCount(o.Threads), o.AtOnce)
	}
	return units.FormatCount(o.Threads)
}

// meanSize is the mean bytes per call, blank without calls.
func meanSize(o rows.FileSide) string {
	if o.Count == 0 {
		return ""
	}
	return units.FormatSize(int64(o.MeanBytes))
}

func sqlitePages(s *section, io *model.SQLiteIO) {
	s.h3("SQLite pages")
	if io == nil {
		s.why("no SQLite pages: no SQLite file was touched, or --storage was off")
		return
	}
	if io.Events == 0 && len(io.Files) == 0 {
		s.why("no SQLite pages: no SQLite file was touched")
	} else {
		sqlitePageTables(s, io)
	}
	if io.SQL != nil {
		sqlStatements(s, rows.StatementsOf(io.SQL, maxStatements))
	}
}

// sqlitePageTables shows what the SQLite files' operations moved, by page
// type and by table or index, and the transactions' patterns.
func sqlitePageTables(s *section, io *model.SQLiteIO) {
	q := rows.SQLitePagesOf(io)
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
				cell{Text: units.FormatSize(p.ReadBytes)}, cell{Text: units.FormatSize(p.WriteBytes)}, cell{Text: p.RandomPct})
		}
		s.table(tb.t)
	}
	if len(q.ByObject) > 0 {
		tb := newTable("table or index", "reads", "writes", "read", "written", "random %")
		for _, p := range q.ByObject {
			tb.add(cell{Text: p.Object, Class: "mono"}, cell{Text: units.FormatCount(p.Reads)}, cell{Text: units.FormatCount(p.Writes)},
				cell{Text: units.FormatSize(p.ReadBytes)}, cell{Text: units.FormatSize(p.WriteBytes)}, cell{Text: p.RandomPct})
		}
		s.table(tb.t)
	}
	if len(q.Patterns) > 0 {
		tb := newTable("transactions", "~wrote, in order")
		for _, p := range q.Patterns {
			tb.add(cell{Text: units.FormatCount(p.Count)}, cell{Text: p.Steps, Class: "mono"})
		}
		s.table(tb.t)
	}
	if len(q.Transactions) > 0 {
		var lines []string
		for _, tx := range q.Transactions[:min(maxTxExamples, len(q.Transactions))] {
			lines = append(lines, fmt.Sprintf("thread %d: %s", tx.TID, tx.Steps))
		}
		s.h3(fmt.Sprintf("The first %d transactions seen", len(lines)))
		s.code(lines)
	}
	s.listIf(q.Notes)
}

// maxStatements is how many SQL statements the page lists (the record
// keeps them all).
const maxStatements = 50

func sqlStatements(s *section, q rows.Statements) {
	s.h3("SQL statements")
	s.p(q.Attributed + " (observe --sql)")
	if len(q.Rows) > 0 {
		tb := newTable("~statement", "~run inside", "pid", "execs", "rows", "time", "p50", "p99", "~time went to", "~lock waits", "reads", "pages read in", "faults", "writes", "syncs", "sync time", "written", "~most ops on")
		for _, r := range q.Rows {
			tb.add(cell{Text: r.Text, Class: "mono"}, cell{Text: r.NestedIn, Class: "mono"}, cell{Text: fmt.Sprint(r.PID)}, cell{Text: r.Execs}, cell{Text: r.Rows},
				cell{Text: r.Total}, cell{Text: r.P50}, cell{Text: r.P99}, cell{Text: r.States}, cell{Text: r.Locks}, cell{Text: r.Reads}, cell{Text: r.ReadIn}, cell{Text: r.Faults}, cell{Text: r.Writes},
				cell{Text: r.Syncs}, cell{Text: r.SyncTime}, cell{Text: r.Written}, cell{Text: r.TopPages})
		}
		s.table(tb.t)
	}
	if q.More > 0 {
		s.p(fmt.Sprintf("%d more statements in the JSON record", q.More))
	}
	if len(q.Transactions) > 0 {
		s.p("Transactions, by the statements they ran (explicit ones from BEGIN to COMMIT; an autocommit statement is its own):")
		tb := newTable("count", "time", "p50", "p99", "max", "syncs each", "sync time", "~statements")
		for _, r := range q.Transactions {
			tb.add(cell{Text: r.Count}, cell{Text: r.Total}, cell{Text: r.P50}, cell{Text: r.P99}, cell{Text: r.Max},
				cell{Text: r.SyncsEach}, cell{Text: r.SyncTime}, cell{Text: r.Statements, Class: "mono"})
		}
		s.table(tb.t)
		if q.TxMore > 0 {
			s.p(fmt.Sprintf("%d more kinds of transaction in the JSON record", q.TxMore))
		}
	}
	s.listIf(q.Notes)
}
