package experiment

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/perfsleuth/perfsleuth/internal/proctree"
	"github.com/perfsleuth/perfsleuth/internal/sysinfo"
)

// allowedCPUs is the CPUs perfsleuth itself may run on: what the workload
// could use without diagnose changing anything.
func allowedCPUs() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("read perfsleuth's CPU affinity: %w", err)
	}
	var cpus []int
	for i := 0; i < 1024; i++ {
		if set.IsSet(i) {
			cpus = append(cpus, i)
		}
	}
	return cpus, nil
}

// pinTree confines every thread of the process tree under pid to cpus. New
// threads and processes inherit the mask from the thread that creates them;
// the tree is walked until a pass finds no thread it had not pinned, so a
// thread created during the walk is not missed.
func pinTree(pid int, cpus []int) error {
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	done := map[int]bool{}
	for pass := 0; pass < 10; pass++ {
		below, _ := proctree.Descendants("/proc", pid)
		fresh := 0
		for _, p := range append(below, pid) {
			tasks, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(p), "task"))
			if err != nil {
				continue // exited meanwhile
			}
			for _, t := range tasks {
				tid, err := strconv.Atoi(t.Name())
				if err != nil || done[tid] {
					continue
				}
				if err := unix.SchedSetaffinity(tid, &set); err != nil && !errors.Is(err, unix.ESRCH) {
					return fmt.Errorf("pin thread %d of pid %d to CPUs %s: %w", tid, pid, sysinfo.FormatCPUList(cpus), err)
				}
				done[tid] = true
				fresh++
			}
		}
		if fresh == 0 {
			return nil
		}
	}
	return nil
}

// evict drops the page cache of every regular file at or below each path:
// dirty pages are written first (fdatasync), then POSIX_FADV_DONTNEED lets
// the kernel drop the clean ones, as fio's invalidate=1 and vmtouch -e do.
// Only these files lose their cache; the rest of the machine keeps its own.
func evict(paths []string) error {
	for _, root := range paths {
		werr := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.Type().IsRegular() {
				return nil
			}
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			defer f.Close()
			if err := unix.Fdatasync(int(f.Fd())); err != nil && !errors.Is(err, unix.EROFS) {
				return fmt.Errorf("fdatasync %s: %w", p, err)
			}
			if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
				return fmt.Errorf("evict %s from the page cache: %w", p, err)
			}
			return nil
		})
		if werr != nil {
			return fmt.Errorf("cold-cache: %w", werr)
		}
	}
	return nil
}

// dropCaches drops the whole machine's clean page cache (vm.drop_caches=1)
// after writing back dirty pages: the way to make a command's reads cold
// when perfsleuth does not know its files.
func dropCaches() error {
	unix.Sync()
	if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("1\n"), 0); err != nil {
		return fmt.Errorf("cold-cache: drop the page cache: %w (needs root; or give --evict PATH to evict only the workload's files)", err)
	}
	return nil
}

// irqCPUs returns the CPUs that take the interrupts of disks' devices: the
// MSI interrupts of the PCI device above each disk, and the CPUs each is
// delivered to (/proc/irq/N/effective_affinity_list). Nil when unknown.
func irqCPUs(disks []string) []int {
	seen := map[int]bool{}
	for _, d := range disks {
		dev, err := filepath.EvalSymlinks(filepath.Join("/sys/block", d, "device"))
		if err != nil {
			continue
		}
		for p := dev; p != "/" && p != "." && strings.HasPrefix(p, "/sys/devices"); p = filepath.Dir(p) {
			irqs, err := os.ReadDir(filepath.Join(p, "msi_irqs"))
			if err != nil {
				continue
			}
			for _, irq := range irqs {
				b, err := os.ReadFile(filepath.Join("/proc/irq", irq.Name(), "effective_affinity_list"))
				if err != nil {
					continue
				}
				for _, c := range sysinfo.ParseCPUList(string(b)) {
					seen[c] = true
				}
			}
			break
		}
	}
	var out []int
	for c := range seen {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}

// halfCPUs picks half of cpus (at least one), taking the CPUs in prefer
// first: cpu-half keeps the CPUs that take the device's interrupts, so that
// it measures having fewer cores, not having the interrupts arrive on a core
// the workload may no longer run on (on the 2-CPU VM this was written on,
// that alone slowed an fdatasync loop by 30%).
func halfCPUs(cpus, prefer []int) []int {
	n := max(1, len(cpus)/2)
	var half []int
	for _, c := range prefer {
		if len(half) < n && slices.Contains(cpus, c) {
			half = append(half, c)
		}
	}
	for _, c := range cpus {
		if len(half) < n && !slices.Contains(half, c) {
			half = append(half, c)
		}
	}
	slices.Sort(half)
	return half
}
