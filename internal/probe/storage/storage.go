// Package storage is the eBPF storage probe: block devices (what iostat -x
// and biolatency -Q show, per device and op), the workload's page-cache use,
// and with Config.Files the workload's files, per file, and the reads and
// writes of SQLite files one by one. It follows the processes of a running
// timeacct probe, whose maps it shares. bpf/storage.bpf.c has the kernel
// side; docs/probes.md lists the hooks and their cost.
package storage

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

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
			a.Pattern = pattern(a.Sequential, a.Random)
			a.Threads = max(a.Threads, b.Threads)
			a.Sizes = mergeRanges(a.Sizes, b.Sizes)
		}
	}
	return out
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
	"dirty_folio": 7, "balance_dirty_pages": 7,
	"io_uring_complete": 8,
}

// Costs are what a run of each program group costs when its filter stops
// it (not the workload's, or not a call it follows), in ns, measured on
// this host by Calibrate. The block programs have no filter: all their
// time is timed by the programs themselves.
type Costs struct {
	Files       bool
	UntrackedNs [NumPrograms]float64
}

// finalPaths names each file as it is at the run's end: a file whose first
// name now names another file, or none, is looked for by its inode in the
// directory it was in (renames stay in their directory: a WAL segment, a
// temporary file made whole, a rotated log), and is given that name with
// its first one kept, or marked gone. gens are the files' inode
// generations as first seen (0: unknown): a file system reuses a deleted
// file's inode number for the next file it makes, and the generation
// tells the two apart where the file system reports it
// (FS_IOC_GETVERSION: ext4, btrfs, ...). Each directory is read once, at
// most finalPathDirs of them, and a directory of more than
// finalPathEntries entries is not searched (the file then keeps its first
// name).
func finalPaths(files []model.FileIO, gens []uint32) {
	dirs := map[string]map[uint64]string{}
	for i := range files {
		f := &files[i]
		if f.Deleted || !filepath.IsAbs(f.Path) {
			continue
		}
		var st unix.Stat_t
		err := unix.Stat(f.Path, &st)
		if err == nil && st.Ino == f.Ino && devOf(st.Dev) == f.Dev {
			continue
		}
		if err != nil && !errors.Is(err, unix.ENOENT) {
			continue // not ours to see (EACCES): keep the first name
		}
		dir := filepath.Dir(f.Path)
		names, ok := dirs[dir]
		if !ok {
			if len(dirs) >= finalPathDirs {
				continue
			}
			names = inodeNames(dir, f.Dev)
			dirs[dir] = names
		}
		if names == nil {
			// The directory is gone too (rm -rf), or could not be read.
			if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
				f.Gone = true
			}
			continue
		}
		if name, ok := names[f.Ino]; ok {
			path := filepath.Join(dir, name)
			if i < len(gens) && gens[i] != 0 {
				if g, ok := generation(path); ok && g != gens[i] {
					f.Gone = true // a later file given its inode
					continue
				}
			}
			f.FirstPath, f.Path = f.Path, path
			continue
		}
		f.Gone = true
	}
}

// finalPathDirs and finalPathEntries bound finalPaths' reading.
const (
	finalPathDirs    = 1000
	finalPathEntries = 100_000
)

// inodeNames maps the inodes of dir's regular files on device dev to their
// names; nil when dir cannot be read or holds more than finalPathEntries.
func inodeNames(dir, dev string) map[uint64]string {
	d, err := os.Open(dir)
	if err != nil {
		return nil
	}
	defer d.Close()
	var st unix.Stat_t
	if unix.Fstat(int(d.Fd()), &st) != nil || devOf(st.Dev) != dev {
		return nil
	}
	entries, err := d.ReadDir(finalPathEntries + 1)
	// An empty directory reads as io.EOF: searched, and nothing there.
	if (err != nil && !errors.Is(err, io.EOF)) || len(entries) > finalPathEntries {
		return nil
	}
	names := map[uint64]string{}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		if s, ok := info.Sys().(*syscall.Stat_t); ok {
			names[s.Ino] = e.Name()
		}
	}
	return names
}

// devOf is a stat's device as the record writes it, "major:minor".
func devOf(dev uint64) string { return fmt.Sprintf("%d:%d", unix.Major(dev), unix.Minor(dev)) }

// fsIocGetVersion is FS_IOC_GETVERSION, _IOR('v', 1, long), which
// golang.org/x/sys/unix does not name.
const fsIocGetVersion = 2<<30 | (strconv.IntSize/8)<<16 | 'v'<<8 | 1

// generation is path's inode generation, false when the file system does
// not report it.
func generation(path string) (uint32, bool) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOATIME, 0)
	if err != nil {
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		return 0, false
	}
	defer unix.Close(fd)
	// The kernel writes an int.
	v, err := unix.IoctlGetUint32(fd, fsIocGetVersion)
	if err != nil {
		return 0, false
	}
	return v, true
}
