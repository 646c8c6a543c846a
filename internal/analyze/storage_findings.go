package analyze

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/units"
)

// The storage findings read run.Storage (the storage probe's view of
// devices, page cache, files and SQLite pages). They live in one file,
// not one file per rule, because they share the helpers at the end.

// Random small file calls. 16 KiB or less on average counts as small:
// sysbench fileio's default block (--file-block-size=16384, the field case
// of its rndwr against seqwr) and InnoDB's page; fio's IOPS tests use 4 KiB.
// At these sizes the device's cost per request, not its bandwidth, sets the
// pace, and readahead and request merging, which serve sequential calls, do
// not help. 1000 calls: fewer cost little even at a millisecond each. 50%:
// the random small calls are most of the workload's file calls, not a side
// stream beside a sequential one.
const (
	randomSmallBytes = 16 << 10
	randomSmallCalls = 1000
	randomSmallShare = 0.5
)

func ioRandomSmall(run *model.Run) *model.Finding {
	s := run.Storage
	if s == nil || len(s.Files) == 0 {
		return nil
	}
	type stream struct {
		file         string
		op           string
		calls, bytes int64
	}
	var total, small int64
	var hits []stream
	for _, f := range s.Files {
		for _, st := range []struct {
			op  string
			ops model.FileOps
		}{{"reads", f.Reads}, {"writes", f.Writes}} {
			total += st.ops.Count
			if st.ops.Pattern == "random" && st.ops.Count > 0 && st.ops.Bytes <= randomSmallBytes*st.ops.Count {
				small += st.ops.Count
				hits = append(hits, stream{fileName(f), st.op, st.ops.Count, st.ops.Bytes})
			}
		}
	}
	if small < randomSmallCalls || float64(small) < randomSmallShare*float64(total) {
		return nil
	}
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].calls > hits[j].calls })
	w := window(run)
	ev := []string{fmt.Sprintf("%s of %s file calls (%.0f%%) were random, of %s or less on average",
		units.FormatCount(small), units.FormatCount(total), float64(small)/float64(total)*100, units.FormatSize(randomSmallBytes))}
	for _, h := range hits[:min(3, len(hits))] {
		ev = append(ev, fmt.Sprintf("%s: %s random %s of %s on average%s",
			h.file, units.FormatCount(h.calls), h.op, units.FormatSize(h.bytes/h.calls), perSec(h.calls, w, units.FormatCount)))
	}
	ev = append(ev, "each call pays the device's per-request cost, and readahead and merging cannot help: make calls larger or sequential (batch neighbouring records, sort by offset), or keep the data in memory; fio with rw=randwrite against rw=write at this block size measures the gap on this device")
	return &model.Finding{
		Severity: "info",
		Summary:  fmt.Sprintf("%.0f%% of the file calls are random and small", float64(small)/float64(total)*100),
		Evidence: ev,
	}
}

// cacheHitRatioMin: below a 90% hit ratio one page in ten the workload reads
// through the page cache comes from the device, and a device read (about
// 100 µs on an SSD, 10 ms on a disk) costs a hundred times or more what
// copying a cached 4 KiB page does (about 1 µs), so that tenth outweighs
// the rest. (The storage probe's tests measure 1.0 for a warm re-read and
// 0.002 for a cold one.) cacheMinLookups: 1000 pages (4 MiB); fewer are a
// program's cold start, a few files read once.
const (
	cacheHitRatioMin = 0.9
	cacheMinLookups  = 1000
)

func cacheMissHeavy(run *model.Run) *model.Finding {
	if run.Storage == nil || run.Storage.Cache == nil {
		return nil
	}
	c := run.Storage.Cache
	if c.HitRatio < 0 || c.Lookups < cacheMinLookups || c.HitRatio >= cacheHitRatioMin {
		return nil
	}
	ev := []string{
		fmt.Sprintf("%s pages looked up by buffered reads, %s pages added to the cache during them: hit ratio %.2f",
			units.FormatCount(c.Lookups), units.FormatCount(c.ReadAdded), c.HitRatio),
		fmt.Sprintf("readahead: %s windows started by a miss, %s by reaching the previous window",
			units.FormatCount(c.ReadaheadSync), units.FormatCount(c.ReadaheadAsync)),
	}
	if ta := run.TimeAccounting; attributesStorage(ta) {
		ev = append(ev, fmt.Sprintf("storage-read %.3fs of %.3fs busy-thread time (%.0f%%)",
			ta.Total[model.CatStorageRead], busySeconds(ta), share(ta, model.CatStorageRead)*100))
	}
	ev = append(ev, "the data is not in, or not kept in, the page cache: a smaller working set or more memory for the cache helps; data read once is better read with direct IO or posix_fadvise(SEQUENTIAL or DONTNEED); a cold-cache experiment (perfsleuth diagnose) shows what the misses cost")
	return &model.Finding{
		Severity: "warning",
		Summary:  fmt.Sprintf("buffered reads miss the page cache: hit ratio %.2f", c.HitRatio),
		Evidence: ev,
	}
}

// throttleShare: dirty-page throttling pauses (balance_dirty_pages) that
// add up to 5% of the busy threads' time. Any pause means the workload
// dirtied pages faster than writeback cleaned them: below the midpoint
// between vm.dirty_background_ratio (10%) and vm.dirty_ratio (20%) the
// kernel does not pause a writer at all. 5% is half the 10% change the
// experiments call material (materialChange): worth a look before it is
// the bottleneck, while a few stray pauses of up to 200 ms (MAX_PAUSE,
// HZ/5 in mm/page-writeback.c) stay below it.
const throttleShare = 0.05

func writebackThrottled(run *model.Run) *model.Finding {
	if run.Storage == nil || run.Storage.Cache == nil {
		return nil
	}
	c := run.Storage.Cache
	// ThrottledSec is -1 when the kernel's HZ, which converts the pauses'
	// jiffies to seconds, is unknown.
	if c.Throttled <= 0 || c.ThrottledSec < 0 {
		return nil
	}
	base, of := 0.0, ""
	if ta := run.TimeAccounting; ta != nil && busySeconds(ta) > 0 {
		// Pauses add up over threads, as busy-thread time does.
		base, of = busySeconds(ta), "busy-thread time"
	} else if w := window(run); w > 0 {
		base, of = w, "the window"
	}
	if base == 0 || c.ThrottledSec < throttleShare*base {
		return nil
	}
	ev := []string{
		fmt.Sprintf("%s dirty-throttling pauses planned to last %.3fs, %.0f%% of %s (%.3fs)",
			units.FormatCount(c.Throttled), c.ThrottledSec, c.ThrottledSec/base*100, of, base),
		fmt.Sprintf("%s pages dirtied, %s written back for the workload's files",
			units.FormatCount(c.Dirtied), units.FormatSize(c.WrittenBackBytes)),
	}
	if ta := run.TimeAccounting; attributesStorage(ta) {
		ev = append(ev, fmt.Sprintf("storage-write %.3fs of busy-thread time, which includes the pauses", ta.Total[model.CatStorageWrite]))
	}
	ev = append(ev, "the workload dirties pages faster than the device writes them back: write less (compress, avoid rewrites), start writeback early (sync_file_range), or use a faster device; raising vm.dirty_ratio only delays the pauses for bursts that fit in memory")
	return &model.Finding{
		Severity: "warning",
		Summary:  fmt.Sprintf("writes were paused by dirty-page throttling for %.0f%% of %s", c.ThrottledSec/base*100, of),
		Evidence: ev,
	}
}

// Device saturation. deviceUtilSaturated: iostat's %util at 90% or more,
// the usual saturation mark in iostat -x reading (a device busy 90% of the
// time leaves requests little chance to find it idle). %util alone misleads
// on devices that serve requests in parallel, so a second, independent
// sign is taken too: requests waited in the kernel's queue at least as long
// as the device took to serve them (biolatency -Q against plain biolatency),
// while at least half of them (deviceDeepShare) found another request in
// flight at issue, the USE method's "average queue length above 1".
// deviceMinRequests: means and histograms of fewer than 1000 requests say
// little, and the queue test needs them.
const (
	deviceUtilSaturated = 90
	deviceDeepShare     = 0.5
	deviceMinRequests   = 1000
)

func deviceSaturated(run *model.Run) *model.Finding {
	if run.Storage == nil {
		return nil
	}
	w := window(run)
	var ev []string
	n, byUtil := 0, false
	for _, d := range run.Storage.Devices {
		ds := summarizeDevice(d)
		if !ds.workload {
			continue
		}
		util := d.UtilPct >= deviceUtilSaturated
		queued := ds.issued >= deviceMinRequests && ds.service > 0 && ds.queue >= ds.service &&
			float64(ds.issued-ds.depth1) >= deviceDeepShare*float64(ds.issued)
		if !util && !queued {
			continue
		}
		n++
		byUtil = byUtil || util && !queued
		line := fmt.Sprintf("%s: %.0f%% util, %s requests%s, %s%s", devName(d), d.UtilPct,
			units.FormatCount(ds.requests), perSec(ds.requests, w, units.FormatCount), units.FormatSize(ds.bytes), perSec(ds.bytes, w, units.FormatSize))
		if ds.service > 0 {
			line += fmt.Sprintf(", mean queue %s, service %s", units.FormatNs(ds.queue*1e9), units.FormatNs(ds.service*1e9))
		}
		if ds.issued > 0 {
			line += fmt.Sprintf(", %.0f%% of requests issued with another in flight", pctOf(ds.issued-ds.depth1, ds.issued))
		}
		ev = append(ev, line)
	}
	if len(ev) == 0 {
		return nil
	}
	if byUtil {
		ev = append(ev, "%util is the share of time with at least one request in flight: a device that serves requests in parallel (SSD, NVMe, RAID, many virtual disks) can show 100% with capacity to spare (iostat(1) says so); compare the queue and service times, or rerun with a higher iodepth to see whether it delivers more")
	}
	ev = append(ev, "requests wait for the device: fewer or larger requests (merging, larger blocks), less data (the page cache, compression), or a faster device; an io-pressure experiment shows whether the workload feels it")
	return &model.Finding{
		Severity: "warning",
		Summary:  fmt.Sprintf("%d %s saturated", n, plural(n, "block device looks", "block devices look")),
		Evidence: ev,
	}
}

// Shallow queue. queueDepth1Share: 90% of the requests issued with none
// other in flight is a device driven as fio drives it with iodepth=1 (a
// synchronous engine, one thread): it serves one request at a time, and
// then %util measures it truly. queueUtilMax: below 70% busy it has time to
// spare even so. queueStorageShare: the busy threads wait on storage 30% of
// their time or more, so that filling the device would pay (by Amdahl's
// law removing 30% speeds the work up by up to 1.43x).
const (
	queueDepth1Share  = 0.9
	queueUtilMax      = 70
	queueStorageShare = 0.3
)

func deviceQueueShallow(run *model.Run) *model.Finding {
	ta := run.TimeAccounting
	if run.Storage == nil || !attributesStorage(ta) {
		return nil
	}
	storage := share(ta, model.CatStorageRead) + share(ta, model.CatStorageWrite) + share(ta, model.CatStorageSync)
	if storage < queueStorageShare {
		return nil
	}
	var ev []string
	for _, d := range run.Storage.Devices {
		ds := summarizeDevice(d)
		if !ds.workload || ds.issued < deviceMinRequests || d.UtilPct >= queueUtilMax ||
			float64(ds.depth1) < queueDepth1Share*float64(ds.issued) {
			continue
		}
		line := fmt.Sprintf("%s: %.0f%% of %s requests issued with no other in flight, %.0f%% util",
			devName(d), pctOf(ds.depth1, ds.issued), units.FormatCount(ds.issued), d.UtilPct)
		if ds.service > 0 {
			line += ", mean service " + units.FormatNs(ds.service*1e9)
		}
		if ds.requests > 0 {
			line += ", " + units.FormatSize(ds.bytes/ds.requests) + " per request on average"
		}
		ev = append(ev, line)
	}
	if len(ev) == 0 {
		return nil
	}
	ev = append(ev,
		fmt.Sprintf("storage-read %.3fs, storage-write %.3fs, storage-sync %.3fs: %.0f%% of %.3fs busy-thread time",
			ta.Total[model.CatStorageRead], ta.Total[model.CatStorageWrite], ta.Total[model.CatStorageSync], storage*100, busySeconds(ta)),
		"the workload waits on storage one request at a time while the device has room: issue requests in parallel (more threads, io_uring or libaio with a queue depth above 1, as fio's iodepth), make them larger, or group commits so that one sync covers more work")
	return &model.Finding{
		Severity: "warning",
		Summary:  fmt.Sprintf("the workload waits on storage %.0f%% of its time but keeps the device's queue at depth 1", storage*100),
		Evidence: ev,
	}
}

// SQLite journal overhead. sqliteMinTx: 100 transactions; fewer are a
// schema setup or one batch. journalBytesRatio: the journal or WAL wrote
// as many bytes as the database did: every changed page is written twice,
// which is what single-row transactions do (the field case of SQLite
// single-row inserts: a rollback journal writes the old copy of each page
// it changes; a WAL appends a new copy of a page each transaction that
// changes it). syncsPerTx: two or more syncs per transaction is the
// rollback journal's commit (journal, then database; synchronous=FULL
// syncs the journal twice); WAL with synchronous=NORMAL makes none.
const (
	sqliteMinTx       = 100
	journalBytesRatio = 1.0
	syncsPerTx        = 2.0
)

func sqliteJournalOverhead(run *model.Run) *model.Finding {
	if run.Storage == nil || run.Storage.SQLite == nil || len(run.Storage.SQLite.Patterns) == 0 {
		return nil
	}
	q := run.Storage.SQLite
	var txs, syncs int64
	for _, p := range q.Patterns {
		txs += p.Count
		syncs += p.Count * syncSteps(p.Steps)
	}
	if txs < sqliteMinTx {
		return nil
	}
	written := map[string]int64{}
	for _, t := range q.ByType {
		written[t.Kind] += t.WriteBytes
	}
	logBytes := written["journal"] + written["wal"]
	perTx := float64(syncs) / float64(txs)
	// Without database writes (a WAL not checkpointed in the window) the
	// log has nothing to be compared with.
	byBytes := written["db"] > 0 && float64(logBytes) >= journalBytesRatio*float64(written["db"])
	bySyncs := perTx >= syncsPerTx
	if !byBytes && !bySyncs {
		return nil
	}
	top := q.Patterns[0]
	for _, p := range q.Patterns {
		if p.Count > top.Count {
			top = p
		}
	}
	var kinds []string
	for _, k := range []string{"db", "journal", "wal"} {
		if b, ok := written[k]; ok {
			kinds = append(kinds, k+" "+units.FormatSize(b))
		}
	}
	ev := []string{
		fmt.Sprintf("most common transaction (%s of %s): %s", units.FormatCount(top.Count), units.FormatCount(txs), strings.Join(top.Steps, " → ")),
		fmt.Sprintf("%.1f syncs per transaction on average", perTx),
	}
	if len(kinds) > 0 {
		ev = append(ev, "bytes written: "+strings.Join(kinds, ", "))
	}
	ev = append(ev, "the log costs as much as the data: group rows into larger transactions; journal_mode=WAL with synchronous=NORMAL syncs only at checkpoints")
	sev, what := "info", "the journal or WAL writes as many bytes as the database"
	if bySyncs {
		sev, what = "warning", fmt.Sprintf("each SQLite transaction makes %.1f syncs", perTx)
	}
	return &model.Finding{Severity: sev, Summary: what, Evidence: ev}
}

// indexMinWrites: 100 index page writes; fewer are a schema setup. At
// parity (index pages written as often as table pages, the field case of
// single-row inserts into a table with one index) the indexes double the
// page writes of every row.
const indexMinWrites = 100

func sqliteIndexWriteAmplification(run *model.Run) *model.Finding {
	if run.Storage == nil || run.Storage.SQLite == nil {
		return nil
	}
	q := run.Storage.SQLite
	var index, table, indexWAL int64
	for _, t := range q.ByType {
		typ := t.Type
		if t.Kind == "wal" {
			inner, ok := strings.CutPrefix(typ, "frame-page (")
			if !ok {
				continue
			}
			typ = strings.TrimSuffix(inner, ")")
		} else if t.Kind != "db" {
			continue
		}
		// Page 1 ("header+table-leaf") is written for the change counter,
		// not for rows, so it is not counted as a table page.
		switch typ {
		case "index-leaf", "index-interior":
			index += t.Writes
			if t.Kind == "wal" {
				indexWAL += t.Writes
			}
		case "table-leaf", "table-interior":
			table += t.Writes
		}
	}
	if index < indexMinWrites || index < table {
		return nil
	}
	ev := []string{fmt.Sprintf("index pages written %s times (%s of them as WAL frames), table pages %s times",
		units.FormatCount(index), units.FormatCount(indexWAL), units.FormatCount(table))}
	names := indexNames(q)
	objs := append([]model.SQLitePages(nil), q.ByObject...)
	sort.SliceStable(objs, func(i, j int) bool { return objs[i].Writes > objs[j].Writes })
	var listed []string
	for _, o := range objs {
		if len(listed) == 3 || o.Writes == 0 {
			break
		}
		if names[o.Object] {
			listed = append(listed, fmt.Sprintf("%s %s writes (%s)", o.Object, units.FormatCount(o.Writes), units.FormatSize(o.WriteBytes)))
		}
	}
	if len(listed) > 0 {
		ev = append(ev, "indexes by page writes: "+strings.Join(listed, ", "))
	}
	ev = append(ev, "every index is a b-tree of its own that each insert, delete and update of an indexed column writes: drop indexes no query needs, and group rows into larger transactions so that each index page takes many entries per write")
	return &model.Finding{
		Severity: "info",
		Summary:  fmt.Sprintf("SQLite writes index pages %.1fx as often as table pages", float64(index)/float64(max(table, 1))),
		Evidence: ev,
	}
}

// syncSteps counts the syncs in a transaction's steps ("sync journal ×2").
func syncSteps(steps []string) int64 {
	var n int64
	for _, s := range steps {
		if !strings.HasPrefix(s, "sync ") {
			continue
		}
		n++
		if _, times, ok := strings.Cut(s, " ×"); ok {
			if v, err := strconv.ParseInt(times, 10, 64); err == nil && v > 1 {
				n += v - 1
			}
		}
	}
	return n
}

// indexNames are the objects the transactions' steps name as owners of
// index pages ("db index-leaf contacts_name", "wal frame (index-leaf
// contacts_name p12)"): ByObject does not say which objects are indexes.
func indexNames(q *model.SQLiteIO) map[string]bool {
	names := map[string]bool{}
	add := func(steps []string) {
		for _, s := range steps {
			for _, typ := range []string{"index-leaf ", "index-interior "} {
				_, rest, ok := strings.Cut(s, typ)
				if !ok {
					continue
				}
				f := strings.Fields(rest)
				if len(f) == 0 {
					continue
				}
				// Not an owner: a page number ("p12") or a fold ("×3").
				name := strings.TrimSuffix(f[0], ")")
				if _, err := strconv.ParseUint(strings.TrimPrefix(name, "p"), 10, 32); err != nil && !strings.HasPrefix(name, "×") {
					names[name] = true
				}
			}
		}
	}
	for _, p := range q.Patterns {
		add(p.Steps)
	}
	for _, t := range q.Transactions {
		add(t.Steps)
	}
	return names
}

// deviceSummary sums a device's operations.
type deviceSummary struct {
	requests, bytes int64
	// issued counts the requests of the depth histograms, depth1 those
	// issued with no other request in flight.
	issued, depth1 int64
	// queue and service are the request-weighted means, in seconds.
	queue, service float64
	// workload: some requests were the workload's (its own or the
	// writeback of its files), so the device is on its path.
	workload bool
}

func summarizeDevice(d model.BlockDevice) deviceSummary {
	var s deviceSummary
	var timed int64
	for _, op := range d.Ops {
		s.requests += op.Requests
		s.bytes += op.Bytes
		if op.ServiceMeanSec > 0 {
			s.queue += op.QueueMeanSec * float64(op.Requests)
			s.service += op.ServiceMeanSec * float64(op.Requests)
			timed += op.Requests
		}
		for _, r := range op.Depth {
			s.issued += r.Count
			// Depth counts the request itself, so the first log2 bucket,
			// [0, 1], is depth 1.
			if r.High <= 1 {
				s.depth1 += r.Count
			}
		}
		s.workload = s.workload || op.WorkloadRequests+op.WritebackRequests > 0
	}
	if timed > 0 {
		s.queue /= float64(timed)
		s.service /= float64(timed)
	}
	return s
}

// attributesStorage: the accounting tells storage waits apart (the /proc
// fallback puts them in "unknown").
func attributesStorage(ta *model.TimeAccounting) bool {
	return ta != nil && ta.Source != "procfs" && busySeconds(ta) > 0
}

// window is the observation window's length in seconds, 0 when unknown.
func window(run *model.Run) float64 {
	if o := run.Observation; o != nil && o.DurationSec > 0 {
		return o.DurationSec
	}
	if ta := run.TimeAccounting; ta != nil && ta.WindowSec > 0 {
		return ta.WindowSec
	}
	return 0
}

// perSec is " (N/s)" over the window, N formatted by format, or "" when
// the window is unknown.
func perSec(n int64, w float64, format func(int64) string) string {
	if w <= 0 {
		return ""
	}
	return fmt.Sprintf(" (%s/s)", format(int64(float64(n)/w)))
}

func pctOf(n, of int64) float64 {
	if of <= 0 {
		return 0
	}
	return float64(n) / float64(of) * 100
}

func devName(d model.BlockDevice) string {
	if d.Name != "" {
		return d.Name
	}
	return "device " + d.Dev
}

func fileName(f model.FileIO) string {
	if f.Path != "" {
		return f.Path
	}
	return fmt.Sprintf("inode %d on %s", f.Ino, f.Dev)
}
