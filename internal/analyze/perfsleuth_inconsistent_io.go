package analyze

import (
	"fmt"
	"strings"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/units"
)

// perfsleuth.inconsistent's checks of the IO figures: sync calls, block
// devices, the page cache and the files table, against each other and
// against the time accounting.
//
// Tolerances: sums of the same nanoseconds within sumToleranceSec or
// sumToleranceFrac, as the accounting's (only rounding separates them);
// a count that must not exceed another within roundSec when in seconds.
// Time in the driver against the time it is held to within driverOverlap
// (and sumToleranceSec): at depth 1 a request issued on one CPU may take
// its clock reading a moment before the completion of the one before it
// on another CPU, and a requeued request is issued again at a depth no
// histogram records, so stays that should be apart can overlap by a few
// microseconds each; 1% holds thousands of such microseconds against
// requests of tens of them and more.
const (
	roundSec      = 1e-6
	driverOverlap = 0.01
)

// blockSums: every histogram of a block op holds each of its requests once
// (the depth histogram each one issued), and a request's time in the
// driver is within its whole time.
func blockSums(run *model.Run) []string {
	if run.Storage == nil {
		return nil
	}
	w := window(run)
	var out []string
	for _, d := range run.Storage.Devices {
		if b := d.DriverBusySec; b != nil && w > 0 && *b > w*(1+sumToleranceFrac)+sumToleranceSec {
			out = append(out, fmt.Sprintf("%s: busy in the driver %s, longer than the window, %s", devName(d),
				units.FormatNs(*b*1e9), units.FormatNs(w*1e9)))
		}
		for _, o := range d.Ops {
			for _, h := range []struct {
				name string
				rs   []model.Range
				want int64
			}{{"size", o.Size, o.Requests}, {"queue", o.Queue, o.Requests}, {"service", o.Service, o.Requests}, {"depth", o.Depth, o.Issued}} {
				// Records made before requests issued were counted
				// (v0.x) have none: their depth has nothing to hold to.
				if h.name == "depth" && o.Issued == 0 {
					continue
				}
				if got := histTotal(h.rs); got != h.want {
					out = append(out, fmt.Sprintf("%s %s: %s requests, and its %s histogram holds %s", devName(d), o.Op,
						units.FormatCount(h.want), h.name, units.FormatCount(got)))
				}
			}
			if o.WorkloadLatencyMeanSec > 0 && o.WorkloadServiceMeanSec > o.WorkloadLatencyMeanSec*1.0001 {
				out = append(out, fmt.Sprintf("%s %s: the workload's requests spent %s in the driver on average, more than their whole time, %s",
					devName(d), o.Op, units.FormatNs(o.WorkloadServiceMeanSec*1e9), units.FormatNs(o.WorkloadLatencyMeanSec*1e9)))
			}
		}
	}
	return out
}

// depthOneBusy: a disk whose every request was issued with no other in the
// driver served them one after the other, so their times in the driver
// (service) are apart, and add up to no more than the time the disk had a
// request in the driver (the probe's busy time, which at depth 1 is their
// union exactly: bpf/storage.bpf.c add_busy). Deeper, the busy time is an
// undercount and nothing is held. Ops whose requests were not all issued
// (a preflush, which the flush machinery serves on its behalf) are left
// out: their service is not time in the driver. Regression: fio's 4 KiB
// reads at iodepth 1 read a mean service of 142 µs beside a busy time of
// 55 µs a request.
func depthOneBusy(run *model.Run) []string {
	if run.Storage == nil {
		return nil
	}
	var out []string
	for _, d := range run.Storage.Devices {
		if d.DriverBusySec == nil {
			continue
		}
		var service float64
		var n int64
		apart := true
		for _, o := range d.Ops {
			apart = apart && depthOne(o.Depth) == histTotal(o.Depth)
			if o.Issued == o.Requests {
				service += o.ServiceMeanSec * float64(o.Requests)
				n += o.Requests
			}
		}
		busy := *d.DriverBusySec
		if !apart || n == 0 || service <= busy*(1+driverOverlap)+sumToleranceSec {
			continue
		}
		out = append(out, fmt.Sprintf("%s: its %s requests, each issued with no other in the driver, spent %s there (%s each on average), and the disk was busy in the driver %s (%s a request)",
			devName(d), units.FormatCount(n), units.FormatNs(service*1e9), units.FormatNs(service/float64(n)*1e9),
			units.FormatNs(busy*1e9), units.FormatNs(busy/float64(n)*1e9)))
	}
	return out
}

// driftNote is how the storage probe's note about a drifted in-driver
// count begins, for records made before the count was kept per disk
// (BlockDevice.DriverDrift).
const driftNote = "in-driver counts drifted"

// driverDrift: the storage probe's count of a disk's requests in the driver
// matches its request entries that say they are there when it stops; a
// difference means the depth histograms (taken from that count) are off.
func driverDrift(run *model.Run) []string {
	if run.Storage == nil {
		return nil
	}
	var out []string
	for _, d := range run.Storage.Devices {
		if d.DriverDrift != 0 {
			out = append(out, fmt.Sprintf("%s: the block probe counted %d more requests in the driver when it stopped than its request entries hold there: its depth histograms are off by about that much",
				devName(d), d.DriverDrift))
		}
	}
	if len(out) > 0 {
		return out
	}
	for _, n := range run.Storage.Notes {
		if strings.Contains(n, driftNote) {
			out = append(out, n)
		}
	}
	return out
}

// writtenBack: the page cache's "written to disk for its files" is the
// block table's write bytes of the workload and of writeback on its
// behalf, the same requests.
func writtenBack(run *model.Run) []string {
	st := run.Storage
	if st == nil || st.Cache == nil {
		return nil
	}
	var sum int64
	for _, d := range st.Devices {
		for _, o := range d.Ops {
			if o.Op == "write" {
				sum += o.WorkloadBytes + o.WritebackBytes
			}
		}
	}
	if st.Cache.WrittenBackBytes == sum {
		return nil
	}
	return []string{fmt.Sprintf("the page cache says %s written to disk for the workload's files, the block table's writes of the workload and its writeback %s",
		units.FormatSize(st.Cache.WrittenBackBytes), units.FormatSize(sum))}
}

// allThreads sums the accounting's seconds per category over every thread
// listed, idle ones and exited ones included: the time any part of the
// workload's threads can be held to.
func allThreads(ta *model.TimeAccounting) map[string]float64 {
	sum := map[string]float64{}
	for _, t := range ta.Threads {
		for c, s := range t.Seconds {
			sum[c] += s
		}
	}
	return sum
}

// over says whether a part exceeds the whole it is of, beyond rounding.
func over(part, whole float64) bool {
	return part > whole+max(sumToleranceSec, sumToleranceFrac*whole)
}

// syncSplits: each kind of sync call's split (its calls' time by category,
// the difference of the thread's accounting at the call's entry and exit,
// bpf/timeacct.bpf.c thread_cats) adds up to the summed latency of the
// calls split; those calls are among the calls counted, and their time
// within the counted calls' time; and the split of all kinds, category by
// category, is part of the accounting's time in that category over all its
// threads (idle ones too: the split is of every tracked thread's calls).
// A call begun before the window opened is split from the opening only
// (the accounting counts nothing before it), so the split may fall short
// of the calls' latency by up to one call per thread then alive (at most
// the peak), each at most the longest call; it never exceeds it.
// Regression: the sync table said 7.1 s of fdatasync, the accounting 2.6 s
// of storage-sync, and nothing said how they add up.
// splitSlackSec is SPLIT_SLACK_NS of bpf/timeacct.bpf.c: how far one sync
// call's split may be from its latency and still be split.
const splitSlackSec = 1e-6

func syncSplits(ta *model.TimeAccounting) []string {
	if ta == nil || len(ta.Syncs) == 0 {
		return nil
	}
	var out []string
	split := map[string]float64{}
	for _, s := range ta.Syncs {
		if s.SplitCount > s.Count {
			out = append(out, fmt.Sprintf("%s: %s calls split by category, of %s calls counted", s.Kind,
				units.FormatCount(s.SplitCount), units.FormatCount(s.Count)))
		}
		if s.SplitSec > s.TotalSec+roundSec {
			out = append(out, fmt.Sprintf("%s: the calls split took %.6fs, more than all %s calls counted, %.6fs", s.Kind,
				s.SplitSec, units.FormatCount(s.Count), s.TotalSec))
		}
		if s.SplitCount == 0 {
			continue
		}
		var sum float64
		for c, v := range s.Split {
			sum += v
			split[c] += v
		}
		// Each call is split only when its parts add up to its latency
		// within splitSlackSec (bpf/timeacct.bpf.c SPLIT_SLACK_NS), so
		// the calls together may be that much apart per call.
		tol := max(sumToleranceSec, sumToleranceFrac*s.SplitSec, splitSlackSec*float64(s.SplitCount))
		if edge := float64(max(ta.PeakThreads, 1)) * longest(s.Buckets); sum > s.SplitSec+tol || sum < s.SplitSec-tol-edge {
			out = append(out, fmt.Sprintf("%s: its split by category adds up to %.3fs, and the %s calls split took %.3fs", s.Kind,
				sum, units.FormatCount(s.SplitCount), s.SplitSec))
		}
	}
	all := allThreads(ta)
	for _, c := range model.Categories {
		if over(split[c], all[c]) {
			out = append(out, fmt.Sprintf("the sync calls' split has %.3fs of %s, more than the accounting's %.3fs of %s over all its threads",
				split[c], c, all[c], c))
		}
	}
	return out
}

// longest is the upper end of a latency histogram's highest bucket that
// holds a call, in seconds.
func longest(bs []model.Bucket) float64 {
	var ns int64
	for _, b := range bs {
		if b.Count > 0 {
			ns = max(ns, b.HighNs+1)
		}
	}
	return float64(ns) / 1e9
}

// filesWithinAccounting: the files table's blocked and locked time are the
// differences of the calling thread's storage and lock time (timeacct's
// threads map) at each call's entry and exit (bpf/storage.bpf.c
// exit_call), and a thread makes one call at a time: summed over files they
// are part of the accounting's storage-read + storage-write + storage-sync
// and lock over all its threads. Regression: Redis' fdatasync read 3.2 s
// blocked in the files table beside 3.3 s of storage-sync and 5.9 s in the
// sync table, with nothing to say which holds which.
func filesWithinAccounting(run *model.Run) []string {
	st, ta := run.Storage, run.TimeAccounting
	if st == nil || len(st.Files) == 0 || ta == nil || ta.Source != "ebpf" {
		return nil
	}
	var blocked, locked float64
	for _, f := range st.Files {
		blocked += f.BlockedSec
		locked += f.LockSec
	}
	all := allThreads(ta)
	storage := all[model.CatStorageRead] + all[model.CatStorageWrite] + all[model.CatStorageSync]
	var out []string
	if over(blocked, storage) {
		out = append(out, fmt.Sprintf("the files table has %.3fs blocked on storage, more than the accounting's %.3fs of storage-read, storage-write and storage-sync over all its threads", blocked, storage))
	}
	if over(locked, all[model.CatLock]) {
		out = append(out, fmt.Sprintf("the files table has %.3fs waiting on locks, more than the accounting's %.3fs of lock over all its threads", locked, all[model.CatLock]))
	}
	return out
}

// readServiceWithinCalls: a synchronous workload's device time never
// exceeds its own IO latency. Held where the record shows that every read
// request of the workload was issued and waited for inside one of its read
// calls (directReadsOnly) and that its read requests went to a disk one at
// a time (its own depth histogram all at 1): each request's time in the
// driver then lies inside a read call and apart from the others', so the
// requests' summed service is at most the read calls' summed latency.
// Totals, not means: reads that hit the page cache or read past the end
// make calls without requests, and a mean over them says nothing. Writes
// are not held: an fsync issues the file's pages at any depth, and
// sync_file_range and an ext4 close after a truncate start writes that no
// call waits for. Two requests at the window's edges may sit in calls the
// count does not hold (begun before it, ended after it). Regression: fio
// psync O_DIRECT reads at iodepth 1 read a device service mean of 142 µs
// where fio's own completion latency was 55 µs.
func readServiceWithinCalls(run *model.Run) []string {
	st, ta := run.Storage, run.TimeAccounting
	if st == nil || ta == nil || ta.Source != "ebpf" || !directReadsOnly(st, ta) {
		return nil
	}
	calls, callSec, what := readCalls(st, ta)
	if calls == 0 {
		return nil
	}
	var out []string
	for _, d := range st.Devices {
		for _, o := range d.Ops {
			own := histTotal(o.WorkloadDepth)
			if o.Op != "read" || o.WorkloadRequests == 0 || own != o.WorkloadRequests || depthOne(o.WorkloadDepth) != own {
				continue
			}
			service := o.WorkloadServiceMeanSec * float64(o.WorkloadRequests)
			if service <= callSec*(1+driverOverlap)+sumToleranceSec+2*o.WorkloadServiceMeanSec {
				continue
			}
			out = append(out, fmt.Sprintf("%s: the workload's %s read requests, one at a time, spent %s in the driver (%s each), more than %s took in all, %s (%s calls, %s each)",
				devName(d), units.FormatCount(o.WorkloadRequests), units.FormatNs(service*1e9), units.FormatNs(o.WorkloadServiceMeanSec*1e9),
				what, units.FormatNs(callSec*1e9), units.FormatCount(calls), units.FormatNs(callSec/float64(calls)*1e9)))
		}
	}
	return out
}

// directReadsOnly says whether every read request the workload issued was
// waited for inside one of its read calls:
//   - it put no page into the page cache (no pages added in or outside
//     read calls, counted with --storage only, no fault on a file, no
//     readahead): no buffered read
//     missed, and no readahead, fadvise or madvise WILLNEED started reads
//     it went on without; its read requests were direct reads, or reads
//     the page cache does not hold (swap-ins, some file systems'
//     metadata), which the next test finds;
//   - every wait of its threads that a read completion ended, or that the
//     accounting calls storage-read, was in a read call: not a fault's
//     swap-in, not an open's or a stat's metadata read (this needs the
//     wait-for graph);
//   - it made no asynchronous IO: none counted (io_uring always, libaio
//     with --storage), none seen as an activity or a syscall.
func directReadsOnly(st *model.StorageIO, ta *model.TimeAccounting) bool {
	c := st.Cache
	if c == nil || c.PagesNotCounted || c.ReadAdded+c.OtherAdded+c.FaultLookups+c.ReadaheadSync+c.ReadaheadAsync > 0 || len(st.AsyncIO) > 0 || ta.Waits == nil {
		return false
	}
	for _, w := range ta.Waits {
		if w.Activity == "aio" {
			return false
		}
		if (w.Category == model.CatStorageRead || w.Waker == model.WakerDevice && w.Op == "read") && w.Activity != "read" {
			return false
		}
	}
	for _, t := range ta.Threads {
		if t.CPUByActivity["aio"] > 0 {
			return false
		}
	}
	for _, s := range ta.Syscalls {
		if strings.HasPrefix(s.Name, "io_") { // io_submit, io_getevents, io_uring_enter, ...
			return false
		}
	}
	return true
}

// readFamily are the syscalls a direct read is issued and waited in
// (timeacct's read activity).
var readFamily = map[string]bool{"read": true, "pread64": true, "readv": true, "preadv": true, "preadv2": true}

// readCalls are the workload's read calls, their count and summed latency,
// and what they are, for the evidence: every read call of its threads with
// --syscalls (nothing dropped); else the files table's reads, which hold
// regular files only, and so only when they cover the requests: with no
// buffered read at all (no page looked up), the table's read bytes are
// direct reads', which move what the requests move; fewer bytes there
// than in the requests mean reads of a block device (fio on /dev/sdX), or
// of another file the table does not see, made requests too.
func readCalls(st *model.StorageIO, ta *model.TimeAccounting) (n int64, sec float64, what string) {
	if len(ta.Syscalls) > 0 {
		if ta.Dropped > 0 {
			return 0, 0, ""
		}
		for _, s := range ta.Syscalls {
			if readFamily[s.Name] {
				n += s.Count
				sec += s.TotalSec
			}
		}
		return n, sec, "its read calls (read, pread64, readv, preadv; --syscalls)"
	}
	// Buffered reads are told by the pages they looked up: unknown when
	// the pages were not counted.
	if !st.FilesTraced || st.Dropped.FileOps > 0 || st.Cache == nil || st.Cache.PagesNotCounted || st.Cache.Lookups > 0 {
		return 0, 0, ""
	}
	var bytes, requested int64
	for _, f := range st.Files {
		n += f.Reads.Count
		sec += f.Reads.CallSec
		bytes += f.Reads.Bytes
	}
	for _, d := range st.Devices {
		for _, o := range d.Ops {
			if o.Op == "read" {
				requested += o.WorkloadBytes
			}
		}
	}
	if bytes < requested {
		return 0, 0, ""
	}
	return n, sec, "its read calls on files (the files table)"
}
