package fileio

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// procIO reads /proc/self/io (the whole process's IO accounting).
func procIO(t *testing.T) map[string]int64 {
	t.Helper()
	fh, err := os.Open("/proc/self/io")
	if err != nil {
		t.Skipf("no IO accounting in this kernel: %v", err)
	}
	defer fh.Close()
	m := map[string]int64{}
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ": ")
		if ok {
			m[k], _ = strconv.ParseInt(v, 10, 64)
		}
	}
	return m
}

// opStats returns the stats of op in r, zero if it did not run.
func opStats(r *model.Result, op string) model.OpStats {
	for _, s := range r.FileIO.Ops {
		if s.Op == op {
			return s
		}
	}
	return model.OpStats{}
}

func run(t *testing.T, f *FileIO) *model.Result {
	t.Helper()
	r, err := f.Run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// ioSlack bounds the process's other reads and writes during a run: Go's
// runtime wakes its poller with 8-byte eventfd writes, and reading
// /proc/self/io itself takes a couple of read calls of a few hundred bytes.
const (
	ioSlackCalls = 16
	ioSlackBytes = 4096
)

// Regression guard for "the benchmark does exactly the IO it reports": the
// kernel's own count of the process's write calls and bytes must match.
func TestRandWriteDoesExactlyTheAskedIO(t *testing.T) {
	c := smallConfig(t.TempDir())
	c.RW, c.Ops = "randwrite", 1000
	f := prepared(t, c)
	before := procIO(t)
	r := run(t, f)
	after := procIO(t)

	w := opStats(r, "write")
	if w.Count != 1000 || w.Bytes != 4096000 || len(r.FileIO.Ops) != 1 {
		t.Fatalf("ops = %+v, want 1000 writes of 4096000 bytes and nothing else", r.FileIO.Ops)
	}
	if w.Latency.Count != 1000 || w.Latency.P50Ns <= 0 {
		t.Errorf("latency = %+v, want 1000 values", w.Latency)
	}
	calls, bytes := after["syscw"]-before["syscw"], after["wchar"]-before["wchar"]
	if calls < 1000 || calls > 1000+ioSlackCalls || bytes < 4096000 || bytes > 4096000+ioSlackBytes {
		t.Errorf("the kernel counted %d write calls and %d bytes, want 1000 (+%d) and 4096000 (+%d)",
			calls, bytes, ioSlackCalls, ioSlackBytes)
	}
	if !(r.DurationSec > 0) || w.OpsPerSec <= 0 || w.MiBPerSec <= 0 {
		t.Errorf("duration %g s, %g ops/s, %g MiB/s", r.DurationSec, w.OpsPerSec, w.MiBPerSec)
	}
}

func TestRandReadDoesExactlyTheAskedIO(t *testing.T) {
	c := smallConfig(t.TempDir())
	c.RW, c.Ops, c.BS, c.Files, c.Size = "randread", 1000, 8192, 2, 2*64*8192
	f := prepared(t, c)
	before := procIO(t)
	r := run(t, f)
	after := procIO(t)

	rd := opStats(r, "read")
	if rd.Count != 1000 || rd.Bytes != 8192000 || len(r.FileIO.Ops) != 1 {
		t.Fatalf("ops = %+v, want 1000 reads of 8192000 bytes", r.FileIO.Ops)
	}
	calls, bytes := after["syscr"]-before["syscr"], after["rchar"]-before["rchar"]
	if calls < 1000 || calls > 1000+ioSlackCalls || bytes < 8192000 || bytes > 8192000+ioSlackBytes {
		t.Errorf("the kernel counted %d read calls and %d bytes, want 1000 (+%d) and 8192000 (+%d)",
			calls, bytes, ioSlackCalls, ioSlackBytes)
	}
	if w := after["syscw"] - before["syscw"]; w > ioSlackCalls {
		t.Errorf("a read-only run made %d write calls", w)
	}
}

func TestOpsAreSplitAcrossThreads(t *testing.T) {
	c := smallConfig(t.TempDir())
	c.RW, c.Ops, c.Threads = "randread", 10, 3
	r := run(t, prepared(t, c))
	if got := r.FileIO.ThreadOps; len(got) != 3 || got[0] != 4 || got[1] != 3 || got[2] != 3 {
		t.Errorf("ThreadOps = %v, want [4 3 3]", got)
	}
}

func TestFsyncEveryNWrites(t *testing.T) {
	for _, fdatasync := range []bool{false, true} {
		c := smallConfig(t.TempDir())
		c.RW, c.Ops, c.Fsync, c.Fdatasync = "randwrite", 100, 10, fdatasync
		r := run(t, prepared(t, c))
		name, other := "fsync", "fdatasync"
		if fdatasync {
			name, other = other, name
		}
		if s := opStats(r, name); s.Count != 10 || s.Bytes != 0 || s.Latency.Count != 10 {
			t.Errorf("%s = %+v, want exactly 10 (one per 10 writes)", name, s)
		}
		if s := opStats(r, other); s.Count != 0 {
			t.Errorf("%s ran %d times", other, s.Count)
		}
		if s := opStats(r, "write"); s.Count != 100 {
			t.Errorf("writes = %d, want 100 (syncs are not counted in --ops)", s.Count)
		}
	}
}

func TestEndFsyncSyncsEveryWrittenFileOfEveryThread(t *testing.T) {
	c := smallConfig(t.TempDir())
	c.RW, c.Ops, c.Files, c.Threads, c.Size, c.EndFsync = "randwrite", 200, 3, 2, 3*64*4096, true
	r := run(t, prepared(t, c))
	// 100 random writes per thread over 3 files hit every file (a miss has
	// probability 3*(2/3)^100), so each thread syncs 3 files.
	if s := opStats(r, "fsync"); s.Count != 6 {
		t.Errorf("end fsyncs = %d, want 6 (2 threads x 3 files)", s.Count)
	}

	c = smallConfig(t.TempDir())
	c.RW, c.Ops, c.Files, c.Threads, c.Size, c.EndFsync = "write", 10, 4, 2, 4*64*4096, true
	// Sequentially, thread 0 owns files 0 and 2 and writes only file 0 in 5 ops.
	if s := opStats(run(t, prepared(t, c)), "fsync"); s.Count != 2 {
		t.Errorf("end fsyncs = %d, want 2 (one written file per thread)", s.Count)
	}
}

// stamps reads back the offset and write stamp at the head of every block.
func stamps(t *testing.T, path string, bs int64) (offs, ids []uint64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for off := int64(0); off < int64(len(b)); off += bs {
		offs = append(offs, binary.LittleEndian.Uint64(b[off:]))
		ids = append(ids, binary.LittleEndian.Uint64(b[off+8:]))
	}
	return offs, ids
}

func TestSequentialWriteCoversEveryBlockOnce(t *testing.T) {
	for _, tc := range []struct{ files, threads int }{{1, 1}, {2, 2}, {4, 2}, {1, 3}, {2, 4}} {
		dir := t.TempDir()
		const blocks = 48
		c := smallConfig(dir)
		c.RW, c.Files, c.Threads = "write", tc.files, tc.threads
		c.Size = int64(tc.files) * blocks * 4096
		c.Ops = int64(tc.files) * blocks
		r := run(t, prepared(t, c))
		if s := opStats(r, "write"); s.Count != c.Ops {
			t.Fatalf("%d files %d threads: %d writes, want %d", tc.files, tc.threads, s.Count, c.Ops)
		}
		seen := map[uint64]bool{}
		for i := range tc.files {
			offs, ids := stamps(t, filepath.Join(dir, fileName(i)), 4096)
			for blk, off := range offs {
				if off != uint64(blk)*4096 {
					t.Fatalf("%d files %d threads: %s block %d holds offset stamp %d: not written by the run",
						tc.files, tc.threads, fileName(i), blk, off)
				}
				if seen[ids[blk]] {
					t.Fatalf("write stamp %#x appears twice", ids[blk])
				}
				seen[ids[blk]] = true
			}
		}
	}
}

func TestSequentialWrapsAround(t *testing.T) {
	c := smallConfig(t.TempDir())
	c.RW, c.Ops = "write", 64*3+5 // three passes and five blocks
	f := prepared(t, c)
	run(t, f)
	offs, ids := stamps(t, filepath.Join(c.Dir, fileName(0)), 4096)
	for blk := range offs {
		// Write n went to block n%64; the last to reach block blk is the
		// highest n below 197 with n%64 == blk.
		want := uint64(64*3 + blk)
		if blk >= 5 {
			want = uint64(64*2 + blk)
		}
		if offs[blk] != uint64(blk)*4096 || ids[blk] != want {
			t.Fatalf("block %d: stamp offset %d write %d, want %d and %d", blk, offs[blk], ids[blk], blk*4096, want)
		}
	}
}

func TestRandRWMix(t *testing.T) {
	c := smallConfig(t.TempDir())
	c.RW, c.Ops, c.RWMixRead = "randrw", 10000, 70
	f := prepared(t, c)
	r := run(t, f)
	reads, writes := opStats(r, "read").Count, opStats(r, "write").Count
	// Binomial(10000, 0.7) has a standard deviation of 46: 6 sigma is 275.
	if reads+writes != 10000 || reads < 7000-275 || reads > 7000+275 {
		t.Errorf("%d reads and %d writes, want 10000 ops with about 7000 reads", reads, writes)
	}
	// The same seed gives the same op sequence.
	if r2 := run(t, f); opStats(r2, "read").Count != reads {
		t.Errorf("second run with the same seed: %d reads, first %d", opStats(r2, "read").Count, reads)
	}
}

func TestDirectRun(t *testing.T) {
	c := smallConfig(t.TempDir())
	c.RW, c.Direct, c.BS, c.Size, c.Ops = "write", true, 1<<20, 8<<20, 16
	f := prepared(t, c)
	r, err := f.Run(context.Background(), nil)
	if err != nil && strings.Contains(err.Error(), "does not support O_DIRECT") {
		t.Skipf("the file system under %s has no O_DIRECT: %v", c.Dir, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if s := opStats(r, "write"); s.Count != 16 || s.Bytes != 16<<20 {
		t.Errorf("writes = %+v, want 16 of 1 MiB", s)
	}
	c.RW = "randread"
	g, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Prepare(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s := opStats(run(t, g), "read"); s.Count != 16 {
		t.Errorf("O_DIRECT reads = %d, want 16", s.Count)
	}
}

func TestCancelReturnsPartialResultAndCleanupRemovesAll(t *testing.T) {
	cwd := t.TempDir()
	t.Chdir(cwd)
	c := smallConfig("")
	c.RW, c.Ops, c.DurationSec, c.Threads = "randrw", 0, 60, 2
	f := prepared(t, c)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	r, err := f.Run(ctx, nil)
	if err != nil {
		t.Fatalf("a cancelled Run returned %v, want a nil error", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Run took %v to stop after cancellation", took)
	}
	if r.DurationSec <= 0 || r.DurationSec > 5 || opStats(r, "read").Count == 0 || opStats(r, "write").Count == 0 {
		t.Errorf("partial result: %g s, ops %+v", r.DurationSec, r.FileIO.Ops)
	}
	if err := f.Cleanup(); err != nil {
		t.Fatal(err)
	}
	if ns := names(t, cwd); len(ns) != 0 {
		t.Errorf("after Cleanup the current dir holds %q", ns)
	}
}

func TestDurationAndProgress(t *testing.T) {
	c := smallConfig(t.TempDir())
	c.Ops, c.DurationSec = 0, 0.6
	f := prepared(t, c)
	var mu sync.Mutex
	var fr []float64
	r, err := f.Run(context.Background(), func(x float64) {
		mu.Lock()
		fr = append(fr, x)
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.DurationSec < 0.6 || r.DurationSec > 1.5 {
		t.Errorf("a 0.6 s run took %g s", r.DurationSec)
	}
	if len(fr) < 2 || fr[len(fr)-1] != 1 {
		t.Fatalf("progress calls %v, want a few ending in 1", fr)
	}
	for i := 1; i < len(fr); i++ {
		if fr[i] < fr[i-1] || fr[i] > 1 {
			t.Errorf("progress went %v", fr)
		}
	}
}

func TestTruncatedFileStopsTheRunWithAClearError(t *testing.T) {
	c := smallConfig(t.TempDir())
	c.RW, c.Ops = "read", 100
	f := prepared(t, c)
	path := filepath.Join(c.Dir, fileName(0))
	if err := os.Truncate(path, 10*4096+100); err != nil {
		t.Fatal(err)
	}
	r, err := f.Run(context.Background(), nil)
	want := "pread " + path + " at offset 40960: short read (was the file truncated?): 100 of 4096 bytes"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v\nwant %s", err, want)
	}
	if s := opStats(r, "read"); s.Count != 10 {
		t.Errorf("the partial result has %d reads, want the 10 before the failure", s.Count)
	}
}

func TestIOErrorNamesFileOffsetAndErrno(t *testing.T) {
	// EIO and ENOSPC cannot be provoked on demand here, so this checks the
	// failure path the hot loop takes on any errno.
	var stop, failed atomic.Bool
	w := &worker{paths: []string{"/x/perfsleuth-fileio.0"}, bs: 4096, stop: &stop, failed: &failed}
	w.ioFailed("pwrite", 0, 8192, -1, unix.EIO)
	if w.err == nil || w.err.Error() != "pwrite /x/perfsleuth-fileio.0 at offset 8192: input/output error (EIO)" {
		t.Errorf("got %v", w.err)
	}
	if !stop.Load() {
		t.Error("a failed op did not stop the run")
	}
	w.ioFailed("pwrite", 0, 0, -1, unix.ENOSPC)
	if !strings.HasSuffix(w.err.Error(), "no space left on device (ENOSPC): the file system is full, lower --size or use another --dir") {
		t.Errorf("got %v", w.err)
	}
}

func TestSeqRegionsPartitionTheFiles(t *testing.T) {
	for threads := 1; threads <= 7; threads++ {
		for files := 1; files <= 7; files++ {
			for _, blocks := range []int64{7, 8, 64, 1000} {
				if threads > files && blocks < int64((threads+files-1)/files) {
					continue // Validate refuses these
				}
				owner := make(map[[2]int64]int)
				lens := map[int][]int64{} // per file, the region lengths of sharing threads
				for th := range threads {
					rs := seqRegions(th, threads, files, blocks)
					if len(rs) == 0 {
						t.Fatalf("%d threads %d files %d blocks: thread %d has nothing to do", threads, files, blocks, th)
					}
					for _, r := range rs {
						if r.start >= r.end {
							t.Fatalf("%d threads %d files: thread %d has the empty region %+v", threads, files, th, r)
						}
						lens[r.file] = append(lens[r.file], r.end-r.start)
						for b := r.start; b < r.end; b++ {
							k := [2]int64{int64(r.file), b}
							if o, dup := owner[k]; dup {
								t.Fatalf("%d threads %d files: file %d block %d belongs to threads %d and %d", threads, files, r.file, b, o, th)
							}
							owner[k] = th
						}
					}
				}
				if int64(len(owner)) != int64(files)*blocks {
					t.Errorf("%d threads %d files %d blocks: %d blocks covered, want %d", threads, files, blocks, len(owner), int64(files)*blocks)
				}
				for f, ls := range lens {
					if slices.Max(ls)-slices.Min(ls) > 1 {
						t.Errorf("%d threads %d files: the shares of file %d are uneven: %v", threads, files, f, ls)
					}
				}
			}
		}
	}
}

// A write that finds the file system full stops the run with an error naming
// the file, offset and errno. The file's blocks are punched out of a full
// tmpfs, so the run's writes need space there is not.
func TestDiskFullMidRunStopsWithENOSPC(t *testing.T) {
	dir := mountTmpfs(t, "1M")
	c := smallConfig(dir)
	c.RW, c.Size, c.Ops = "randwrite", 512<<10, 100
	f := prepared(t, c)
	filler := filepath.Join(dir, "filler")
	fillUp(t, filler)
	path := filepath.Join(dir, fileName(0))
	fd, err := unix.Open(path, unix.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	err = unix.Fallocate(fd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, 0, c.Size)
	unix.Close(fd)
	if err != nil {
		t.Skipf("cannot punch holes in tmpfs: %v", err)
	}
	fillUp(t, filler) // take what the hole freed

	_, err = f.Run(context.Background(), nil)
	if err == nil || !strings.HasPrefix(err.Error(), "pwrite "+path+" at offset ") ||
		!strings.Contains(err.Error(), "no space left on device (ENOSPC)") {
		t.Fatalf("got %v, want an ENOSPC error naming %s and the offset", err, path)
	}
	if err := f.Cleanup(); err != nil {
		t.Fatal(err)
	}
	if got := names(t, dir); !slices.Equal(got, []string{"filler"}) {
		t.Errorf("after Cleanup the dir holds %q, want only the foreign filler", got)
	}
}

// fillUp appends to path until its file system is full.
func fillUp(t *testing.T, path string) {
	t.Helper()
	fh, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	buf := make([]byte, 4096)
	for err == nil {
		_, err = fh.Write(buf)
	}
	if !errors.Is(err, unix.ENOSPC) {
		t.Fatalf("filling %s ended with %v, want ENOSPC", path, err)
	}
}
