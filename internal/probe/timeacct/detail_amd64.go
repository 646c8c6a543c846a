//go:build amd64

package timeacct

import (
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/perfsleuth/perfsleuth/internal/probe"
	"github.com/perfsleuth/perfsleuth/internal/sysinfo"
)

// readFiles lists the synced files, most time first.
func (p *Probe) readFiles(res *Result) error {
	mounts := sysinfo.DeviceMounts()
	var k timeacctTaFileKey
	var f timeacctTaFile
	it := p.objs.Files.Iterate()
	for it.Next(&k, &f) {
		if f.Count == 0 {
			continue // entered but not finished in the window
		}
		dev := sysinfo.DevString(k.Dev)
		res.Files = append(res.Files, SyncedFile{
			Path: probe.PathOf(mounts[dev], dev, f.Names, f.Depth, f.Truncated != 0), Dev: dev, Ino: k.Ino, PID: int(f.Tgid),
			Count: f.Count, DataSync: f.Datasync, TotalNs: f.TotalNs, MaxNs: f.MaxNs,
		})
	}
	slices.SortFunc(res.Files, func(a, b SyncedFile) int { return cmpDesc(a.TotalNs, b.TotalNs) })
	if err := it.Err(); err != nil {
		return fmt.Errorf("map files: %w", err)
	}
	return nil
}

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
