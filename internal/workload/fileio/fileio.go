// Package fileio is perfsleuth's file-IO benchmark, a replacement for
// sysbench fileio and fio's psync engine that says what it does.
//
// Layout. The files live in one directory. With no --dir, perfsleuth creates
// perfsleuth-fileio-XXXXXX in the current directory (not under /tmp, which is
// often tmpfs and would measure memory). A given --dir must exist and be
// writable; perfsleuth writes only perfsleuth-fileio.0 .. perfsleuth-fileio.N-1
// and a marker, .perfsleuth-fileio, that lists the files it created. A --dir
// holding anything not in the marker is refused unless --force (and even then a
// foreign file named like one of ours is never overwritten). Each file is
// --size / --files bytes rounded down to a multiple of --bs. Prepare checks
// the free space, writes real data (a repeating pseudo-random 1 MiB block, so
// neither zero pages nor compression flatter the device) in writes of --bs
// bytes (at least 4 KiB, at most 8 MiB; see layoutMinChunk for why not larger)
// and fsyncs every file. It leaves the page cache as it is (fio --invalidate=0),
// so buffered reads that follow may be served from memory; Notices says so.
// With --keep the files and marker stay, and a later run on the same --dir
// with the same file sizes reuses them.
//
// IO. Every thread opens every file it uses once, O_RDWR plus O_DIRECT, O_SYNC
// or O_DSYNC as asked, and issues pread(2)/pwrite(2) on the raw descriptor
// (not os.File, whose poll.FD locking costs on every op). Buffers are mmap'd,
// so page aligned for O_DIRECT. Write buffers hold pseudo-random data filled
// once; only the first 16 bytes of each write change, to carry the offset and
// the thread's write number, so every written block differs from every other
// (no dedup gains) and tests can check which blocks were written.
//
//   - Sequential modes (read, write, readwrite): with --files >= --threads,
//     thread t owns files t, t+threads, ...; with fewer files than threads, the
//     threads that share a file split it into disjoint contiguous regions. Each
//     thread walks its regions block by block and wraps around at the end. In
//     readwrite, reads and writes advance one shared position.
//   - Random modes (randread, randwrite, randrw): every op picks a file
//     uniformly among all files and a block-aligned offset uniformly within it,
//     as sysbench does (fio by default visits each block once per pass; here a
//     block may be hit twice or never). Each thread has its own PCG generator
//     seeded from --seed plus its index.
//   - readwrite and randrw: each op is a read with probability --rwmix-read %.
//   - --fsync N: per thread and file, after every N writes to the file, that
//     thread fsyncs (fdatasync with --fdatasync) its descriptor; each sync is
//     timed and reported as its own op, "fsync" or "fdatasync".
//   - --end-fsync: when the run ends, each thread syncs every file it wrote.
//     These syncs count as sync ops and in the run's duration (fio's
//     end_fsync). They are skipped when the run is interrupted.
//   - --ops N is reads plus writes over all threads: thread t does N/threads,
//     plus one if t < N%threads. --duration bounds time; with both, the first
//     limit reached ends the run.
//
// Measurement. Each op is timed with the monotonic clock (vDSO, no syscall) and
// recorded into per-thread HDR histograms per op type; counters are per thread
// and merged at the end, so the hot loop has no locks, channels or allocation.
// Workers poll an atomic stop flag set by a timer or by context cancellation.
// Cancelling the context stops every thread after its current op and Run
// returns the partial result; an IO error or a short read or write stops the
// run with an error naming the file, offset and errno.
package fileio

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// Names of the files perfsleuth creates in the work directory.
const (
	filePrefix = "perfsleuth-fileio."
	markerName = ".perfsleuth-fileio"
	dirPattern = "perfsleuth-fileio-"
)

const (
	// defaultDurationSec is used when neither --duration nor --ops is given;
	// 10 s is long enough for the page cache and device queues to settle and
	// short enough to repeat (fio's examples use 10-60 s).
	defaultDurationSec = 10
	// safeDirectAlign is the O_DIRECT alignment assumed when the device's
	// logical block size cannot be found: no common device has a larger one.
	safeDirectAlign = 4096
)

// maxIODepth bounds --iodepth: fio's own limit is 65535, but each request
// in flight holds two --bs buffers here.
const maxIODepth = 4096

// rwModes lists the valid --rw values in the order error messages show them.
var rwModes = []string{"read", "write", "randread", "randwrite", "readwrite", "randrw"}

// Defaults returns fio-like defaults: 4 KiB random reads of one 1 GiB file by
// one thread for 10 s, buffered, no syncs.
func Defaults() model.FileIOConfig {
	return model.FileIOConfig{
		RW:           "randread",
		RWMixRead:    50,
		BS:           4096,
		Size:         1 << 30,
		Files:        1,
		Threads:      1,
		DurationSec:  defaultDurationSec,
		Seed:         1,
		IOEngine:     enginePsync,
		IODepth:      1,
		IODepthBatch: 1,
	}
}

// Validate checks cfg and fills the default duration when neither a duration
// nor an op count bounds the run. Messages name the flag and say what to do.
func Validate(cfg *model.FileIOConfig) error {
	if !isMode(cfg.RW) {
		return fmt.Errorf("--rw %q is not one of %s", cfg.RW, strings.Join(rwModes, ", "))
	}
	if cfg.RWMixRead < 0 || cfg.RWMixRead > 100 {
		return fmt.Errorf("--rwmix-read %d is not a percentage: use 0..100", cfg.RWMixRead)
	}
	if cfg.BS < 1 {
		return fmt.Errorf("--bs %d: the block size must be at least 1 byte", cfg.BS)
	}
	if cfg.Verify {
		if cfg.RW == "read" || cfg.RW == "randread" {
			return fmt.Errorf("--verify checks the blocks a run writes: --rw %s writes none; use a --rw that writes", cfg.RW)
		}
		if cfg.BS < 32 {
			return fmt.Errorf("--verify needs blocks of 32 bytes or more (each holds its offset, a write stamp and a CRC-32C): --bs %d", cfg.BS)
		}
	}
	if cfg.Size < 1 {
		return fmt.Errorf("--size %d: the total file size must be at least 1 byte", cfg.Size)
	}
	if cfg.Files < 1 {
		return errors.New("--files must be at least 1")
	}
	if cfg.Threads < 1 {
		return errors.New("--threads must be at least 1")
	}
	if cfg.Fsync < 0 {
		return fmt.Errorf("--fsync %d is negative: use 0 for no syncs or N for a sync every N writes", cfg.Fsync)
	}
	if cfg.DurationSec < 0 {
		return fmt.Errorf("--duration %gs is negative: use a positive duration, or 0 with --ops", cfg.DurationSec)
	}
	if cfg.Ops < 0 {
		return fmt.Errorf("--ops %d is negative: use a positive count, or 0 with --duration", cfg.Ops)
	}
	if cfg.IOEngine != "" && !slices.Contains(engines, cfg.IOEngine) {
		return fmt.Errorf("--ioengine %q is not one of %s", cfg.IOEngine, strings.Join(engines, ", "))
	}
	if cfg.IODepth < 0 || cfg.IODepthBatch < 0 {
		return fmt.Errorf("--iodepth %d, --iodepth-batch %d: use 1 or more", cfg.IODepth, cfg.IODepthBatch)
	}
	if cfg.IODepth > maxIODepth {
		return fmt.Errorf("--iodepth %d: at most %d requests in flight per thread", cfg.IODepth, maxIODepth)
	}
	if cfg.Engine() == enginePsync && cfg.IODepth > 1 {
		return fmt.Errorf("--iodepth %d with --ioengine psync: psync issues one request at a time per thread (fio ignores the depth there): use --ioengine io_uring or libaio to keep %d in flight, or --threads %d", cfg.IODepth, cfg.IODepth, cfg.IODepth)
	}
	if cfg.IODepthBatch > cfg.Depth() {
		return fmt.Errorf("--iodepth-batch %d is more than --iodepth %d: a thread cannot submit more requests at once than it keeps in flight", cfg.IODepthBatch, cfg.IODepth)
	}
	if e := cfg.Engine(); e != enginePsync {
		// Opened and closed here, so that a kernel or container without it
		// is told before the files are laid out.
		eng, err := newEngine(e, 1)
		if err != nil {
			return err
		}
		eng.close()
	}
	if cfg.Sync && cfg.Dsync {
		return errors.New("--sync and --dsync together: pick one (--sync already waits for data and metadata)")
	}
	if cfg.Fdatasync && cfg.Fsync == 0 && !cfg.EndFsync {
		return errors.New("--fdatasync changes the syncs of --fsync N or --end-fsync, and neither is set: add one or drop --fdatasync")
	}
	per := fileSize(*cfg)
	if per == 0 {
		return fmt.Errorf("--bs %d is larger than each file (--size %d / --files %d = %d bytes): lower --bs or raise --size",
			cfg.BS, cfg.Size, cfg.Files, cfg.Size/int64(cfg.Files))
	}
	if !isRandom(cfg.RW) && cfg.Threads > cfg.Files {
		// Sharing threads split a file into regions of at least one block.
		perFile := (cfg.Threads + cfg.Files - 1) / cfg.Files
		if blocks := per / cfg.BS; blocks < int64(perFile) {
			return fmt.Errorf("--threads %d share %d file(s) of %d block(s) each in sequential mode, and each thread needs a block of its own: lower --threads or raise --size",
				cfg.Threads, cfg.Files, blocks)
		}
	}
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err == nil {
		// A margin for what else perfsleuth keeps open (probes, records).
		if need, may := openFiles(*cfg), lim.Cur; may > fdMargin && uint64(need) > may-fdMargin {
			return fmt.Errorf("--threads %d with --files %d keeps %d files open at once (%s), and this process may open %d (ulimit -n): lower --threads or --files, or raise the limit",
				cfg.Threads, cfg.Files, need, openWhy(cfg.RW), may)
		}
	}
	if cfg.Direct {
		dir := cfg.Dir
		if dir == "" {
			dir = "."
		}
		if lbs, ok := logicalBlockSize(dir); ok {
			if cfg.BS%lbs != 0 {
				return fmt.Errorf("--direct needs --bs to be a multiple of the device's logical block size (%d bytes under %s): --bs %d is not",
					lbs, dir, cfg.BS)
			}
		} else if cfg.BS%safeDirectAlign != 0 {
			return fmt.Errorf("--direct needs --bs to be a multiple of %d bytes here (the logical block size of the device under %s is unknown, and %d is safe on every device): --bs %d is not",
				safeDirectAlign, dir, safeDirectAlign, cfg.BS)
		}
	}
	if cfg.DurationSec == 0 && cfg.Ops == 0 {
		cfg.DurationSec = defaultDurationSec
	}
	return nil
}

// Notices says in plain words what the run will do that a user might not
// expect, one statement per entry. The sync mode is always stated, even when
// off: sysbench's "Calling fsync() at the end of test, Enabled." hidden in its
// output once cost a whole investigation (field report 002).
func Notices(cfg model.FileIOConfig) []string {
	var n []string
	writes := hasWrites(cfg)
	reads := hasReads(cfg)
	syncName := "fsync"
	if cfg.Fdatasync {
		syncName = "fdatasync"
	}

	if cfg.Ops > 0 && cfg.DurationSec > 0 {
		n = append(n, fmt.Sprintf("stops after %d reads+writes or %gs, whichever comes first", cfg.Ops, cfg.DurationSec))
	} else if cfg.Ops > 0 {
		n = append(n, fmt.Sprintf("stops after %d reads+writes over all threads", cfg.Ops))
	}
	per := fileSize(cfg)
	if per*int64(cfg.Files) != cfg.Size {
		n = append(n, fmt.Sprintf("each file is %s (%d bytes: --size %d / --files %d rounded down to a multiple of --bs %d), %s in all",
			human(per), per, cfg.Size, cfg.Files, cfg.BS, human(per*int64(cfg.Files))))
	}

	switch {
	case !writes:
		if cfg.Fsync > 0 || cfg.EndFsync || cfg.Sync || cfg.Dsync {
			n = append(n, "sync options have no effect: this run does not write")
		} else {
			n = append(n, "syncs: none (this run does not write)")
		}
	default:
		switch {
		case cfg.Fsync == 1:
			n = append(n, fmt.Sprintf("--fsync 1: a sync (%s) after every write, timed as its own op", syncName))
		case cfg.Fsync > 1:
			n = append(n, fmt.Sprintf("--fsync %d: a sync (%s) after every %d writes of a thread to a file, timed as its own op", cfg.Fsync, syncName, cfg.Fsync))
		default:
			n = append(n, "sync during the run: off (no fsync or fdatasync between writes)")
		}
		if cfg.EndFsync {
			n = append(n, fmt.Sprintf("%s of every written file at the end: on (timed as part of the run)", syncName))
		} else {
			n = append(n, "fsync of every written file at the end: off")
		}
		switch {
		case cfg.Sync:
			n = append(n, "O_SYNC: every write waits for the device (data and metadata)")
		case cfg.Dsync:
			n = append(n, "O_DSYNC: every write waits for the device (data, and the metadata needed to read it)")
		default:
			n = append(n, "O_SYNC/O_DSYNC: off")
		}
		if !cfg.Direct && !cfg.Sync && !cfg.Dsync && cfg.Fsync == 0 && !cfg.EndFsync {
			n = append(n, "buffered writes without fsync: data may still be in the page cache when the run ends, so the disk may not have seen it; add --end-fsync, --fsync N or --direct to include the device")
		}
	}

	switch cfg.Engine() {
	case engineLibaio:
		n = append(n, fmt.Sprintf("libaio: each thread keeps up to %d requests in flight, submitted %d at a time (io_submit, io_getevents)", cfg.Depth(), cfg.DepthBatch()))
		if !cfg.Direct {
			n = append(n, "libaio without --direct: a buffered read or write completes inside io_submit, so the requests are not in flight at once (as with fio): add --direct, or use --ioengine io_uring")
		}
	case engineUring:
		n = append(n, fmt.Sprintf("io_uring: each thread keeps up to %d requests in flight, submitted %d at a time (one ring per thread, no polling)", cfg.Depth(), cfg.DepthBatch()))
	}
	if cfg.Engine() != enginePsync && cfg.Fsync > 0 {
		n = append(n, "--fsync with an asynchronous engine: before each sync the thread waits for all its requests in flight, then syncs (as fio does for engines without asynchronous syncs)")
	}
	if cfg.Direct {
		n = append(n, "O_DIRECT: reads and writes bypass the page cache")
	} else if reads {
		n = append(n, "buffered reads: files were just written by prepare (or kept from an earlier run) and are likely in the page cache, so reads may never reach the disk; use --direct or drop caches")
	}

	if writes && !cfg.Direct && cfg.Threads > 1 {
		if isRandom(cfg.RW) {
			n = append(n, fmt.Sprintf("%d threads write at random offsets of %d file(s): threads writing the same file at once serialise on its inode lock", cfg.Threads, cfg.Files))
		} else if cfg.Threads > cfg.Files {
			n = append(n, fmt.Sprintf("%d threads share %d file(s): threads writing the same file serialise on its inode lock", cfg.Threads, cfg.Files))
		}
	}
	if isRandom(cfg.RW) {
		n = append(n, "random offsets are drawn independently (like sysbench): some blocks are hit more than once and some never, unlike fio's default of each block once per pass")
	} else if cfg.Threads > 1 {
		n = append(n, "sequential: each thread walks its own part of the files and wraps around at the end")
	}
	return n
}

// fileSize is the size of each file: --size / --files rounded down to a
// multiple of --bs, so every op is a whole block inside a file.
func fileSize(cfg model.FileIOConfig) int64 {
	if cfg.Files < 1 || cfg.BS < 1 {
		return 0
	}
	per := cfg.Size / int64(cfg.Files)
	return per / cfg.BS * cfg.BS
}

func isMode(rw string) bool {
	for _, m := range rwModes {
		if m == rw {
			return true
		}
	}
	return false
}

func isRandom(rw string) bool { return strings.HasPrefix(rw, "rand") }

func hasReads(cfg model.FileIOConfig) bool {
	switch cfg.RW {
	case "read", "randread":
		return true
	case "readwrite", "randrw":
		return cfg.RWMixRead > 0
	}
	return false
}

func hasWrites(cfg model.FileIOConfig) bool {
	switch cfg.RW {
	case "write", "randwrite":
		return true
	case "readwrite", "randrw":
		return cfg.RWMixRead < 100
	}
	return false
}

// logicalBlockSize reads the logical block size of the block device holding
// dir from sysfs: the device's own queue, or its parent disk's for a partition.
// It reports false for file systems without a block device (tmpfs, btrfs's
// anonymous devices, network file systems).
func logicalBlockSize(dir string) (int64, bool) {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return 0, false
	}
	base := fmt.Sprintf("/sys/dev/block/%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev))
	for _, p := range []string{filepath.Join(base, "queue/logical_block_size"), base + "/../queue/logical_block_size"} {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err == nil && v > 0 {
			return v, true
		}
	}
	return 0, false
}

// human formats a byte count the way the flags take it: "1 GiB", "1.5 MiB",
// "512 bytes".
func human(n int64) string {
	units := []string{"KiB", "MiB", "GiB", "TiB", "PiB"}
	if n < 1024 && n > -1024 {
		return fmt.Sprintf("%d bytes", n)
	}
	v := float64(n)
	u := ""
	for _, name := range units {
		if v < 1024 && v > -1024 {
			break
		}
		v /= 1024
		u = name
	}
	s := strconv.FormatFloat(v, 'f', 1, 64)
	s = strings.TrimSuffix(s, ".0")
	return s + " " + u
}

// fdMargin is what Validate leaves of the open-files limit for the rest of
// perfsleuth.
const fdMargin = 64

// openFiles is how many files the benchmark's threads keep open at once: in
// random modes each thread opens every file; in sequential modes each file
// is opened by the threads that share it, once each.
func openFiles(cfg model.FileIOConfig) int {
	if isRandom(cfg.RW) {
		return cfg.Threads * cfg.Files
	}
	return max(cfg.Threads, cfg.Files)
}

func openWhy(rw string) string {
	if isRandom(rw) {
		return "in random modes every thread opens every file"
	}
	return "in sequential modes a file is opened once by each thread that writes or reads it"
}
