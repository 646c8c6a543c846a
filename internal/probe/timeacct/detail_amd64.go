//go:build amd64

package timeacct

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

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
			Path: PathOf(mounts[dev], dev, f.Names, f.Depth, f.Truncated != 0), Dev: dev, Ino: k.Ino, PID: int(f.Tgid),
			Count: f.Count, DataSync: f.Datasync, TotalNs: f.TotalNs, MaxNs: f.MaxNs,
		})
	}
	slices.SortFunc(res.Files, func(a, b SyncedFile) int { return cmpDesc(a.TotalNs, b.TotalNs) })
	if err := it.Err(); err != nil {
		return fmt.Errorf("map files: %w", err)
	}
	return nil
}

// PathOf joins a file's names, kept leaf first by the kernel side
// (bpf/path.bpf.h), below the mount point of its filesystem ("[dev 8:1]"
// when none is known).
func PathOf(mount, dev string, names [8][64]uint8, depth uint32, truncated bool) string {
	var b strings.Builder
	if mount == "" {
		b.WriteString("[dev " + dev + "]")
	} else if mount != "/" {
		b.WriteString(mount)
	}
	if truncated {
		b.WriteString("/...")
	}
	for i := int(min(depth, uint32(len(names)))) - 1; i >= 0; i-- {
		b.WriteString("/" + unix.ByteSliceToString(names[i][:]))
	}
	if b.Len() == 0 {
		return "/"
	}
	return b.String()
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
	lookup := StackLookup(p.objs.Stacks)
	for key, s := range sums {
		o := OffCPUStack{PID: int(key.Tgid), TID: int(key.Tid), Category: int(key.Cat % NumCategories), Ns: s.Ns, Count: s.Count}
		o.Kernel, o.KernelErr = lookup(key.Kstack)
		o.User, o.UserErr = lookup(key.Ustack)
		res.OffCPU = append(res.OffCPU, o)
	}
	slices.SortFunc(res.OffCPU, func(a, b OffCPUStack) int { return cmpDesc(a.Ns, b.Ns) })
	return errors.Join(errs...)
}

// StackLookup returns a function that reads stack id from m, a
// BPF_MAP_TYPE_STACK_TRACE map, once per id: the frames up to the first
// zero, or why there are none (StackErr for an id < 0, a lost stack).
func StackLookup(m *ebpf.Map) func(id int32) ([]uint64, string) {
	stacks := map[int32][]uint64{}
	return func(id int32) ([]uint64, string) {
		if id < 0 {
			return nil, StackErr(id)
		}
		if st, ok := stacks[id]; ok {
			return st, ""
		}
		raw := make([]uint64, m.ValueSize()/8)
		if err := m.Lookup(uint32(id), raw); err != nil {
			return nil, "stack lost: " + err.Error()
		}
		n := slices.Index(raw, 0)
		if n < 0 {
			n = len(raw)
		}
		stacks[id] = raw[:n:n]
		return stacks[id], ""
	}
}

// StackErr says why bpf_get_stackid returned no stack (id < 0).
func StackErr(id int32) string {
	switch {
	case id == -1:
		return "not taken: asleep since before the probe attached"
	case -id == int32(unix.EFAULT):
		return "no stack (a kernel thread has no user stack)"
	case -id == int32(unix.ENOMEM), -id == int32(unix.EEXIST):
		return "stack map full: stack not kept"
	}
	return fmt.Sprintf("stack not taken (error %d)", -id)
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
