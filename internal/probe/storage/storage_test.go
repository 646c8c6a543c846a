//go:build amd64

package storage

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/prometheus/procfs/blockdevice"
	"golang.org/x/sys/unix"

	"github.com/perfsleuth/perfsleuth/internal/analyze"
	"github.com/perfsleuth/perfsleuth/internal/loopfs"
	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/probe/timeacct"
	"github.com/perfsleuth/perfsleuth/internal/sysinfo"
	"github.com/perfsleuth/perfsleuth/internal/workload/fileio"
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
	p, err := Start(cfg, ta.SharedMaps())
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
	t0 := time.Now()
	return func() *model.StorageIO {
		stopped = true
		st, err := p.Stop()
		ta.Stop()
		if err != nil {
			t.Fatal(err)
		}
		// The figures agree with each other, as every record's must.
		run := &model.Run{Storage: st, Observation: &model.Observation{DurationSec: time.Since(t0).Seconds()}}
		for _, e := range analyze.Inconsistencies(run) {
			t.Errorf("the record disagrees with itself: %s", e)
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

// quietDisk syncs dir's file system and waits until its disk has had
// nothing in flight for 200 ms, so that no other request crosses the edge
// of a test's window (the journal's periodic commit, another test's
// writeback).
func quietDisk(t *testing.T, dir, disk string) {
	t.Helper()
	if fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0); err == nil {
		unix.Syncfs(fd)
		unix.Close(fd)
	}
	sysinfo.WaitDisksIdle(context.Background(), []string{disk}, 200*time.Millisecond, 5*time.Second)
}

// testDisk is the whole disk under a temporary directory, and the
// directory.
func testDisk(t *testing.T) (dir, disk string) {
	t.Helper()
	dir = t.TempDir()
	s, err := sysinfo.StorageOf(dir)
	if err != nil || len(s.Disks) == 0 {
		t.Skipf("no block device under %s: %v", dir, err)
	}
	return dir, s.Disks[0]
}

// deviceOps is the probe's ops of disk, by name.
func deviceOps(t *testing.T, st *model.StorageIO, disk string) (*model.BlockDevice, map[string]model.BlockOp) {
	t.Helper()
	for i := range st.Devices {
		if d := &st.Devices[i]; d.Name == disk {
			ops := map[string]model.BlockOp{}
			for _, o := range d.Ops {
				ops[o.Op] = o
			}
			return d, ops
		}
	}
	t.Fatalf("disk %s not in the probe's devices: %+v", disk, st.Devices)
	return nil, nil
}

// histTotal is how many values a histogram holds.
func histTotal(rs []model.Range) int64 {
	var n int64
	for _, r := range rs {
		n += r.Count
	}
	return n
}

// checkHistograms: every histogram of every op holds each request once
// (depth: each one issued to the driver).
func checkHistograms(t *testing.T, dev *model.BlockDevice) {
	t.Helper()
	for _, o := range dev.Ops {
		for _, h := range []struct {
			name string
			r    []model.Range
			want int64
		}{{"size", o.Size, o.Requests}, {"queue", o.Queue, o.Requests}, {"service", o.Service, o.Requests}, {"depth", o.Depth, o.Issued}} {
			if got := histTotal(h.r); got != h.want {
				t.Errorf("%s %s: the %s histogram holds %d, want %d", dev.Name, o.Op, h.name, got, h.want)
			}
		}
		if got := histTotal(o.WorkloadDepth); got > o.WorkloadRequests {
			t.Errorf("%s %s: the workload depth histogram holds %d for %d workload requests", dev.Name, o.Op, got, o.WorkloadRequests)
		}
		if o.Op != "preflush" && o.Requests > 0 && o.Issued != o.Requests {
			t.Errorf("%s %s: %d of %d requests issued to the driver", dev.Name, o.Op, o.Issued, o.Requests)
		}
	}
}

// TestBlockMatchesDiskstats: over the probe's window, its requests
// (measured, and those that started before it: unseen) are exactly what
// /proc/diskstats counted, op by op: writes are the probe's writes and
// preflushes (an empty cache-flush request is a write of 0 sectors there),
// flushes its flush commands. The disk is left quiet at both edges of the
// window, so that no request of another task crosses them.
//
// Regression: diskstats' comparison was within 5%, and the probe counted
// each fdatasync's empty preflush as a 0-byte write and each journal
// commit block twice (at its data step and again after its post-flush),
// and its histograms held fewer requests than its counts (4,316 of 6,324
// for 500 sqlite3 inserts).
func TestBlockMatchesDiskstats(t *testing.T) {
	dir, disk := testDisk(t)
	const size = 64 << 20
	fd := directFile(t, dir, size)
	buf := alignedBuf(4096)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < size/4096; i += 16 { // written once, so that reads hit allocated blocks
		if _, err := unix.Pwrite(fd, buf, int64(i)*4096); err != nil {
			t.Fatal(err)
		}
	}
	// The exact counts hold when no other task's request crosses an edge
	// of the window (the disk is left quiet there, but a build or a
	// journal commit beside the test can start one in the microseconds
	// between the probe's edge and its /proc/diskstats read): a window
	// that misses is measured again, twice at most, and each miss is
	// logged. A systematic difference fails all three.
	var dev *model.BlockDevice
	var ops map[string]model.BlockOp
	var st *model.StorageIO
	var misses []string
	for attempt := 1; attempt <= 3; attempt++ {
		quietDisk(t, dir, disk)
		stop := start(t, Config{})
		for i := 0; i < 2000; i++ {
			if _, err := unix.Pwrite(fd, buf, rng.Int64N(size/4096)*4096); err != nil {
				t.Fatal(err)
			}
			if _, err := unix.Pread(fd, buf, rng.Int64N(size/4096)*4096); err != nil {
				t.Fatal(err)
			}
			if i%100 == 0 {
				unix.Fdatasync(fd)
			}
		}
		unix.Fdatasync(fd)
		quietDisk(t, dir, disk)
		st = stop()
		dev, ops = deviceOps(t, st, disk)
		if dev.Diskstats == nil {
			t.Fatal("no /proc/diskstats counts in the record")
		}
		t.Logf("attempt %d: probe: %+v; diskstats: %+v; missed runs %v, missed requests %d", attempt, ops, *dev.Diskstats, st.Dropped.MissedRuns, st.Dropped.Missed)
		if misses = diskstatsMisses(ops, *dev.Diskstats, st.Dropped.Missed); len(misses) == 0 {
			break
		}
		t.Logf("attempt %d: %s", attempt, strings.Join(misses, "; "))
	}
	for _, m := range misses {
		t.Error(m)
	}
	checkHistograms(t, dev)
	// Every write the test made is the workload's.
	if w := ops["write"]; w.WorkloadRequests < 2000 || w.WorkloadBytes < 2000*4096 {
		t.Errorf("writes attributed to the workload: %d requests, %d bytes; want at least the 2000 it made", w.WorkloadRequests, w.WorkloadBytes)
	}
	// 21 fdatasyncs, each an empty preflush (or none on a disk without a
	// volatile cache, where the flush machinery completes it at once).
	if p := ops["preflush"]; p.Requests < 21 || p.WorkloadRequests < 21 {
		t.Errorf("preflushes: %d (%d the workload's), want at least the 21 fdatasyncs", p.Requests, p.WorkloadRequests)
	}
	if dev.UtilPct <= 0 || dev.UtilPct > 100 {
		t.Errorf("util %.1f%%, want in (0, 100]", dev.UtilPct)
	}
}

// diskstatsMisses compares the probe's requests with /proc/diskstats' over
// the same window, op by op: every request diskstats counted is the
// probe's, measured, started before the window (unseen), or completed
// without the probe's program running for it (missed: found when the
// request is freed, reused or left over). A missed request's bytes are
// unknown: the bytes are exact only without one.
func diskstatsMisses(ops map[string]model.BlockOp, ds model.DiskstatsDelta, missed int64) []string {
	seen := func(o ...string) (n, bytes int64) {
		for _, name := range o {
			n += ops[name].Requests + ops[name].Unseen + ops[name].Missed
			bytes += ops[name].Bytes + ops[name].UnseenBytes
		}
		return n, bytes
	}
	var out []string
	exact := func(what string, probe, proc int64) {
		if probe != proc {
			out = append(out, fmt.Sprintf("%s: probe %d, /proc/diskstats %d", what, probe, proc))
		}
	}
	r, rb := seen("read")
	w, wb := seen("write", "preflush", "write-zeroes")
	f, _ := seen("flush")
	exact("reads", r, ds.Reads)
	exact("writes and preflushes", w, ds.Writes)
	exact("flush commands", f, ds.Flushes)
	if missed == 0 {
		exact("read bytes", rb, ds.ReadBytes)
		exact("write bytes", wb, ds.WriteBytes)
	}
	return out
}

// TestBlockDepthOneRead: O_DIRECT 4 KiB reads one at a time are issued at
// depth 1, and the device's service time, like the request's whole time,
// is within what the reads took as the test timed them. Regression: at
// fio's iodepth 1, "98% of requests issued with another in flight" and a
// service mean of 142 µs against fio's 55 µs: others' requests and stale
// entries of reused requests were in the figures.
func TestBlockDepthOneRead(t *testing.T) {
	dir, disk := testDisk(t)
	const size = 64 << 20
	fd := directFile(t, dir, size)
	buf := alignedBuf(4096)
	for i := 0; i < size/4096; i += 16 {
		if _, err := unix.Pwrite(fd, buf, int64(i)*4096); err != nil {
			t.Fatal(err)
		}
	}
	quietDisk(t, dir, disk)
	rng := rand.New(rand.NewPCG(3, 4))
	// A background O_DIRECT writer on another file, in a process outside
	// the test's tree (its shell exits at once): the disk's depth may
	// exceed 1, the workload's may not.
	bg := exec.Command("sh", "-c", `setsid sh -c 'while :; do dd if=/dev/zero of="$0" bs=64k count=256 oflag=direct conv=notrunc 2>/dev/null; done' "$1" </dev/null >/dev/null 2>&1 & echo $!`, "sh", filepath.Join(dir, "background"))
	out, err := bg.Output()
	if err != nil {
		t.Fatal(err)
	}
	writer, _ := strconv.Atoi(strings.TrimSpace(string(out)))
	t.Cleanup(func() { unix.Kill(-writer, unix.SIGKILL) })
	time.Sleep(50 * time.Millisecond)
	stop := start(t, Config{})
	const reads = 3000
	var total time.Duration
	for i := 0; i < reads; i++ {
		t0 := time.Now()
		if _, err := unix.Pread(fd, buf, rng.Int64N(size/4096/16)*16*4096); err != nil {
			t.Fatal(err)
		}
		total += time.Since(t0)
	}
	st := stop()
	unix.Kill(-writer, unix.SIGKILL)
	dev, ops := deviceOps(t, st, disk)
	checkHistograms(t, dev)
	r := ops["read"]
	if w := ops["write"]; w.WorkloadRequests > 0 || w.Requests == 0 {
		t.Logf("the background writer's writes: %d, %d of them the workload's", w.Requests, w.WorkloadRequests)
	}
	// A completion the kernel did not run the program for is a read the
	// probe counts as missed, not measured. Regression: the CI machine
	// measured 2,990 of 3,000 reads and nothing said where 10 went: the
	// kernel skipped the program for their completions (no recursion miss
	// counted), and their entries were dropped unnoticed when reused.
	t.Logf("reads: %d (%d the workload's), missed %d, diskstats %+v", r.Requests, r.WorkloadRequests, r.Missed, dev.Diskstats)
	if r.WorkloadRequests+r.Missed < reads || r.Requests+r.Unseen+r.Missed != dev.Diskstats.Reads {
		t.Fatalf("%d workload reads, %d missed, %d unseen; want %d reads, and /proc/diskstats' %d", r.WorkloadRequests, r.Missed, r.Unseen, reads, dev.Diskstats.Reads)
	}
	// A missed completion leaves its request counted in flight until its
	// struct is reused (a few ms): the reads issued meanwhile read depth
	// 2. Without one, every read is at depth 1.
	depth1 := int64(0)
	for _, b := range r.WorkloadDepth {
		if b.High <= 1 {
			depth1 += b.Count
		}
	}
	// A missed completion no longer holds the depth up: the next issue
	// finds the freed request (check_recent). Regression: 8 missed of
	// 30,000 fio reads put 8,016 of them at depth 2-3.
	if got := histTotal(r.WorkloadDepth); got != r.WorkloadRequests || depth1 != got {
		t.Errorf("workload depth %+v with %d missed completions: want all %d at 1", r.WorkloadDepth, r.Missed, r.WorkloadRequests)
	}
	// The probe's busy time is the union of the requests' stays in the
	// driver: at least the workload's own (one at a time, they never
	// overlap), at most all of them end to end (the writer's overlap).
	var all float64
	for _, o := range ops {
		if o.Issued > 0 {
			all += float64(o.Requests) * o.ServiceMeanSec
		}
	}
	own := float64(r.WorkloadRequests) * r.WorkloadServiceMeanSec
	if dev.DriverBusySec == nil {
		t.Fatal("no busy time in the driver")
	}
	busy := *dev.DriverBusySec
	t.Logf("in the driver %.4f s; the workload's service %.4f s, all requests' %.4f s", busy, own, all)
	if busy < own*0.999 || busy > all*1.001+1e-4 {
		t.Errorf("in the driver %.4f s: want between the workload's service %.4f s and all requests' %.4f s", busy, own, all)
	}
	loop := total.Seconds() / reads
	t.Logf("reads: the loop's mean %.1f µs; the workload's requests: service %.1f µs, latency %.1f µs", loop*1e6, r.WorkloadServiceMeanSec*1e6, r.WorkloadLatencyMeanSec*1e6)
	if r.WorkloadServiceMeanSec > r.WorkloadLatencyMeanSec || r.WorkloadLatencyMeanSec > loop {
		t.Errorf("service %.1f µs, latency %.1f µs, the loop's own %.1f µs: want service <= latency <= the loop's", r.WorkloadServiceMeanSec*1e6, r.WorkloadLatencyMeanSec*1e6, loop*1e6)
	}
}

// journaledDir mounts a fresh ext4 file system with a journal on a loop
// device backed by a file in the test's temporary directory (the root file
// system here has no journal), and returns its mount point and loop disk.
// Everything is unmounted and detached at the end.
func journaledDir(t *testing.T) (dir, disk string) {
	dir, dev := loopfs.Ext4(t, 64<<20, "")
	return dir, filepath.Base(dev)
}

// TestBlockJournalCommitOnce: a file created, written and fsynced on ext4
// with a journal makes jbd2 commit with a cache flush before the commit
// block and FUA on it; on a disk without FUA the flush machinery issues
// it as a preflush, the data, then a post-flush, and completes the request
// twice (its data step, then 0 bytes once the post-flush is done). Each
// such write is counted once, as the write it is, with its flags, and the
// counts equal /proc/diskstats'. Regression: the commit block was counted
// at its data step and again, with 0 bytes, after its post-flush.
func TestBlockJournalCommitOnce(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: the test mounts a file system and the probe needs root")
	}
	dir, disk := journaledDir(t)
	buf := make([]byte, 4096)
	quietDisk(t, dir, disk)
	stop := start(t, Config{})
	for i := 0; i < 100; i++ {
		p := filepath.Join(dir, fmt.Sprintf("f%d", i))
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		f.Write(buf)
		f.Sync()
		f.Close()
		os.Remove(p)
	}
	quietDisk(t, dir, disk)
	st := stop()
	dev, ops := deviceOps(t, st, disk)
	checkHistograms(t, dev)
	ds := dev.Diskstats
	if ds == nil {
		t.Fatal("no /proc/diskstats counts in the record")
	}
	w, pf, fl, wz := ops["write"], ops["preflush"], ops["flush"], ops["write-zeroes"]
	t.Logf("writes %d (preflush %d, fua %d), preflushes %d, flushes %d; diskstats writes %d flushes %d",
		w.Requests, w.Preflush, w.FUA, pf.Requests, fl.Requests, ds.Writes, ds.Flushes)
	// ext4's lazy init zeroes the new file system's inode tables in the
	// background (write-zeroes, a write in diskstats).
	if got := w.Requests + w.Unseen + w.Missed + pf.Requests + pf.Unseen + pf.Missed + wz.Requests + wz.Unseen + wz.Missed; got != ds.Writes {
		t.Errorf("writes and preflushes %d, /proc/diskstats writes %d", got, ds.Writes)
	}
	if got := fl.Requests + fl.Unseen + fl.Missed; got != ds.Flushes {
		t.Errorf("flushes %d, /proc/diskstats %d", got, ds.Flushes)
	}
	if w.Preflush < 100 || w.FUA < 100 {
		t.Errorf("%d writes with a cache flush before, %d with FUA: want a journal commit block for each of the 100 fsyncs", w.Preflush, w.FUA)
	}
	if bytes := ds.WriteBytes; st.Dropped.Missed == 0 && w.Bytes+w.UnseenBytes+wz.Bytes+wz.UnseenBytes != bytes {
		t.Errorf("write bytes %d, /proc/diskstats %d", w.Bytes+w.UnseenBytes+wz.Bytes+wz.UnseenBytes, bytes)
	}
}

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
	// The per-page programs that count the hit ratio run with --storage.
	stop := start(t, Config{Files: true})
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
	stop = start(t, Config{Files: true})
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
		// One writer: one call at a time, exactly.
		if f := got[name]; math.Abs(f.Writes.Concurrency-1) > 1e-9 || f.Writes.BusySec <= 0 {
			t.Errorf("%s: %.3f writers at once over %.6fs busy, want 1", name, f.Writes.Concurrency, f.Writes.BusySec)
		}
	}
	if f := got["shared"]; f.Writes.Concurrency < 1 || f.Writes.BusySec <= 0 || f.Writes.BusySec > f.Writes.CallSec {
		t.Errorf("shared: %.3f writers at once over %.6fs busy (%.6fs in calls)", f.Writes.Concurrency, f.Writes.BusySec, f.Writes.CallSec)
	}
	if st.Dropped.ThreadFiles != 0 {
		t.Errorf("%d thread-file pairs dropped", st.Dropped.ThreadFiles)
	}
}

// Issue 18: rsync of 20,000 files lost 53,893 file calls once the map of
// files was full. Past MaxFiles, a file's calls are counted in its
// directory's entry, in the kernel: none is lost, each file is counted
// once, and the entries name the directories.
func TestManyFilesFolded(t *testing.T) {
	dir := t.TempDir()
	const files = MaxFiles + 1500
	for i := range 3 {
		if err := os.Mkdir(filepath.Join(dir, fmt.Sprintf("d%d", i)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	stop := start(t, Config{Files: true})
	buf := make([]byte, 100)
	for i := range files {
		fd, err := unix.Open(filepath.Join(dir, fmt.Sprintf("d%d", i%3), fmt.Sprintf("f%d", i)), unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		_, err = unix.Write(fd, buf)
		unix.Close(fd)
		if err != nil {
			t.Fatal(err)
		}
	}
	st := stop()
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	var writes, bytes, seen, folded, entries int64
	for _, f := range st.Files {
		if !strings.HasPrefix(f.Path, root+"/") {
			continue
		}
		writes += f.Writes.Count
		bytes += f.Writes.Bytes
		if f.Folded {
			folded += f.Writes.Count
			seen += f.FoldedFiles
			if b := filepath.Base(f.Path); b != "d0" && b != "d1" && b != "d2" {
				t.Errorf("a directory's entry names %s, want one of %s/d0, d1, d2", f.Path, root)
			}
		} else {
			seen++
			entries++
		}
	}
	if writes != files || bytes != files*100 || seen != files {
		t.Errorf("the files under %s hold %d writes of %d bytes on %d files, want %d of %d on %d", root, writes, bytes, seen, files, files*100, files)
	}
	if st.Dropped.FileOps != 0 || entries > MaxFiles || folded < files-MaxFiles || st.FoldedCalls < folded || st.MaxFiles != MaxFiles {
		t.Errorf("dropped %d calls; %d files one by one (at most %d); %d writes in directories' entries, the record's folded calls %d (max files %d)",
			st.Dropped.FileOps, entries, MaxFiles, folded, st.FoldedCalls, st.MaxFiles)
	}
}

// Writers at once (issue 18): threads that write one file together are
// in a call on it at once, a thread that writes its own file alone is
// never, whatever the whole run's count of writers says. Each of 4
// threads writes 4 KiB blocks for 300 ms, to the shared file or to its own.
func TestFileWritersAtOnce(t *testing.T) {
	dir := t.TempDir()
	stop := start(t, Config{Files: true})
	write := func(name func(i int) string) {
		var ready, done sync.WaitGroup
		ready.Add(4)
		done.Add(4)
		for i := range 4 {
			go func() {
				defer done.Done()
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				f, err := os.OpenFile(filepath.Join(dir, name(i)), os.O_CREATE|os.O_WRONLY, 0o644)
				ready.Done()
				ready.Wait()
				if err != nil {
					t.Error(err)
					return
				}
				defer f.Close()
				buf := make([]byte, 4096)
				for j, end := 0, time.Now().Add(300*time.Millisecond); time.Now().Before(end); j++ {
					if _, err := f.WriteAt(buf, int64(j%256)*4096); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		done.Wait()
	}
	write(func(int) string { return "shared" })
	write(func(i int) string { return fmt.Sprintf("own-%d", i) })
	st := stop()
	for _, f := range st.Files {
		w := f.Writes
		switch name := filepath.Base(f.Path); {
		case name == "shared":
			// Four runnable writers on two CPUs: two in a call at once
			// at the least, whenever one is, and more while one holding
			// the inode lock is preempted.
			if w.Concurrency < 1.5 || w.Threads != 4 {
				t.Errorf("shared: %.2f writers at once (%d threads, %.3fs busy, %.3fs in calls), want 1.5 or more of 4", w.Concurrency, w.Threads, w.BusySec, w.CallSec)
			}
		case strings.HasPrefix(name, "own-"):
			if math.Abs(w.Concurrency-1) > 1e-9 || w.Threads != 1 {
				t.Errorf("%s: %.3f writers at once (%d threads), want 1 of 1", name, w.Concurrency, w.Threads)
			}
		}
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
	p, err := Start(Config{Files: true, Costs: costs}, ta.SharedMaps())
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

// TestFilePatternLogRewrite: a log that rewrites its last partial block
// with each append (InnoDB's redo log: each write begins at the 512-byte
// block the previous one ended in) is written in order: every write
// overlaps and extends the one before. Regression: MariaDB's redo log read
// "26,017 random writes ... sort by offset".
func TestFilePatternLogRewrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "redo")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 700)
	stop := start(t, Config{Files: true})
	var end int64
	for i := 0; i < 1000; i++ {
		off := end &^ 511 // the block the previous write ended in
		if _, err := f.WriteAt(buf, off); err != nil {
			t.Fatal(err)
		}
		end = off + int64(len(buf))
	}
	st := stop()
	for _, fi := range st.Files {
		if fi.Path == path {
			if fi.Writes.Pattern != "sequential" || fi.Writes.Random > 0 {
				t.Errorf("writes %+v: want all sequential", fi.Writes)
			}
			return
		}
	}
	t.Fatalf("%s not among the files", path)
}

// outsiderWait is a shell loop that waits for the file goFile and exits
// the shell when dir is gone instead. A test that failed before making
// goFile (a probe that did not load) left the loop polling every 10 ms
// for good, re-parented, nobody's child: the next tests of the run had a
// process waking 100 times a second beside them (TestRunQueueWaitsByProcess
// counted 46-62 run-queue waits' keys in no slot with two such loops
// running, 18-32 without).
func outsiderWait(dir, goFile string) string {
	return fmt.Sprintf("while [ ! -e %s ]; do [ -d %s ] || exit 0; sleep 0.01; done", goFile, dir)
}

// TestPageCacheOnlyWorkload: pages an outside process dirties at the same
// time are not the workload's: an outsider's runs of the page-cache
// programs are filtered out, on either CPU. (They once kept the last tgid
// found tracked per CPU, a cache this test guarded.)
func TestPageCacheOnlyWorkload(t *testing.T) {
	dir := t.TempDir()
	other, goFile, done := filepath.Join(dir, "other"), filepath.Join(dir, "go"), filepath.Join(dir, "done")
	// The outsider's shell exits at once: the writer is re-parented, nobody's
	// child here, and so not tracked. It waits for the probe to be loaded,
	// and gives up when the test's directory is gone (outsiderWait).
	script := fmt.Sprintf("(%s; dd if=/dev/zero of=%s bs=64k count=1024 2>/dev/null; touch %s) >/dev/null 2>&1 &",
		outsiderWait(dir, goFile), other, done)
	if err := exec.Command("sh", "-c", script).Run(); err != nil {
		t.Fatal(err)
	}
	stop := start(t, Config{Files: true}) // pages dirtied are counted with --storage
	if err := os.WriteFile(goFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	const pages = 1024 // the workload's own: 4 MiB of a new file, a page a write
	f, err := os.Create(filepath.Join(dir, "own"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for i := 0; i < pages; i++ {
		if _, err := f.Write(buf); err != nil {
			t.Fatal(err)
		}
	}
	waitOutsider(t, done, "writer")
	st := stop()
	if st.Cache == nil {
		t.Skipf("no page-cache tracepoints: %v", st.Notes)
	}
	// The outsider dirtied 16,384 pages; the workload 1,024 (and a few
	// more of its own: the marker file, the Go runtime).
	if st.Cache.Dirtied < pages || st.Cache.Dirtied > pages+pages/2 {
		t.Errorf("pages dirtied: %d, want the workload's %d (not the outsider's 16,384)", st.Cache.Dirtied, pages)
	}
}

// TestDefaultPageCache: without --storage the per-page counts are not
// taken (they are marked not counted, not zero), and the workload's files
// are still told among those written back: an outside process's sync
// writes back a file the workload wrote, and those bytes are written back
// on the workload's behalf (its inode was marked when it became dirty).
func TestDefaultPageCache(t *testing.T) {
	dir := t.TempDir()
	own, goFile, done := filepath.Join(dir, "own"), filepath.Join(dir, "go"), filepath.Join(dir, "done")
	unix.Sync() // nothing dirty from before
	// The outsider is re-parented before the probe starts: not tracked.
	script := fmt.Sprintf("(%s; sync; touch %s) >/dev/null 2>&1 &", outsiderWait(dir, goFile), done)
	if err := exec.Command("sh", "-c", script).Run(); err != nil {
		t.Fatal(err)
	}
	stop := start(t, Config{})
	const size = 8 << 20
	if err := os.WriteFile(own, make([]byte, size), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(goFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	waitOutsider(t, done, "sync")
	st := stop()
	c := st.Cache
	if c == nil {
		t.Skipf("no page-cache tracepoints: %v", st.Notes)
	}
	if !c.PagesNotCounted || c.HitRatio != -1 || c.Lookups != 0 || c.ReadAdded != 0 || c.Dirtied != 0 {
		t.Errorf("page cache %+v: want the per-page counts marked not counted", *c)
	}
	var others int64
	for _, d := range st.Devices {
		for _, o := range d.Ops {
			if o.Op == "write" {
				others += o.WritebackBytes
			}
		}
	}
	if c.WrittenBackBytes < size || others < size {
		t.Errorf("written back for the workload's files %d bytes, by other threads %d: want both >= its %d (the outside sync wrote them)", c.WrittenBackBytes, others, size)
	}
	t.Logf("page cache %+v; written back by others for it: %d", *c, others)
}

// storageOfRun runs the fileio benchmark c in this process (laid out
// first, unobserved) under the storage probe with --storage, and returns
// what the probe saw; it skips the test when c's engine is not available
// here.
func storageOfRun(t *testing.T, c model.FileIOConfig) *model.StorageIO {
	t.Helper()
	if err := fileio.Validate(&c); err != nil {
		t.Skipf("%s here: %v", c.IOEngine, err)
	}
	f, err := fileio.New(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Cleanup() })
	if err := f.Prepare(context.Background()); err != nil {
		t.Fatal(err)
	}
	stop := start(t, Config{Files: true})
	if _, err := f.Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	return stop()
}

// TestAsyncWritesInFiles: with --storage, writes made through io_uring
// and libaio (the fileio benchmark's engines, 8 in flight) are in the
// files table as write calls are: MariaDB's data files, written through
// io_uring, read "writes 0" while the device wrote 78.5 MiB; libaio's are
// counted as io_getevents returns them, by each iocb's fd.
func TestAsyncWritesInFiles(t *testing.T) {
	for _, engine := range []string{"io_uring", "libaio"} {
		t.Run(engine, func(t *testing.T) {
			c := fileio.Defaults()
			c.Dir, c.Size, c.DurationSec, c.Ops = t.TempDir(), 256*4096, 0, 500
			c.RW, c.IOEngine, c.IODepth, c.Direct = "randwrite", engine, 8, true
			st := storageOfRun(t, c)
			var writes, bytes int64
			for _, fi := range st.Files {
				if strings.HasPrefix(filepath.Base(fi.Path), "perfsleuth-fileio.") {
					writes, bytes = fi.Writes.Count, fi.Writes.Bytes
				}
			}
			if writes != 500 || bytes != 500*4096 {
				t.Errorf("the files table holds %d writes, %d bytes of the benchmark's file, want the 500 %s writes, %d bytes: %+v", writes, bytes, engine, 500*4096, st.Files)
			}
		})
	}
}

// TestUringDepth: with --storage, the queue depth of the benchmark's
// io_uring ring as the kernel saw it: every read submitted and completed,
// at most --iodepth in flight, and a mean in flight and a latency from
// submission to completion measured.
func TestUringDepth(t *testing.T) {
	for _, depth := range []int{1, 16} {
		t.Run(fmt.Sprintf("iodepth=%d", depth), func(t *testing.T) {
			c := fileio.Defaults()
			c.Dir, c.Size, c.DurationSec, c.Ops = t.TempDir(), 1024*4096, 0, 2000
			c.RW, c.IOEngine, c.IODepth, c.Direct = "randread", "io_uring", depth, true
			st := storageOfRun(t, c)
			var rings []model.URing
			for _, a := range st.AsyncIO {
				if a.Interface == "io_uring" {
					rings = a.Rings
				}
			}
			if len(rings) != 1 {
				t.Fatalf("rings %+v: want the benchmark's one", rings)
			}
			r := rings[0]
			t.Logf("%+v", r)
			if r.Pid != os.Getpid() || r.Submitted != 2000 || r.Completed != 2000 || r.Unmatched != 0 {
				t.Errorf("ring %+v: want this process's 2000 reads submitted and completed", r)
			}
			// The benchmark keeps depth requests unreaped; the kernel
			// has fewer in flight when some completed and wait to be
			// reaped, but all of them at its start (16 submitted well
			// within one read's time here).
			if r.InFlightMax < int64((depth+1)/2) || r.InFlightMax > int64(depth) || r.InFlightMean <= 0 || r.InFlightMean > float64(depth)+1e-9 || r.LatencyMeanSec <= 0 {
				t.Errorf("ring %+v: want %d in flight at most (half of it at least), a mean in flight above 0 and at most that, and a latency", r, depth)
			}
		})
	}
}

// waitOutsider waits up to 20 s for the outside process of a test to make
// the file done, its sign that it finished what it does.
func waitOutsider(t *testing.T, done, what string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(done); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the outside %s did not finish in 20 s", what)
		}
	}
}
