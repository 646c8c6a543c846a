//go:build amd64

package storage

import (
	"fmt"
	"github.com/perfsleuth/perfsleuth/internal/probe"
	"os"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// minCalibrationRuns is the fewest runs a group's cost is computed from.
const minCalibrationRuns = 1000

// Calibrate measures what a run of each program group costs when its filter
// stops it: the probe is loaded with nothing to follow (maps of its own, no
// time-accounting probe needed) and the kernel's BPF statistics on, and
// this process makes syscalls, 4 KiB reads and writes of an unnamed file in
// dir (O_TMPFILE: nothing is left behind, whatever way perfsleuth exits)
// and a few syncs. About 0.1 s. The block programs have no filter: every
// run is timed by the program itself, so they need no calibration.
func Calibrate(files bool, dir string) (*Costs, error) {
	st, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
	if err != nil {
		return nil, fmt.Errorf("calibrate: BPF run-time statistics unavailable: %w", err)
	}
	defer st.Close()
	spec, err := loadStorage()
	if err != nil {
		return nil, fmt.Errorf("calibrate: %w", err)
	}
	tracked, err := ebpf.NewMap(spec.Maps["tracked"])
	if err != nil {
		return nil, fmt.Errorf("calibrate: %w", err)
	}
	defer tracked.Close()
	threads, err := ebpf.NewMap(spec.Maps["threads"])
	if err != nil {
		return nil, fmt.Errorf("calibrate: %w", err)
	}
	defer threads.Close()
	probe.SizeThreadIndex(spec, nil)
	idx, err := ebpf.NewMap(spec.Maps["thread_idx"])
	if err != nil {
		return nil, fmt.Errorf("calibrate: %w", err)
	}
	defer idx.Close()
	p, err := Start(Config{Files: files}, probe.Shared{Tracked: tracked, Threads: threads, ThreadIdx: idx})
	if err != nil {
		return nil, fmt.Errorf("calibrate: %w", err)
	}
	defer p.close()
	if err := calibrationWork(dir); err != nil {
		return nil, fmt.Errorf("calibrate: %w", err)
	}
	var runs, ns [NumPrograms]float64
	for name, prog := range p.coll.Programs {
		i, ok := progIndex[name]
		if !ok {
			continue
		}
		s, err := probe.ProgStats(prog)
		if err != nil {
			return nil, fmt.Errorf("calibrate: %s: %w", name, err)
		}
		runs[i] += float64(s.RunCount)
		ns[i] += float64(s.Runtime.Nanoseconds())
	}
	c := &Costs{Files: files}
	for i := range NumPrograms {
		if i == progSysEnter || i == progSysExit || i == progCache {
			if runs[i] >= minCalibrationRuns {
				c.UntrackedNs[i] = ns[i] / runs[i]
			}
		}
	}
	return c, nil
}

// The groups that have a filter, as in ProgramNames.
const (
	progSysEnter = 5
	progSysExit  = 6
	progCache    = 7
)

// calibrationWork makes the syscalls, page-cache lookups, dirtied pages and
// page faults the filtered programs see, none of them followed. The faults
// are for the page-cache group without --storage, whose per-page programs
// are not attached then: one mmap fault per page of the file, fault-around
// off (MADV_RANDOM).
func calibrationWork(dir string) error {
	for range 20000 {
		unix.Getppid()
	}
	fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("an unnamed file in %s: %w", dir, err)
	}
	f := os.NewFile(uintptr(fd), "calibration")
	defer f.Close()
	buf := make([]byte, 4096)
	const pages = 1024
	if err := f.Truncate(pages * 4096); err != nil {
		return err
	}
	for i := range 2 * pages {
		if _, err := f.WriteAt(buf, int64(i%pages)*4096); err != nil {
			return err
		}
		if _, err := f.ReadAt(buf, int64((i*7)%pages)*4096); err != nil {
			return err
		}
	}
	if err := unix.Fdatasync(int(f.Fd())); err != nil {
		return err
	}
	m, err := unix.Mmap(int(f.Fd()), 0, pages*4096, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("map the unnamed file: %w", err)
	}
	defer unix.Munmap(m)
	if err := unix.Madvise(m, unix.MADV_RANDOM); err != nil {
		return fmt.Errorf("madvise: %w", err)
	}
	var sum byte
	for i := 0; i < len(m); i += 4096 {
		sum += m[i]
	}
	calibrationSink = sum
	return nil
}

// calibrationSink keeps the faulting reads of calibrationWork.
var calibrationSink byte
