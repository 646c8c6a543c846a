//go:build amd64

package timeacct

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// readFiles lists the synced files, most time first.
func (p *Probe) readFiles(res *Result) error {
	mounts := readMounts("/proc/self/mountinfo")
	var k timeacctTaFileKey
	var f timeacctTaFile
	it := p.objs.Files.Iterate()
	for it.Next(&k, &f) {
		if f.Count == 0 {
			continue // entered but not finished in the window
		}
		dev := fmt.Sprintf("%d:%d", k.Dev>>20, k.Dev&0xfffff)
		res.Files = append(res.Files, SyncedFile{
			Path: filePath(mounts[dev], dev, &f), Dev: dev, Ino: k.Ino, PID: int(f.Tgid),
			Count: f.Count, DataSync: f.Datasync, TotalNs: f.TotalNs, MaxNs: f.MaxNs,
		})
	}
	slices.SortFunc(res.Files, func(a, b SyncedFile) int { return cmpDesc(a.TotalNs, b.TotalNs) })
	if err := it.Err(); err != nil {
		return fmt.Errorf("map files: %w", err)
	}
	return nil
}

// filePath joins a synced file's names, kept leaf first by the kernel side,
// below the mount point of its filesystem ("[dev 8:1]" when none is known).
func filePath(mount, dev string, f *timeacctTaFile) string {
	var b strings.Builder
	if mount == "" {
		b.WriteString("[dev " + dev + "]")
	} else if mount != "/" {
		b.WriteString(mount)
	}
	if f.Truncated != 0 {
		b.WriteString("/...")
	}
	for i := int(min(f.Depth, uint32(len(f.Names)))) - 1; i >= 0; i-- {
		b.WriteString("/" + unix.ByteSliceToString(f.Names[i][:]))
	}
	if b.Len() == 0 {
		return "/"
	}
	return b.String()
}

// readMounts maps "major:minor" to the mount point of the filesystem's root
// (the first mount whose root is "/"; a device mounted only below its root,
// a bind mount, maps to that mount with its root prefixed).
func readMounts(path string) map[string]string {
	out := map[string]string{}
	f, err := os.Open(path)
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// 36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		dev, root, point := fields[2], unescapeMount(fields[3]), unescapeMount(fields[4])
		if root == "/" {
			if _, ok := out[dev]; !ok || strings.HasPrefix(out[dev], "!") {
				out[dev] = point
			}
		} else if _, ok := out[dev]; !ok {
			// Only a bind mount of a subdirectory seen so far: paths from
			// the filesystem's root would be wrong below it; mark it.
			out[dev] = "!" + point
		}
	}
	for dev, point := range out {
		if strings.HasPrefix(point, "!") {
			out[dev] = ""
		}
	}
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
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
	stacks := map[int32][]uint64{}
	lookup := func(id int32) ([]uint64, string) {
		if id < 0 {
			return nil, stackErr(id)
		}
		if st, ok := stacks[id]; ok {
			return st, ""
		}
		var raw [2 * maxFrames]uint64
		if err := p.objs.Stacks.Lookup(uint32(id), &raw); err != nil {
			return nil, "stack lost: " + err.Error()
		}
		n := slices.Index(raw[:], 0)
		if n < 0 {
			n = len(raw)
		}
		stacks[id] = raw[:n:n]
		return stacks[id], ""
	}
	for key, s := range sums {
		o := OffCPUStack{PID: int(key.Tgid), TID: int(key.Tid), Category: int(key.Cat % NumCategories), Ns: s.Ns, Count: s.Count}
		o.Kernel, o.KernelErr = lookup(key.Kstack)
		o.User, o.UserErr = lookup(key.Ustack)
		res.OffCPU = append(res.OffCPU, o)
	}
	slices.SortFunc(res.OffCPU, func(a, b OffCPUStack) int { return cmpDesc(a.Ns, b.Ns) })
	return errors.Join(errs...)
}

// maxFrames is TA_MAX_FRAMES; the stack map holds twice as many frames.
const maxFrames = 32

// stackErr says why bpf_get_stackid returned no stack.
func stackErr(id int32) string {
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
