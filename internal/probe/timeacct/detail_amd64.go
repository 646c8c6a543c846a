//go:build amd64

package timeacct

import (
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/cilium/ebpf"
	"github.com/perfsleuth/perfsleuth/internal/probe"
	"github.com/perfsleuth/perfsleuth/internal/sysinfo"
)

// readFiles lists the synced files, most time first.
func (p *Probe) readFiles(res *Result) error {
	mounts := sysinfo.DeviceMounts()
	var k timeacctTaFileKey
	var f timeacctTaFile
	for _, m := range []struct {
		name   string
		folded bool
		it     *ebpf.MapIterator
	}{{"files", false, p.objs.Files.Iterate()}, {"sync_dirs", true, p.objs.SyncDirs.Iterate()}} {
		for m.it.Next(&k, &f) {
			if f.Count == 0 {
				continue // entered but not finished in the window
			}
			dev := sysinfo.DevString(k.Dev)
			sf := SyncedFile{
				Path: probe.PathOf(mounts[dev], dev, f.Names, f.Depth, f.Truncated != 0), Dev: dev, Ino: k.Ino, PID: int(f.Tgid),
				Count: f.Count, DataSync: f.Datasync, TotalNs: f.TotalNs, MaxNs: f.MaxNs, gen: f.Generation,
			}
			if m.folded {
				sf.Folded, sf.FoldedFiles = true, uint64(f.Files)
				if k.Ino == 0 && k.Dev == 0 {
					sf.Path, sf.Dev = "(other directories)", ""
				}
			}
			res.Files = append(res.Files, sf)
		}
		if err := m.it.Err(); err != nil {
			return fmt.Errorf("map %s: %w", m.name, err)
		}
	}
	// Each file as it is at the end: PostgreSQL syncs a WAL segment as
	// xlogtemp.PID, then renames it.
	var names []probe.FileName
	var at []int
	for i, f := range res.Files {
		if !f.Folded {
			names = append(names, probe.FileName{Path: f.Path, Dev: f.Dev, Ino: f.Ino, Gen: f.gen})
			at = append(at, i)
		}
	}
	probe.FinalPaths(names)
	for j, n := range names {
		f := &res.Files[at[j]]
		f.Path, f.FirstPath, f.Gone = n.Path, n.FirstPath, n.Gone
	}
	slices.SortFunc(res.Files, func(a, b SyncedFile) int { return cmpDesc(a.TotalNs, b.TotalNs) })
	return nil
}

// fileDir marks a key of sync_dirs (bpf/timeacct.h TA_FILE_DIR).
const fileDir = 1

// readSyscalls lists the per-thread syscall counts, most time first.
func (p *Probe) readSyscalls(res *Result) error {
	if !p.cfg.Syscalls {
		return nil
	}
	var k timeacctTaSysKey
	var v timeacctTaSysStats
	it := p.objs.SysStats.Iterate()
	for it.Next(&k, &v) {
		name := sysNames[int(k.Nr)]
		if name == "" {
			name = "syscall_" + strconv.Itoa(int(k.Nr))
		}
		res.SyscallStats = append(res.SyscallStats, SyscallStats{
			PID: int(v.Tgid), TID: int(k.Tid), Nr: int(k.Nr), Name: name,
			Count: v.Count, Errors: v.Errors, TotalNs: v.TotalNs, MaxNs: v.MaxNs, LatencyLog2Ns: v.Slots,
		})
	}
	slices.SortFunc(res.SyscallStats, func(a, b SyscallStats) int { return cmpDesc(a.TotalNs, b.TotalNs) })
	if err := it.Err(); err != nil {
		return fmt.Errorf("map sys_stats: %w", err)
	}
	return nil
}

// readOffCPU reads the off-CPU time per stack pair, adding the sleeps still
// open at end (entries holds the live threads' entries), and resolves the
// stack ids to addresses.
func (p *Probe) readOffCPU(res *Result, entries []timeacctTaThread, end uint64) error {
	sums := map[timeacctTaOffcpuKey]timeacctTaOffcpu{}
	var k timeacctTaOffcpuKey
	var v timeacctTaOffcpu
	it := p.objs.Offcpu.Iterate()
	for it.Next(&k, &v) {
		sums[k] = v
	}
	var errs []error
	if err := it.Err(); err != nil {
		errs = append(errs, fmt.Errorf("map offcpu: %w", err))
	}
	for i := range entries {
		e := &entries[i]
		if e.Exited != 0 || e.State != stateBlocked || end <= e.LastNs {
			continue
		}
		key := timeacctTaOffcpuKey{Tgid: e.Tgid, Tid: e.Tid, Cat: e.Cat, Kstack: e.Kstack, Ustack: e.Ustack}
		s := sums[key]
		s.Ns += end - e.LastNs
		s.Count++
		sums[key] = s
	}
	lookup := probe.StackLookup(p.objs.Stacks)
	for key, s := range sums {
		o := OffCPUStack{PID: int(key.Tgid), TID: int(key.Tid), Category: int(key.Cat % NumCategories), Ns: s.Ns, Count: s.Count}
		o.Kernel, o.KernelErr = lookup(key.Kstack)
		o.User, o.UserErr = lookup(key.Ustack)
		res.OffCPU = append(res.OffCPU, o)
	}
	slices.SortFunc(res.OffCPU, func(a, b OffCPUStack) int { return cmpDesc(a.Ns, b.Ns) })
	return errors.Join(errs...)
}

// cmpDesc orders larger first.
func cmpDesc(a, b uint64) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}

// readLocks reads the lock waits by what they waited on, with the files'
// paths and the walked stacks as addresses; the waits still under way at
// end are added as closeThread adds their time.
func (p *Probe) readLocks(res *Result, entries []timeacctTaThread, end uint64) error {
	sums := map[timeacctTaLockKey]timeacctTaLock{}
	var k timeacctTaLockKey
	var v timeacctTaLock
	var errs []error
	it := p.objs.Locks.Iterate()
	for it.Next(&k, &v) {
		sums[k] = v
	}
	if err := it.Err(); err != nil {
		errs = append(errs, fmt.Errorf("map locks: %w", err))
	}
	for i := range entries {
		e := &entries[i]
		from := max(e.LastNs, p.startNs)
		if e.Exited != 0 || e.State != stateBlocked || e.Cat != CatLock || end <= from || e.LastNs == 0 {
			continue
		}
		// As lock_key has it: a wait lock_begin did not see begin is
		// of no file or futex, its stacks not walked.
		key := timeacctTaLockKey{Obj: e.LockObj, Tgid: e.Tgid, Dev: e.LockDev, Kstack: e.LockKstack, Act: e.Act, Tid: e.Tid}
		if e.LockSet == 0 {
			key.Obj, key.Dev, key.Kstack = 0, 0, lockNotWalked
		}
		s, ok := sums[key]
		if !ok {
			s.Ustack, s.Hstack = lockNotWalked, lockNotWalked
		}
		s.Ns += end - from
		s.Count++
		if s.Ustack < 0 && e.LockSet != 0 && e.LockUstack != lockNotWalked {
			s.Ustack = e.LockUstack
		}
		sums[key] = s
	}
	mounts := sysinfo.DeviceMounts()
	paths := map[timeacctTaFileKey]string{}
	var fk timeacctTaFileKey
	var f timeacctTaLockFile
	fit := p.objs.LockFiles.Iterate()
	for fit.Next(&fk, &f) {
		dev := sysinfo.DevString(fk.Dev)
		paths[fk] = probe.PathOf(mounts[dev], dev, f.Names, f.Depth, f.Truncated != 0)
	}
	if err := fit.Err(); err != nil {
		errs = append(errs, fmt.Errorf("map lock_files: %w", err))
	}
	lookup := probe.StackLookup(p.objs.LockStacks)
	for key, s := range sums {
		if s.Ns == 0 {
			continue
		}
		l := LockWait{PID: int(key.Tgid), TID: int(key.Tid), Act: int(key.Act), Dev: sysinfo.DevString(key.Dev), Obj: key.Obj, Ns: s.Ns, Count: s.Count,
			Walked: key.Kstack != lockNotWalked, Futex: int(key.Act) == actFutex}
		if key.Dev != 0 {
			l.Path = paths[timeacctTaFileKey{Ino: key.Obj, Dev: key.Dev}]
		}
		if l.Walked {
			l.Kernel, l.KernelErr = lookup(key.Kstack)
		}
		if s.Ustack != lockNotWalked {
			l.User, _ = lookup(s.Ustack)
		}
		if s.Hstack != lockNotWalked {
			l.Holder, _ = lookup(s.Hstack)
		}
		res.Locks = append(res.Locks, l)
	}
	slices.SortFunc(res.Locks, func(a, b LockWait) int { return cmpDesc(a.Ns, b.Ns) })
	return errors.Join(errs...)
}

// lockNotWalked is TA_LOCK_NOT_WALKED of bpf/timeacct.h: a lock wait
// whose stacks were not walked (at most one walk every 50 ms per
// thread); actFutex is TA_ACT_FUTEX.
const (
	lockNotWalked = -2000
	actFutex      = 6
)

// readTickStacks reads the stacks the ticks walked, most samples first.
func (p *Probe) readTickStacks(res *Result) error {
	var k timeacctTaTickKey
	var n uint64
	lookup := probe.StackLookup(p.objs.TickStacks)
	it := p.objs.TickCounts.Iterate()
	for it.Next(&k, &n) {
		s := TickStack{PID: int(k.Tgid), TID: int(k.Tid), Samples: n}
		if k.Kstack != lockNotWalked {
			s.Kernel, s.KernelErr = lookup(k.Kstack)
		}
		s.User, s.UserErr = lookup(k.Ustack)
		res.TickStacks = append(res.TickStacks, s)
	}
	slices.SortFunc(res.TickStacks, func(a, b TickStack) int { return cmpDesc(a.Samples, b.Samples) })
	if err := it.Err(); err != nil {
		return fmt.Errorf("map tick_counts: %w", err)
	}
	return nil
}
