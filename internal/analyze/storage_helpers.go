package analyze

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// Helpers the storage findings share (they read run.Storage, the storage
// probe's view of devices, page cache, files and SQLite pages).

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
	// issued with no other request of the disk in the driver; ownIssued
	// and ownDepth1 the same over the workload's own requests and its own
	// others in the driver (what its iodepth is).
	issued, depth1       int64
	ownIssued, ownDepth1 int64
	// queue and service are the means over the data requests (reads,
	// writes, discards: a flush command's time is the cache's, not a
	// request's), in seconds; ownService over the workload's own.
	queue, service, ownService float64
	// workload: some requests were the workload's (its own or the
	// writeback of its files), so the device is on its path.
	workload bool
}

// dataOp: the ops whose requests move data; flush and preflush requests
// are the device's cache flushes.
func dataOp(op string) bool { return op != "flush" && op != "preflush" }

func summarizeDevice(d model.BlockDevice) deviceSummary {
	var s deviceSummary
	var timed, ownTimed int64
	for _, op := range d.Ops {
		s.requests += op.Requests
		s.bytes += op.Bytes
		s.workload = s.workload || op.WorkloadRequests+op.WritebackRequests > 0
		if !dataOp(op.Op) {
			continue
		}
		s.queue += op.QueueMeanSec * float64(op.Requests)
		s.service += op.ServiceMeanSec * float64(op.Requests)
		timed += op.Requests
		s.ownService += op.WorkloadServiceMeanSec * float64(op.WorkloadRequests)
		ownTimed += op.WorkloadRequests
		s.issued, s.depth1 = s.issued+histTotal(op.Depth), s.depth1+depthOne(op.Depth)
		s.ownIssued, s.ownDepth1 = s.ownIssued+histTotal(op.WorkloadDepth), s.ownDepth1+depthOne(op.WorkloadDepth)
	}
	if timed > 0 {
		s.queue /= float64(timed)
		s.service /= float64(timed)
	}
	if ownTimed > 0 {
		s.ownService /= float64(ownTimed)
	}
	return s
}

func histTotal(rs []model.Range) int64 {
	var n int64
	for _, r := range rs {
		n += r.Count
	}
	return n
}

// depthOne counts the requests of a depth histogram issued at depth 1: the
// depth counts the request itself, so the first log2 bucket, [0, 1], is
// depth 1.
func depthOne(rs []model.Range) int64 {
	var n int64
	for _, r := range rs {
		if r.High <= 1 {
			n += r.Count
		}
	}
	return n
}

// attributesStorage: the accounting tells storage waits apart (the /proc
// fallback puts them in "unknown").
func attributesStorage(ta *model.TimeAccounting) bool {
	return ta != nil && ta.Source != "procfs" && busySeconds(ta) > 0
}

// window is the storage probe's window in seconds (its counts' rates are
// over it), else the observation's, 0 when unknown.
func window(run *model.Run) float64 {
	if st := run.Storage; st != nil && st.WindowSec > 0 {
		return st.WindowSec
	}
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

// deviceUtil is the share of the window d was busy: the time with a
// request in the driver, measured by the probe, when the record has it;
// else iostat's %util from /proc/diskstats, which counts in jiffies and
// can be far off either way for requests far shorter than a jiffy. label
// says which, for the evidence.
func deviceUtil(d model.BlockDevice) (pct float64, label string) {
	if d.DriverUtilPct != nil {
		return *d.DriverUtilPct, "busy"
	}
	return d.UtilPct, "util"
}
