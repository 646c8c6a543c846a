// Package storage is the eBPF storage probe: block devices (what iostat -x
// and biolatency -Q show, per device and op), the workload's page-cache use,
// and with Config.Files the workload's files, per file, and the reads and
// writes of SQLite files one by one. It follows the processes of a running
// timeacct probe, whose maps it shares. bpf/storage.bpf.c has the kernel
// side; docs/probes.md lists the hooks and their cost.
package storage

import (
	"cmp"
	"maps"
	"slices"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/sqlitetrace"
)

// Ops names the block request operations, indexed as ST_OP_*.
var Ops = [...]string{"read", "write", "flush", "discard", "other", "preflush", "write-zeroes"}

// Config says what to follow and what to collect.
type Config struct {
	// Files adds the per-file view and the SQLite events: it hooks the
	// read, write and sync system calls, which costs every syscall of the
	// machine some time (docs/probes.md).
	Files bool
	// Costs are the calibrated costs of the programs' runs stopped by
	// their filters (Calibrate); nil leaves those runs out of the
	// estimate of the probe's CPU time, with a note.
	Costs *Costs
	// CostsNote says why Costs is nil (Calibrate's error), for the note.
	CostsNote string
	// OnEvent receives the SQLite events, in order, from one goroutine;
	// it must copy what it keeps of Event.Head.
	OnEvent func(sqlitetrace.Event)
}

// ranges turns log2 slots into buckets: slot i holds values in
// [2^i, 2^(i+1)-1] times unit, slot 0 from 0. Empty slots at both ends are
// left out.
func ranges(slots []uint64, unit int64) []model.Range {
	first, last := -1, -1
	for i, c := range slots {
		if c != 0 {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first < 0 {
		return nil
	}
	out := make([]model.Range, 0, last-first+1)
	for i := first; i <= last; i++ {
		low := int64(1) << i
		if i == 0 {
			low = 0
		}
		out = append(out, model.Range{Low: low * unit, High: (int64(1)<<(i+1))*unit - 1, Count: int64(slots[i])})
	}
	return out
}

// pattern sums up a file's sequential and random calls.
func pattern(seq, random int64) string {
	n := seq + random
	switch {
	case n < 1:
		return ""
	case float64(seq) >= 0.8*float64(n):
		return "sequential"
	case float64(seq) <= 0.2*float64(n):
		return "random"
	}
	return "mixed"
}

// hitRatio is 1 - added/lookups, floored at 0 (readahead can add more pages
// than were looked up); -1 without lookups.
func hitRatio(lookups, added int64) float64 {
	if lookups <= 0 {
		return -1
	}
	r := 1 - float64(added)/float64(lookups)
	if r < 0 {
		return 0
	}
	return r
}

// mergeByPath sums the files that had the same path (a rollback journal is
// created and deleted in every transaction, often under a new inode);
// deleted files stay apart.
func mergeByPath(fs []model.FileIO) []model.FileIO {
	at := map[string]int{}
	var out []model.FileIO
	for _, f := range fs {
		i, ok := at[f.Path]
		if !ok || f.Deleted {
			if !f.Deleted {
				at[f.Path] = len(out)
			}
			out = append(out, f)
			continue
		}
		m := &out[i]
		m.Instances += f.Instances
		m.Syncs += f.Syncs
		m.SyncSec += f.SyncSec
		m.BlockedSec += f.BlockedSec
		m.LockSec += f.LockSec
		m.Errors += f.Errors
		if m.SQLite == "" {
			m.SQLite = f.SQLite
		}
		for _, p := range [][2]*model.FileOps{{&m.Reads, &f.Reads}, {&m.Writes, &f.Writes}} {
			a, b := p[0], p[1]
			a.Count += b.Count
			a.Bytes += b.Bytes
			a.Sequential += b.Sequential
			a.Random += b.Random
			a.CallSec += b.CallSec
			// Files that had one path in turn (a rollback journal made
			// anew in each transaction): their busy times add up.
			if busy := a.BusySec + b.BusySec; busy > 0 {
				a.Concurrency = (a.Concurrency*a.BusySec + b.Concurrency*b.BusySec) / busy
			}
			a.BusySec += b.BusySec
			a.Pattern = pattern(a.Sequential, a.Random)
			a.Threads = max(a.Threads, b.Threads)
			a.Sizes = mergeRanges(a.Sizes, b.Sizes)
		}
	}
	return out
}

// concurrency is how many calls were in progress at once on average while
// one was: their summed time over the time with one in progress; 0
// without it. At least one: the busy time is the union of the calls'
// intervals, never more than their sum (the max only keeps rounding off
// it). The kernel's count errs the other way when it errs: a call entering
// just as the last one leaves can cut the busy time short, reading more at
// once.
func concurrency(callSec, busySec float64) float64 {
	if busySec <= 0 || callSec <= 0 {
		return 0
	}
	return max(1, callSec/busySec)
}

// mergeRanges adds two histograms of the same log2 buckets.
func mergeRanges(a, b []model.Range) []model.Range {
	sum := map[int64]model.Range{}
	for _, r := range append(slices.Clone(a), b...) {
		s := sum[r.Low]
		s.Low, s.High, s.Count = r.Low, r.High, s.Count+r.Count
		sum[r.Low] = s
	}
	out := slices.Collect(maps.Values(sum))
	slices.SortFunc(out, func(x, y model.Range) int { return cmp.Compare(x.Low, y.Low) })
	return out
}

// NumPrograms is the number of program groups the probe counts runs of
// (bpf/storage.h ST_NUM_PROGS): the page-cache programs count as one.
const NumPrograms = 9

// ProgramNames name them, in the order of bpf/storage.h's ST_PROG_*.
var ProgramNames = [NumPrograms]string{"block_rq_insert", "block_io_start", "block_rq_issue", "block_rq_complete",
	"block_merge", "sys_enter", "sys_exit", "page_cache", "io_uring_complete"}

// progIndex maps each BPF program to its group in ProgramNames.
var progIndex = map[string]int{
	"block_rq_insert": 0, "block_io_start": 1, "block_rq_issue": 2, "block_rq_requeue": 2, "block_rq_complete": 3,
	"block_bio_backmerge": 4, "block_bio_frontmerge": 4, "block_rq_merge": 4, "sys_enter": 5, "sys_exit": 6,
	"filemap_get_pages": 7, "filemap_add": 7, "filemap_fault": 7, "sync_ra": 7, "async_ra": 7,
	"dirty_folio": 7, "dirty_inode_enqueue": 7, "dirty_inode_start": 7, "balance_dirty_pages": 7,
	"io_uring_complete": 8, "io_uring_submit_req": 8,
}

// cachePrograms are the page-cache programs (the group ST_PROG_CACHE).
var cachePrograms = []string{"filemap_get_pages", "filemap_add", "filemap_fault", "sync_ra", "async_ra",
	"dirty_folio", "dirty_inode_enqueue", "dirty_inode_start", "balance_dirty_pages"}

// Costs are what a run of each program group costs when its filter stops
// it (not the workload's, or not a call it follows), in ns, measured on
// this host by Calibrate. The block programs have no filter: all their
// time is timed by the programs themselves.
type Costs struct {
	Files       bool
	UntrackedNs [NumPrograms]float64
}
