//go:build amd64

package storage

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/prometheus/procfs/blockdevice"
	"golang.org/x/sys/unix"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/probe/timeacct"
	"github.com/perfsleuth/perfsleuth/internal/sysinfo"
)

// start attaches timeacct and the storage probe to the test process itself.
func start(t *testing.T, cfg Config) (stop func() *model.StorageIO) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("not root: the storage eBPF probe needs root, run the tests with sudo")
	}
	ta, err := timeacct.Start(timeacct.Config{Roots: []int{os.Getpid()}})
	if err != nil {
		t.Skipf("eBPF time accounting unavailable here: %v", err)
	}
	tracked, threads := ta.SharedMaps()
	p, err := Start(cfg, tracked, threads)
	if err != nil {
		ta.Stop()
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			p.Stop()
			ta.Stop()
		}
	})
	return func() *model.StorageIO {
		stopped = true
		st, err := p.Stop()
		ta.Stop()
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
}

// directFile opens a file in dir for O_DIRECT IO, preallocated to size.
func directFile(t *testing.T, dir string, size int64) int {
	t.Helper()
	fd, err := unix.Open(filepath.Join(dir, "direct"), unix.O_RDWR|unix.O_CREAT|unix.O_DIRECT, 0o600)
	if err != nil {
		t.Skipf("O_DIRECT not supported here: %v", err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.Fallocate(fd, 0, 0, size); err != nil {
		t.Fatal(err)
	}
	return fd
}

// alignedBuf is a 4 KiB buffer aligned for O_DIRECT.
func alignedBuf(n int) []byte {
	b := make([]byte, n+4096)
	off := 4096 - int(uintptr(unsafe.Pointer(&b[0]))&4095)
	return b[off : off+n]
}

func diskstats(t *testing.T, disk string) blockdevice.IOStats {
	t.Helper()
	fs, err := blockdevice.NewFS("/proc", "/sys")
	if err != nil {
		t.Fatal(err)
	}
	all, err := fs.ProcDiskstats()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range all {
		if d.DeviceName == disk {
			return d.IOStats
		}
	}
	t.Fatalf("disk %s not in /proc/diskstats", disk)
	return blockdevice.IOStats{}
}

// TestBlockMatchesDiskstats: the probe's request counts and bytes agree
// with /proc/diskstats over the same window within 5%.
func TestBlockMatchesDiskstats(t *testing.T) {
	dir := t.TempDir()
	s, err := sysinfo.StorageOf(dir)
	if err != nil || len(s.Disks) == 0 {
		t.Skipf("no block device under %s: %v", dir, err)
	}
	disk := s.Disks[0]
	const size = 64 << 20
	fd := directFile(t, dir, size)
	buf := alignedBuf(4096)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < size/4096; i += 16 { // written once, so that reads hit allocated blocks
		if _, err := unix.Pwrite(fd, buf, int64(i)*4096); err != nil {
			t.Fatal(err)
		}
	}
	unix.Fdatasync(fd)
	stop := start(t, Config{})
	before := diskstats(t, disk)
	for i := 0; i < 2000; i++ {
		if _, err := unix.Pwrite(fd, buf, rng.Int64N(size/4096)*4096); err != nil {
			t.Fatal(err)
		}
		if _, err := unix.Pread(fd, buf, rng.Int64N(size/4096)*4096); err != nil {
			t.Fatal(err)
		}
	}
	unix.Fdatasync(fd)
	after := diskstats(t, disk)
	st := stop()
	var dev *model.BlockDevice
	for i := range st.Devices {
		if st.Devices[i].Name == disk {
			dev = &st.Devices[i]
		}
	}
	if dev == nil {
		t.Fatalf("disk %s not in the probe's devices: %+v", disk, st.Devices)
	}
	ops := map[string]model.BlockOp{}
	for _, o := range dev.Ops {
		ops[o.Op] = o
	}
	check := func(what string, probe int64, proc uint64) {
		t.Helper()
		d := float64(probe) - float64(proc)
		if proc == 0 || d/float64(proc) > 0.05 || d/float64(proc) < -0.05 {
			t.Errorf("%s: probe %d, /proc/diskstats %d: more than 5%% apart", what, probe, proc)
		} else {
			t.Logf("%s: probe %d, /proc/diskstats %d", what, probe, proc)
		}
	}
	t.Logf("runs missed by the kernel: %v; completions of requests started before: %d", st.Dropped.MissedRuns, st.Dropped.Unseen)
	check("reads", ops["read"].Requests, after.ReadIOs-before.ReadIOs)
	check("read bytes", ops["read"].Bytes, (after.ReadSectors-before.ReadSectors)*512)
	check("writes", ops["write"].Requests, after.WriteIOs-before.WriteIOs)
	check("write bytes", ops["write"].Bytes, (after.WriteSectors-before.WriteSectors)*512)
	// Every write the probe saw complete of the 2000 the test made is
	// attributed to it. Regression: on the CI machine the probe once saw
	// 1966 of /proc/diskstats' 2005 writes (within the 5% above) and this
	// check, which wanted 2000, failed on the counting, not the attribution.
	// Completions the probe did not see are the counting check's to judge.
	unseen := max(int64(after.WriteIOs-before.WriteIOs)-ops["write"].Requests, 0)
	if w := ops["write"]; w.WorkloadRequests < 2000-unseen || w.WorkloadBytes < (2000-unseen)*4096 {
		t.Errorf("writes attributed to the workload: %d requests, %d bytes; want at least the 2000 it made, less the %d completions the probe did not see", w.WorkloadRequests, w.WorkloadBytes, unseen)
	}
	if r := ops["read"]; len(r.Service) == 0 || r.ServiceMeanSec <= 0 || len(r.Size) == 0 {
		t.Errorf("reads without service times or sizes: %+v", r)
	}
	if dev.UtilPct <= 0 || dev.UtilPct > 100 {
		t.Errorf("util %.1f%%, want in (0, 100]", dev.UtilPct)
	}
}

// TestPageCacheHitRatio: a warm re-read hits (ratio near 1), a read after
// dropping the file's pages misses (near 0).
func TestPageCacheHitRatio(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cached")
	const size = 32 << 20
	if err := os.WriteFile(path, make([]byte, size), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	readAll := func() {
		for off := int64(0); off < size; off += int64(len(buf)) {
			if _, err := f.ReadAt(buf, off); err != nil {
				t.Fatal(err)
			}
		}
	}
	readAll() // now cached
	stop := start(t, Config{})
	readAll()
	warm := stop()
	if warm.Cache == nil {
		t.Skipf("no page-cache tracepoints: %v", warm.Notes)
	}
	if warm.Cache.Lookups < size/4096 || warm.Cache.HitRatio < 0.95 {
		t.Errorf("warm re-read: %+v, want >= %d lookups and a hit ratio near 1", warm.Cache, size/4096)
	}
	unix.Fdatasync(int(f.Fd()))
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
	stop = start(t, Config{})
	readAll()
	cold := stop()
	if cold.Cache.Lookups < size/4096 || cold.Cache.HitRatio > 0.1 {
		t.Errorf("cold read: %+v, want >= %d lookups and a hit ratio near 0", cold.Cache, size/4096)
	}
	if cold.Cache.ReadaheadSync+cold.Cache.ReadaheadAsync == 0 {
		t.Errorf("a cold sequential read started no readahead: %+v", cold.Cache)
	}
	t.Logf("warm %+v\ncold %+v", *warm.Cache, *cold.Cache)
}

// TestFilePattern: a sequential writer and a random writer are told apart
// per file, with their exact counts and bytes.
func TestFilePattern(t *testing.T) {
	dir := t.TempDir()
	seqPath, rndPath := filepath.Join(dir, "seq"), filepath.Join(dir, "rnd")
	seq, err := os.Create(seqPath)
	if err != nil {
		t.Fatal(err)
	}
	defer seq.Close()
	rnd, err := os.Create(rndPath)
	if err != nil {
		t.Fatal(err)
	}
	defer rnd.Close()
	if err := rnd.Truncate(64 << 20); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	rng := rand.New(rand.NewPCG(3, 4))
	stop := start(t, Config{Files: true})
	for i := 0; i < 1000; i++ {
		if _, err := seq.Write(buf); err != nil {
			t.Fatal(err)
		}
		if _, err := rnd.WriteAt(buf, rng.Int64N(16384)*4096); err != nil {
			t.Fatal(err)
		}
	}
	if err := seq.Sync(); err != nil {
		t.Fatal(err)
	}
	st := stop()
	byPath := map[string]model.FileIO{}
	for _, f := range st.Files {
		byPath[f.Path] = f
	}
	for path, want := range map[string]string{seqPath: "sequential", rndPath: "random"} {
		f, ok := byPath[path]
		if !ok {
			t.Fatalf("%s not among the files: %+v", path, st.Files)
		}
		if f.Writes.Count != 1000 || f.Writes.Bytes != 1000*4096 || f.Writes.Pattern != want {
			t.Errorf("%s: writes %+v, want 1000 calls, %d bytes, %s", path, f.Writes, 1000*4096, want)
		}
	}
	if f := byPath[seqPath]; f.Syncs != 1 {
		t.Errorf("%s: %d syncs, want 1", seqPath, f.Syncs)
	}
}

// TestFilePatternTwoOpenFiles: the sequential/random test is per open
// file. One file opened twice, each open file written sequentially at its
// own place, the two in alternation, is sequential (every call but each
// open file's first), and so is the position the probe keeps for the open
// file last used on a file (bpf/storage.h st_file.last_file), written back
// when the other is used.
func TestFilePatternTwoOpenFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "twice")
	var fds [2]*os.File
	for i := range fds {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		fds[i] = f
	}
	buf := make([]byte, 4096)
	const n = 500
	stop := start(t, Config{Files: true})
	for i := range n {
		for j, f := range fds {
			if _, err := f.WriteAt(buf, int64(j)*(16<<20)+int64(i)*4096); err != nil {
				t.Fatal(err)
			}
		}
	}
	st := stop()
	for _, f := range st.Files {
		if f.Path != path {
			continue
		}
		if f.Writes.Count != 2*n || f.Writes.Sequential != 2*(n-1) || f.Writes.Random != 0 {
			t.Errorf("writes %+v: want %d calls, %d sequential, 0 random", f.Writes, 2*n, 2*(n-1))
		}
		return
	}
	t.Fatalf("%s not among the files: %+v", path, st.Files)
}

// TestFileThreads: four threads each write one shared file and a file of
// their own, in turn; the shared file has 4 writer threads, each own file
// 1, and none was read. The turns exercise the per-thread last-file cache
// (st_call.tf_ino): each switch looks the pair up again and must not count
// a thread twice.
func TestFileThreads(t *testing.T) {
	dir := t.TempDir()
	shared, err := os.Create(filepath.Join(dir, "shared"))
	if err != nil {
		t.Fatal(err)
	}
	defer shared.Close()
	const threads, writes = 4, 100
	own := make([]*os.File, threads)
	for i := range own {
		if own[i], err = os.Create(filepath.Join(dir, fmt.Sprintf("own-%d", i))); err != nil {
			t.Fatal(err)
		}
		defer own[i].Close()
	}
	stop := start(t, Config{Files: true})
	var ready, done sync.WaitGroup
	ready.Add(threads)
	done.Add(threads)
	errs := make(chan error, threads)
	for i := range threads {
		go func() {
			defer done.Done()
			// Each goroutine its own OS thread, all alive at once.
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			ready.Done()
			ready.Wait()
			buf := make([]byte, 512)
			for j := range writes {
				if _, err := shared.WriteAt(buf, int64((i*writes+j)*512)); err != nil {
					errs <- err
					return
				}
				if _, err := own[i].WriteAt(buf, int64(j*512)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	done.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	st := stop()
	got := map[string]model.FileIO{}
	for _, f := range st.Files {
		got[filepath.Base(f.Path)] = f
	}
	if f := got["shared"]; f.Writes.Count != threads*writes || f.Writes.Threads != threads || f.Reads.Threads != 0 {
		t.Errorf("shared: %d writes by %d threads, %d reader threads; want %d by %d, 0", f.Writes.Count, f.Writes.Threads, f.Reads.Threads, threads*writes, threads)
	}
	for i := range threads {
		name := fmt.Sprintf("own-%d", i)
		if f := got[name]; f.Writes.Count != writes || f.Writes.Threads != 1 {
			t.Errorf("%s: %d writes by %d threads; want %d by 1", name, f.Writes.Count, f.Writes.Threads, writes)
		}
	}
	if st.Dropped.ThreadFiles != 0 {
		t.Errorf("%d thread-file pairs dropped", st.Dropped.ThreadFiles)
	}
}

// TestCostEstimate checks the probe's estimate of its own CPU time against
// the kernel's BPF statistics over the same window: a workload of syscalls
// the filters stop and 4 KiB reads, writes and syncs they pass.
func TestCostEstimate(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: the storage eBPF probe needs root, run the tests with sudo")
	}
	dir := t.TempDir()
	costs, err := Calibrate(true, dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{progSysEnter, progSysExit, progCache} {
		if costs.UntrackedNs[i] <= 0 || costs.UntrackedNs[i] > 10000 {
			t.Errorf("calibrated %s: %.0f ns a filtered run, want (0, 10000]", ProgramNames[i], costs.UntrackedNs[i])
		}
	}
	stats, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
	if err != nil {
		t.Skipf("BPF statistics unavailable: %v", err)
	}
	defer stats.Close()
	ta, err := timeacct.Start(timeacct.Config{Roots: []int{os.Getpid()}})
	if err != nil {
		t.Skipf("eBPF time accounting unavailable here: %v", err)
	}
	defer ta.Stop()
	tracked, threads := ta.SharedMaps()
	p, err := Start(Config{Files: true, Costs: costs}, tracked, threads)
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	f, err := os.Create(filepath.Join(dir, "data"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(4096 * 4096); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	for i := range 20000 {
		unix.Getppid()
		if _, err := f.WriteAt(buf, rand.Int64N(4096)*4096); err != nil {
			t.Fatal(err)
		}
		if _, err := f.ReadAt(buf, rand.Int64N(4096)*4096); err != nil {
			t.Fatal(err)
		}
		if i%2000 == 0 {
			unix.Fdatasync(int(f.Fd()))
		}
	}
	// The kernel's measure, read before Stop closes the programs.
	var kernelNs float64
	for _, prog := range p.coll.Programs {
		if s, err := prog.Stats(); err == nil {
			kernelNs += float64(s.Runtime.Nanoseconds())
		}
	}
	st, err := p.Stop()
	if err != nil {
		t.Fatal(err)
	}
	est := st.ProbeCPUSec * 1e9
	t.Logf("estimated %.2f ms, kernel statistics %.2f ms (calibrated filtered runs: sys_enter %.0f ns, sys_exit %.0f ns, page cache %.0f ns)",
		est/1e6, kernelNs/1e6, costs.UntrackedNs[progSysEnter], costs.UntrackedNs[progSysExit], costs.UntrackedNs[progCache])
	if kernelNs <= 0 || est < kernelNs/1.5 || est > kernelNs*1.5 {
		t.Errorf("estimated %.2f ms, the kernel measured %.2f ms: want within a factor 1.5", est/1e6, kernelNs/1e6)
	}
}
