package fileio

import (
	"context"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/workload"
)

// The benchmarks run the three jobs benchmarks/fio compares against fio, on
// the package directly:
//
//	go test -run '^$' -bench 'RandRead|RandWrite|SeqWrite' -benchtime 1000000x
//
// (a fixed count, since every call lays the file out again). The file size
// is PERFSLEUTH_BENCH_SIZE bytes (default 1 GiB, as in benchmarks/fio), laid
// out in PERFSLEUTH_BENCH_DIR (default a temporary directory).

func benchFileIO(b *testing.B, rw string, bs int64, direct bool) {
	size := int64(1 << 30)
	if s := os.Getenv("PERFSLEUTH_BENCH_SIZE"); s != "" {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			b.Fatalf("PERFSLEUTH_BENCH_SIZE=%q: %v", s, err)
		}
		size = v
	}
	dir := os.Getenv("PERFSLEUTH_BENCH_DIR")
	if dir == "" {
		dir = b.TempDir()
	}
	cfg := Defaults()
	cfg.RW, cfg.BS, cfg.Size, cfg.Direct, cfg.Dir = rw, bs, size, direct, dir
	cfg.Keep = true // reused by the next benchmark; removed below
	f, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	if err := f.Prepare(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.cfg.Keep = false; f.Cleanup() })
	// One untimed pass warms the page cache and the kernel's paths.
	f.cfg.Ops, f.cfg.DurationSec = 20000, 0
	if _, err := f.Run(context.Background(), nil); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	f.cfg.Ops = int64(b.N)
	res, err := f.Run(context.Background(), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	reportOps(b, res)
}

func reportOps(b *testing.B, res *model.Result) {
	for _, op := range res.FileIO.Ops {
		b.ReportMetric(op.OpsPerSec, op.Op+"s/s")
		b.ReportMetric(float64(op.Latency.P50Ns), op.Op+"-p50-ns")
	}
}

func BenchmarkRandRead4KCached(b *testing.B)    { benchFileIO(b, "randread", 4096, false) }
func BenchmarkRandWrite4KBuffered(b *testing.B) { benchFileIO(b, "randwrite", 4096, false) }
func BenchmarkSeqWrite1MDirect(b *testing.B)    { benchFileIO(b, "write", 1<<20, true) }

// BenchmarkLoopOverhead measures what the hot loop adds to each op: the same
// 4 KiB preads of /dev/zero (no page cache, no disk) issued by the worker
// loop and by a bare loop. The difference in ns/op is perfsleuth's cost per op.
func BenchmarkLoopOverhead(b *testing.B) {
	fd, err := unix.Open("/dev/zero", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		b.Skip(err)
	}
	defer unix.Close(fd)
	b.Run("bare", func(b *testing.B) {
		buf := make([]byte, 4096)
		for b.Loop() {
			if n, err := unix.Pread(fd, buf, 0); n != 4096 || err != nil {
				b.Fatal(n, err)
			}
		}
	})
	b.Run("worker", func(b *testing.B) {
		var stop, failed atomic.Bool
		w := &worker{stop: &stop, failed: &failed, base: time.Now(), bs: 4096, fds: []int{fd},
			random: true, read: true, nfiles: 1, blocks: 1 << 18, total: 1 << 18, opsLeft: int64(b.N),
			rrec: workload.NewRecorder(), paths: []string{"/dev/zero"}}
		w.rbuf, _ = w.mmap(4096)
		defer func() { w.fds = nil; w.close() }()
		b.ResetTimer()
		w.loop()
		if w.err != nil || w.reads != int64(b.N) {
			b.Fatal(w.err, w.reads)
		}
	})
}
