package fileio

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// engineConfig is smallConfig for an asynchronous engine at depth, with
// O_DIRECT (libaio is asynchronous only then); the test is skipped where
// the engine cannot be opened.
func engineConfig(t *testing.T, engine string, depth int) model.FileIOConfig {
	t.Helper()
	c := smallConfig(t.TempDir())
	c.IOEngine, c.IODepth, c.IODepthBatch, c.Direct = engine, depth, 1, true
	if err := Validate(&c); err != nil {
		if strings.Contains(err.Error(), "io_uring_setup") || strings.Contains(err.Error(), "io_setup") {
			t.Skipf("%s is not available here: %v", engine, err)
		}
		t.Fatal(err)
	}
	return c
}

var asyncEngines = []string{engineUring, engineLibaio}

// TestEnginesWriteEveryBlockOnce: sequential writes through io_uring and
// libaio at depth 8 leave every block stamped with its own offset and a
// write stamp seen once, as psync's do: each request in flight went where
// it was meant, with a buffer of its own. The submit and complete
// latencies hold every write, and the threads kept 8 in flight.
func TestEnginesWriteEveryBlockOnce(t *testing.T) {
	for _, engine := range asyncEngines {
		for _, threads := range []int{1, 2} {
			const blocks = 64
			c := engineConfig(t, engine, 8)
			c.RW, c.Threads, c.Size, c.Ops = "write", threads, blocks*4096, blocks
			r := run(t, prepared(t, c))
			w := opStats(r, "write")
			if w.Count != blocks || w.Bytes != blocks*4096 || w.Latency.Count != blocks {
				t.Fatalf("%s, %d threads: writes %+v, want %d with their latencies", engine, threads, w, blocks)
			}
			if w.SubmitLatency == nil || w.CompleteLatency == nil || w.SubmitLatency.Count != blocks || w.CompleteLatency.Count != blocks {
				t.Errorf("%s: submit %+v complete %+v, want %d each", engine, w.SubmitLatency, w.CompleteLatency, blocks)
			}
			if d := r.FileIO.Depths; len(d) != 9 || d[8] == 0 {
				t.Errorf("%s: in flight after the submits %v, want some at 8", engine, d)
			}
			offs, ids := stamps(t, filepath.Join(c.Dir, fileName(0)), 4096)
			seen := map[uint64]bool{}
			for blk, off := range offs {
				if off != uint64(blk)*4096 {
					t.Fatalf("%s, %d threads: block %d holds offset stamp %d: not written by the run", engine, threads, blk, off)
				}
				if seen[ids[blk]] {
					t.Fatalf("%s: write stamp %#x appears twice", engine, ids[blk])
				}
				seen[ids[blk]] = true
			}
		}
	}
}

// TestEnginesReadExactly: random O_DIRECT reads through each engine are
// exactly the ones asked for, by the kernel's count of the bytes the
// process read from the device.
func TestEnginesReadExactly(t *testing.T) {
	for _, engine := range asyncEngines {
		c := engineConfig(t, engine, 16)
		c.RW, c.Ops, c.Threads = "randread", 1000, 2
		f := prepared(t, c)
		before := procIO(t)
		r := run(t, f)
		after := procIO(t)
		rd := opStats(r, "read")
		if rd.Count != 1000 || rd.Bytes != 4096000 || len(r.FileIO.Ops) != 1 {
			t.Fatalf("%s: ops %+v, want 1000 reads of 4096000 bytes", engine, r.FileIO.Ops)
		}
		if got := after["read_bytes"] - before["read_bytes"]; got < 4096000 || got > 4096000+ioSlackBytes {
			t.Errorf("%s: the kernel counted %d bytes read from the device, want 4096000 (+%d)", engine, got, ioSlackBytes)
		}
	}
}

// TestEnginesFsyncWaitForTheQueue: --fsync 4 with a queue of 8: a sync
// after every 4 writes to the file, each after the writes before it
// completed.
func TestEnginesFsyncWaitForTheQueue(t *testing.T) {
	for _, engine := range asyncEngines {
		c := engineConfig(t, engine, 8)
		c.RW, c.Ops, c.Fsync = "randwrite", 64, 4
		r := run(t, prepared(t, c))
		if w, s := opStats(r, "write").Count, opStats(r, "fsync").Count; w != 64 || s != 16 {
			t.Errorf("%s: %d writes and %d syncs, want 64 and 16", engine, w, s)
		}
	}
}

// TestEnginesStopWaitsForWhatIsInFlight: a run stopped by its duration
// ends with every submitted request reaped: the counts and the latency
// histograms agree.
func TestEnginesStopWaitsForWhatIsInFlight(t *testing.T) {
	for _, engine := range asyncEngines {
		c := engineConfig(t, engine, 32)
		c.RW, c.Ops, c.DurationSec = "randread", 0, 0.3
		f := prepared(t, c)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		r, err := f.Run(ctx, nil)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		rd := opStats(r, "read")
		if rd.Count == 0 || rd.Latency.Count != rd.Count || rd.CompleteLatency == nil || rd.CompleteLatency.Count != rd.Count {
			t.Errorf("%s: %d reads, latencies %d and %+v: want them equal", engine, rd.Count, rd.Latency.Count, rd.CompleteLatency)
		}
	}
}

// TestValidateEngines: the engine settings that cannot work say why and
// what to do.
func TestValidateEngines(t *testing.T) {
	for _, tc := range []struct {
		edit func(c *model.FileIOConfig)
		want string
	}{
		{func(c *model.FileIOConfig) { c.IOEngine = "posixaio" }, "is not one of psync, libaio, io_uring"},
		{func(c *model.FileIOConfig) { c.IODepth = 4 }, "psync issues one request at a time per thread"},
		{func(c *model.FileIOConfig) { c.IOEngine, c.IODepth, c.IODepthBatch = "io_uring", 4, 8 }, "--iodepth-batch 8 is more than --iodepth 4"},
		{func(c *model.FileIOConfig) { c.IOEngine, c.IODepth = "io_uring", -1 }, "use 1 or more"},
		{func(c *model.FileIOConfig) { c.IOEngine, c.IODepth = "io_uring", 5000 }, "at most 4096"},
	} {
		c := smallConfig(t.TempDir())
		tc.edit(&c)
		if err := Validate(&c); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", c, err, tc.want)
		}
	}
	c := smallConfig(t.TempDir())
	c.IOEngine, c.IODepth = "libaio", 4
	for _, n := range Notices(c) {
		if strings.Contains(n, "libaio without --direct") {
			return
		}
	}
	t.Errorf("libaio without --direct: no notice that it is synchronous: %q", Notices(c))
}

// TestVerify: with --verify, random writes through each engine (two
// threads, 8 in flight for the asynchronous ones, over the same blocks)
// are read back after the run and every block written checks; a block
// changed between the run and the read-back fails the run, named.
func TestVerify(t *testing.T) {
	for _, engine := range append([]string{enginePsync}, asyncEngines...) {
		depth := 8
		if engine == enginePsync {
			depth = 1
		}
		const blocks = 64
		c := engineConfig(t, engine, depth)
		c.RW, c.Threads, c.Size, c.Ops, c.Verify = "randwrite", 2, blocks*4096, 400, true
		r := run(t, prepared(t, c))
		v := r.FileIO.Verify
		if v == nil || v.Blocks == 0 || v.Blocks > blocks || v.Bad != 0 {
			t.Fatalf("%s: verify %+v: want the blocks written (at most %d) all good", engine, v, blocks)
		}
		t.Logf("%s: %d writes, %d blocks read back, none bad", engine, opStats(r, "write").Count, v.Blocks)

		// One byte of every block changed after the run: the read-back
		// finds them.
		f := prepared(t, c)
		beforeVerify = func() {
			path := filepath.Join(c.Dir, fileName(0))
			fd, err := os.OpenFile(path, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer fd.Close()
			for b := int64(0); b < blocks; b++ {
				fd.WriteAt([]byte{0xff ^ byte(b)}, b*4096+100)
			}
			fd.Sync()
		}
		_, err := f.Run(context.Background(), nil)
		beforeVerify = nil
		if err == nil || !strings.Contains(err.Error(), "verify:") || !strings.Contains(err.Error(), "CRC-32C") {
			t.Errorf("%s: blocks changed after the run: %v, want verify to fail on them", engine, err)
		}
	}
	c := smallConfig(t.TempDir())
	c.RW, c.Verify = "randread", true
	if err := Validate(&c); err == nil || !strings.Contains(err.Error(), "--verify") {
		t.Errorf("--verify with --rw randread: %v, want it refused", err)
	}
}
