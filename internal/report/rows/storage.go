package rows

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

// DeviceRow is one block device: its requests per op, and how busy it was.
type DeviceRow struct {
	// Name is the device's name, else its major:minor (Dev).
	Name, Dev        string
	BusySec, UtilPct float64
	// DriverBusySec and DriverUtilPct are the probe's own busy time (a
	// request in the driver); nil in records without it.
	DriverBusySec, DriverUtilPct *float64
	Ops                          []BlockOpRow
	// Unseen are the requests that completed in the window but started
	// before it: in no figure of the ops.
	Unseen int64
}

// Busy is a device's busy line: the time with a request in the driver,
// which the probe measures, then iostat's figures from /proc/diskstats.
func (r DeviceRow) Busy() string {
	ds := fmt.Sprintf("busy %s, %%util %.1f", Secs(r.BusySec), r.UtilPct)
	if r.DriverBusySec == nil || r.DriverUtilPct == nil {
		return ds
	}
	return fmt.Sprintf("in the driver %s (%.1f%%); diskstats %s", Secs(*r.DriverBusySec), *r.DriverUtilPct, ds)
}

// BusyNote explains the busy line when it has both figures.
const BusyNote = "in the driver: the time with at least one request being served, measured here; diskstats busy and %util: iostat's, from io_ticks, which the kernel counts in whole jiffies at requests' starts and ends: for requests far shorter than a jiffy it can be far off either way"

// BlockNotes explain the device table's terms, for both views.
var BlockNotes = []string{
	"queue: start to issue to the driver; service: time in the driver (means)",
	"flush: the device's cache-flush commands; preflush: cache flushes asked for (fsync, journal commits), each served by a flush command; /proc/diskstats counts a preflush as a write of 0 bytes",
	"wl%: requests issued by the workload or written back for its files",
}

// BlockOpRow is one kind of request to a device.
type BlockOpRow struct {
	Op                   string
	Requests, Merges     int64
	MiB                  float64
	PerSec               *float64 // nil without a window to divide by
	KiBPerReq            *float64 // nil without requests
	WorkloadPct          *float64 // requests issued by the workload or written back for its files; nil without requests
	QueueSec, ServiceSec float64  // means
	Hists                []Hist
}

// Hist is one of a request's histograms that has buckets.
type Hist struct {
	// What is "service", "queue", "size" or "depth"; Label says it in words.
	What, Label string
	Buckets     []model.Range
	// Count sums the buckets.
	Count int64
}

// StorageWindow is the storage probe's window in seconds, over which its
// counts are rates: its own, else (older records) the time accounting's.
func StorageWindow(run *model.Run) float64 {
	if st := run.Storage; st != nil && st.WindowSec > 0 {
		return st.WindowSec
	}
	if run.TimeAccounting != nil {
		return run.TimeAccounting.WindowSec
	}
	return 0
}

// Devices builds the block device rows; window is the storage probe's
// (StorageWindow), for the rates.
func Devices(devs []model.BlockDevice, window float64) []DeviceRow {
	var out []DeviceRow
	for _, d := range devs {
		r := DeviceRow{Name: d.Name, Dev: d.Dev, BusySec: d.BusySec, UtilPct: d.UtilPct, DriverBusySec: d.DriverBusySec, DriverUtilPct: d.DriverUtilPct}
		if r.Name == "" {
			r.Name = d.Dev
		}
		for _, o := range d.Ops {
			op := BlockOpRow{Op: o.Op, Requests: o.Requests, Merges: o.Merges, MiB: float64(o.Bytes) / (1 << 20),
				QueueSec: o.QueueMeanSec, ServiceSec: o.ServiceMeanSec}
			if window > 0 {
				op.PerSec = ptr(float64(o.Requests) / window)
			}
			if o.Requests > 0 {
				op.KiBPerReq = ptr(float64(o.Bytes) / float64(o.Requests) / 1024)
				op.WorkloadPct = ptr(float64(o.WorkloadRequests+o.WritebackRequests) / float64(o.Requests) * 100)
			}
			for _, h := range []Hist{
				{What: "service", Label: "service time", Buckets: o.Service},
				{What: "queue", Label: "queue time", Buckets: o.Queue},
				{What: "size", Label: "request size", Buckets: o.Size},
				{What: "depth", Label: "requests in the driver at issue", Buckets: o.Depth},
				{What: "workload depth", Label: "the workload's requests in the driver at issue", Buckets: o.WorkloadDepth},
			} {
				if len(h.Buckets) == 0 {
					continue
				}
				for _, b := range h.Buckets {
					h.Count += b.Count
				}
				op.Hists = append(op.Hists, h)
			}
			r.Ops = append(r.Ops, op)
			r.Unseen += o.Unseen
		}
		out = append(out, r)
	}
	return out
}

func ptr[T any](v T) *T { return &v }

// PageCache says what the workload did with the page cache, one sentence
// a line.
type PageCache struct {
	ReadHits, OtherAdded, Readahead, Writes, Throttled string
}

// PageCacheOf describes the page cache's counts.
func PageCacheOf(c *model.PageCache, u Units) PageCache {
	p := PageCache{
		ReadHits: "no buffered read",
		OtherAdded: fmt.Sprintf("%s (writes to new pages, mmap faults; %s fault lookups)",
			units.FormatCount(c.OtherAdded), units.FormatCount(c.FaultLookups)),
		Readahead: fmt.Sprintf("%s windows started by a miss, %s by the previous window",
			units.FormatCount(c.ReadaheadSync), units.FormatCount(c.ReadaheadAsync)),
		Writes: fmt.Sprintf("%s pages dirtied; %s written to disk for its files",
			units.FormatCount(c.Dirtied), units.FormatSize(c.WrittenBackBytes)),
		Throttled: "none",
	}
	switch {
	case c.PagesNotCounted:
		p.ReadHits = "not counted: observe with --storage (its per-page hooks run for every read call and page on the machine)"
		p.OtherAdded = fmt.Sprintf("not counted without --storage (%s fault lookups)", units.FormatCount(c.FaultLookups))
		p.Writes = fmt.Sprintf("pages dirtied not counted without --storage; %s written to disk for its files", units.FormatSize(c.WrittenBackBytes))
	case c.HitRatio >= 0:
		p.ReadHits = fmt.Sprintf("%.1f%% (%s pages looked up by reads, %s added to the cache during them)", c.HitRatio*100,
			units.FormatCount(c.Lookups), units.FormatCount(c.ReadAdded))
	}
	switch {
	case c.Throttled > 0 && c.ThrottledSec >= 0:
		p.Throttled = fmt.Sprintf("%s pauses, %s in all", units.FormatCount(c.Throttled), u.Dur(c.ThrottledSec))
	case c.Throttled > 0:
		p.Throttled = fmt.Sprintf("%s pauses (their length is unknown: no CONFIG_HZ found)", units.FormatCount(c.Throttled))
	}
	return p
}

// FileRow is one file the workload read, wrote or synced.
type FileRow struct {
	// Path ends in " (deleted)" for a file deleted by the end.
	Path string
	Dev  string
	Ino  uint64
	PID  int
	// Instances counts the files that had this path.
	Instances int
	// SQLite is the file's SQLite kind (db, journal, wal), if it is one.
	SQLite                       string
	Reads, Writes                FileSide
	Syncs, Errors                int64
	SyncSec, BlockedSec, LockSec float64
	// Folded: a directory's files together (model.FileIO.Folded).
	Folded bool
}

// FileSide is a file's reads or its writes.
type FileSide struct {
	Count int64
	// MeanBytes is the mean size of a call (0 without calls).
	MeanBytes float64
	// Pattern is where each call began against the previous one on the
	// same open file: sequential, random, mixed.
	Pattern string
	// Threads counts the threads that made the calls (0 in a record made
	// before they were counted); AtOnce is how many made them at once, on
	// average, while the file was in use (0 in a record made before).
	Threads int64
	AtOnce  float64
}

func fileSide(o model.FileOps) FileSide {
	s := FileSide{Count: o.Count, Pattern: o.Pattern, Threads: o.Threads, AtOnce: o.Concurrency}
	if o.Count > 0 {
		s.MeanBytes = float64(o.Bytes) / float64(o.Count)
	}
	return s
}

// Files lists the files in the record's order (most time in calls
// first), at most n.
func Files(fs []model.FileIO, n int) List[FileRow] {
	l := first(fs, n)
	out := List[FileRow]{Total: l.Total}
	for _, f := range l.Rows {
		path := f.Path
		switch {
		case f.Folded:
			path = FoldedName(path, f.FoldedFiles)
		case f.Deleted:
			path += " (deleted)"
		case f.Gone:
			path += " (gone at the end)"
		case f.FirstPath != "":
			path += " (renamed from " + filepath.Base(f.FirstPath) + ")"
		}
		out.Rows = append(out.Rows, FileRow{Path: path, Dev: f.Dev, Ino: f.Ino, PID: f.PID, Instances: f.Instances, SQLite: f.SQLite,
			Reads: fileSide(f.Reads), Writes: fileSide(f.Writes), Syncs: f.Syncs, Errors: f.Errors,
			SyncSec: f.SyncSec, BlockedSec: f.BlockedSec, LockSec: f.LockSec, Folded: f.Folded})
	}
	return out
}

// TopFiles names the n files first by time blocked on storage, by bytes
// read and written, and by calls (reads, writes, syncs), one line each, as
// filetop sorts by any column; none with fewer than two files. A file's
// entry is its path's last element (the table above has the whole path);
// a directory's entry (the probe's, for files past the ones it keeps one by
// one) is its path and how many files it holds. When the files fall into
// two directories or more (dirs, as Directories grouped them for the view),
// the lines name directories instead: a copy of a tree reads as its
// directories, not as the one file that happened to be largest.
func TopFiles(fs []model.FileIO, dirs []DirRow, n int) []string {
	var items []topItem
	if len(dirs) >= 2 {
		for _, d := range dirs {
			items = append(items, topItem{name: FoldedName(d.Path, d.Files),
				blocked: d.BlockedSec, bytes: float64(d.ReadBytes + d.WriteBytes), calls: float64(d.Reads + d.Writes + d.Syncs)})
		}
	} else {
		for i := range fs {
			f := &fs[i]
			name := filepath.Base(f.Path)
			if f.Folded {
				name = FoldedName(f.Path, f.FoldedFiles)
			}
			items = append(items, topItem{name: name, blocked: f.BlockedSec, bytes: float64(f.Reads.Bytes + f.Writes.Bytes),
				calls: float64(f.Reads.Count + f.Writes.Count + f.Syncs)})
		}
	}
	if len(items) < 2 {
		return nil
	}
	type by struct {
		what  string
		key   func(t *topItem) float64
		shown func(v float64) string
	}
	var out []string
	for _, b := range []by{
		{"blocked on storage", func(t *topItem) float64 { return t.blocked }, Secs},
		{"bytes", func(t *topItem) float64 { return t.bytes }, func(v float64) string { return units.FormatSize(int64(v)) }},
		{"calls", func(t *topItem) float64 { return t.calls }, func(v float64) string { return units.FormatCount(int64(v)) }},
	} {
		idx := make([]int, len(items))
		for i := range idx {
			idx[i] = i
		}
		slices.SortStableFunc(idx, func(i, j int) int { return cmp.Compare(b.key(&items[j]), b.key(&items[i])) })
		var parts []string
		for _, i := range idx[:min(n, len(idx))] {
			if v := b.key(&items[i]); v > 0 {
				parts = append(parts, fmt.Sprintf("%s %s", items[i].name, b.shown(v)))
			}
		}
		if len(parts) > 0 {
			out = append(out, "most "+b.what+": "+strings.Join(parts, ", "))
		}
	}
	return out
}

// topItem is a file or a directory TopFiles ranks.
type topItem struct {
	name                  string
	blocked, bytes, calls float64
}

// DirRow is the files of one directory and the directories below it
// together, as du sums them.
type DirRow struct {
	Path string
	// Files counts the files: the paths, the files that had each path
	// (Instances), and those the probe counted by directory.
	Files                                 int64
	Reads, Writes, ReadBytes, WriteBytes  int64
	Syncs                                 int64
	CallSec, SyncSec, BlockedSec, LockSec float64
}

// Directories groups the files by directory when the files table has
// more than n entries (files is how many files they stand for): at the deepest level of the tree where they fall
// into n groups or fewer (the top level when none does), most time in calls
// first. nil with n files or fewer. A copy of a tree of 20,000 files reads
// as the few directories it went to.
func Directories(fs []model.FileIO, n int) (dirs []DirRow, files int64) {
	// parts are each entry's directory's names; nil for an entry with no
	// absolute path ("(other directories)", a path the probe could not
	// name), which is a group of its own.
	parts := make([][]string, len(fs))
	deepest := 0
	for i, f := range fs {
		files += fileCount(f)
		dir := f.Path
		if !f.Folded {
			dir = filepath.Dir(f.Path)
		}
		if strings.HasPrefix(dir, "/") {
			parts[i] = strings.Split(strings.Trim(dir, "/"), "/")
			deepest = max(deepest, len(parts[i]))
		}
	}
	if len(fs) <= n {
		return nil, files // the files table lists them all
	}
	key := func(i, depth int) string {
		p := parts[i]
		if p == nil {
			return fs[i].Path
		}
		return "/" + strings.Join(p[:min(depth, len(p))], "/")
	}
	depth := 1
	for d := deepest; d >= 1; d-- {
		seen := map[string]bool{}
		for i := range fs {
			seen[key(i, d)] = true
		}
		if len(seen) <= n {
			depth = d
			break
		}
	}
	at := map[string]int{}
	for i, f := range fs {
		k := key(i, depth)
		j, ok := at[k]
		if !ok {
			j = len(dirs)
			at[k] = j
			dirs = append(dirs, DirRow{Path: k})
		}
		d := &dirs[j]
		d.Files += fileCount(f)
		d.Reads += f.Reads.Count
		d.Writes += f.Writes.Count
		d.ReadBytes += f.Reads.Bytes
		d.WriteBytes += f.Writes.Bytes
		d.Syncs += f.Syncs
		d.CallSec += f.Reads.CallSec + f.Writes.CallSec
		d.SyncSec += f.SyncSec
		d.BlockedSec += f.BlockedSec
		d.LockSec += f.LockSec
	}
	slices.SortStableFunc(dirs, func(a, b DirRow) int {
		return cmp.Or(cmp.Compare(b.CallSec+b.SyncSec, a.CallSec+a.SyncSec), strings.Compare(a.Path, b.Path))
	})
	return dirs, files
}

// Queue says, for a file that threads read or wrote at once (1.5 or more
// on average while it was in use), how many and what it cost them:
// "writers at once: 9.8 on average of 16 threads; 6.1s waiting on locks";
// "" otherwise, or for a directory's files together.
func Queue(f FileRow) string {
	if f.Folded {
		return ""
	}
	var parts []string
	for _, x := range []struct {
		who string
		s   FileSide
	}{{"readers", f.Reads}, {"writers", f.Writes}} {
		if x.s.AtOnce >= queueAtOnce {
			parts = append(parts, fmt.Sprintf("%s at once: %.1f on average of %d threads", x.who, x.s.AtOnce, x.s.Threads))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	if f.LockSec > 0 {
		parts = append(parts, Secs(f.LockSec)+" waiting on locks")
	}
	return strings.Join(parts, "; ")
}

// queueAtOnce is the mean number of threads in calls on one file from
// which Queue speaks of them.
const queueAtOnce = 1.5

// FoldedName names a directory's files together: "/srv/dst/ (1,203
// files)".
func FoldedName(dir string, files int64) string {
	if strings.HasPrefix(dir, "/") && dir != "/" {
		dir += "/"
	}
	if files == 1 {
		return dir + " (1 file)"
	}
	return fmt.Sprintf("%s (%s files)", dir, units.FormatCount(files))
}

// Dirs says n directories: "1 directory", "12 directories".
func Dirs(n int) string {
	if n == 1 {
		return "1 directory"
	}
	return fmt.Sprintf("%d directories", n)
}

// fileCount is how many files an entry of the files table stands for.
func fileCount(f model.FileIO) int64 {
	if f.Folded {
		return f.FoldedFiles
	}
	return int64(max(f.Instances, 1))
}

// SQLitePages is the workload's SQLite files mapped to pages.
type SQLitePages struct {
	// Events counts the reads and writes of SQLite files.
	Events   int64
	Files    []model.SQLiteFile
	ByType   []PageRow
	ByObject []PageRow
	// Patterns are the sequences the transactions wrote, most common
	// first; Transactions the first transactions seen.
	Patterns     []TxRow
	Transactions []TxRow
	Notes        []string
}

// PageRow counts the operations on one page type (Kind and Type set) or
// one table or index (Object set).
type PageRow struct {
	Kind, Type, Object                   string
	Reads, Writes, ReadBytes, WriteBytes int64
	// RandomPct is the share of random operations in percent, "" with
	// none to judge.
	RandomPct string
}

// TxRow is a transaction's steps, or a sequence of steps and how many
// transactions made it (Count).
type TxRow struct {
	Count int64
	TID   int
	// Steps are joined by arrows.
	Steps string
}

// SQLitePagesOf builds the SQLite page tables.
func SQLitePagesOf(q *model.SQLiteIO) SQLitePages {
	s := SQLitePages{Events: q.Events, Files: q.Files, Notes: q.Notes}
	page := func(p model.SQLitePages) PageRow {
		return PageRow{Kind: p.Kind, Type: p.Type, Object: p.Object, Reads: p.Reads, Writes: p.Writes,
			ReadBytes: p.ReadBytes, WriteBytes: p.WriteBytes, RandomPct: RandomPct(p)}
	}
	for _, p := range q.ByType {
		s.ByType = append(s.ByType, page(p))
	}
	for _, p := range q.ByObject {
		s.ByObject = append(s.ByObject, page(p))
	}
	for _, p := range q.Patterns {
		s.Patterns = append(s.Patterns, TxRow{Count: p.Count, Steps: strings.Join(p.Steps, " → ")})
	}
	for _, tx := range q.Transactions {
		s.Transactions = append(s.Transactions, TxRow{TID: tx.TID, Steps: strings.Join(tx.Steps, " → ")})
	}
	return s
}

// RandomPct is the share of random page operations in percent, "" with
// none to judge.
func RandomPct(p model.SQLitePages) string {
	n := p.Sequential + p.Random
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%.0f", float64(p.Random)/float64(n)*100)
}

// Statements is the SQL statements table (observe --sql): the statements
// that took the most time first, at most n of them.
type Statements struct {
	Rows []StatementRow
	// More counts the statements not listed.
	More int
	// Transactions are the kinds of transaction, most time first (as
	// many as statements are listed), TxMore those not listed.
	Transactions []TransactionRow
	TxMore       int
	// Attributed says what share of the workload's file calls, and of
	// SQLite's, were made under a statement.
	Attributed string
	Notes      []string
}

// TransactionRow is one kind of transaction's line: how many, their
// time, their syncs each, and their statements in order.
type TransactionRow struct {
	Count, Total, P50, P99, Max string
	SyncsEach, SyncTime         string
	// Statements joins the texts with " ; ", "(+N more)" past the
	// eighth.
	Statements string
}

// StatementRow is one statement's line: its executions and time, and
// every file's calls made under it (SyncTime: theirs), with the SQLite
// page type it moved most.
type StatementRow struct {
	Text                 string
	PID                  int
	Execs, Rows          string
	Total, P50, P99      string
	Reads, Writes, Syncs string
	SyncTime, Written    string
	TopPages             string // e.g. "db table-leaf 80%"
	// ReadIn is the pages its reads brought into the page cache (from
	// the device), "" with none; Faults its page faults (mmap reads).
	ReadIn, Faults string
	// States is where its executions' time went, largest first, e.g.
	// "sleep 72%, cpu 11%, cpu-wait 9%"; "" when not timed by state.
	States string
	// Locks are its lock waits by type, e.g. "transactionid 2,900 in
	// 3.31s"; "" with none.
	Locks string
	// NestedIn is the statement it ran inside (a PostgreSQL function's
	// statement: its caller's text), "" at top level.
	NestedIn string
}

// StatementsOf builds the statements table.
func StatementsOf(q *model.SQLStatements, n int) Statements {
	s := Statements{Notes: q.Notes}
	sqlite := q.Unattributed.Reads + q.Unattributed.Writes + q.Unattributed.Syncs
	for _, st := range q.Statements {
		sqlite += st.Reads + st.Writes + st.Syncs
	}
	s.Attributed = fmt.Sprintf("%.1f%% of the workload's %s file calls made under one", q.CallsShare*100, units.FormatCount(q.FileCalls))
	if sqlite > 0 {
		s.Attributed += fmt.Sprintf("; %.1f%% of its %s SQLite file calls, %.1f%% of their bytes", q.AttributedShare*100, units.FormatCount(sqlite), q.AttributedBytesShare*100)
	}
	for i, st := range q.Statements {
		if i >= n {
			s.More = len(q.Statements) - n
			break
		}
		c := st.Calls
		r := StatementRow{Text: st.Text, PID: st.PID, Execs: units.FormatCount(st.Execs),
			Reads: units.FormatCount(c.Reads), Writes: units.FormatCount(c.Writes), Syncs: units.FormatCount(c.Syncs),
			SyncTime: units.FormatNs(c.SyncSec * 1e9), Written: units.FormatSize(c.WriteBytes)}
		if st.Kind == "statement" {
			r.Rows = units.FormatCount(max(st.Steps-st.Done, 0))
			r.Total = units.FormatNs(st.Sec * 1e9)
			r.P50, r.P99 = units.FormatNs(st.P50Sec*1e9), units.FormatNs(st.P99Sec*1e9)
		}
		r.States = statesOf(st.Time)
		r.NestedIn = st.NestedIn
		var locks []string
		for _, w := range st.LockWaits {
			locks = append(locks, fmt.Sprintf("%s %s in %s", w.Type, units.FormatCount(w.Waits), units.FormatNs(w.Sec*1e9)))
		}
		r.Locks = strings.Join(locks, ", ")
		if c.ReadMissPages > 0 {
			r.ReadIn = units.FormatCount(c.ReadMissPages)
		}
		if c.Faults > 0 {
			r.Faults = units.FormatCount(c.Faults)
		}
		if len(st.Pages) > 0 {
			p := st.Pages[0]
			if ops := st.Reads + st.Writes; ops > 0 {
				r.TopPages = fmt.Sprintf("%s %s %.0f%%", p.Kind, p.Type, float64(p.Reads+p.Writes)/float64(ops)*100)
			}
		}
		s.Rows = append(s.Rows, r)
	}
	for i, x := range q.Transactions {
		if i >= n {
			s.TxMore = len(q.Transactions) - n
			break
		}
		text := strings.Join(x.Statements, " ; ")
		if more := x.StatementCount - len(x.Statements); more > 0 {
			text += fmt.Sprintf(" ; (+%d more)", more)
		}
		r := TransactionRow{Count: units.FormatCount(x.Count), Total: units.FormatNs(x.Sec * 1e9),
			P50: units.FormatNs(x.P50Sec * 1e9), P99: units.FormatNs(x.P99Sec * 1e9), Max: units.FormatNs(x.MaxSec * 1e9),
			SyncTime: units.FormatNs(x.SyncSec * 1e9), Statements: text}
		if x.Count > 0 {
			r.SyncsEach = fmt.Sprintf("%.2f", float64(x.Syncs)/float64(x.Count))
		}
		s.Transactions = append(s.Transactions, r)
	}
	return s
}

// statesOf writes a statement's time by state as shares of its sum, the
// largest first, the states of at least 1% (at most four).
func statesOf(m map[string]float64) string {
	var total float64
	for _, v := range m {
		total += v
	}
	if total <= 0 {
		return ""
	}
	cats := slices.Clone(model.Categories)
	slices.SortStableFunc(cats, func(a, b string) int { return cmp.Compare(m[b], m[a]) })
	var out []string
	for _, c := range cats {
		if len(out) == 4 || m[c] < 0.01*total {
			break
		}
		out = append(out, fmt.Sprintf("%s %.0f%%", c, m[c]/total*100))
	}
	return strings.Join(out, ", ")
}
