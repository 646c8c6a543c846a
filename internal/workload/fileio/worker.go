package fileio

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/bits"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/workload"
)

// Seeds' second halves, so that offsets, write data and prepare data come
// from unrelated streams for the same --seed.
const (
	offsetStream  = 0x9e3779b97f4a7c15
	bufferStream  = 0xbf58476d1ce4e5b9
	patternStream = 0x94d049bb133111eb
)

// region is a run of blocks [start, end) of one file that a thread walks in
// sequential modes.
type region struct {
	file       int
	start, end int64
}

// worker is one benchmark thread. Its fields are touched only by its own
// goroutine while it runs, except done, which the progress reporter reads.
type worker struct {
	_ [64]byte // keep the hot fields off other workers' cache lines

	tid int // the OS thread it runs on (locked), for WorkerTIDs

	// nextYield is when the loop next passes through the Go scheduler
	// (yield), as time since base.
	nextYield time.Duration

	stop   *atomic.Bool
	failed *atomic.Bool // set with stop when any thread's op failed
	base   time.Time    // reference for the monotonic clock readings
	bs     int64
	id     uint64
	fds    []int // by file index; -1 where this thread does not use the file

	random bool
	mixed  bool
	read   bool   // the op in single-direction modes
	mix    uint64 // read percentage in mixed modes
	nfiles uint64
	blocks uint64 // per file
	total  uint64 // blocks over all files
	rng    rand.PCG

	regions []region
	ri      int
	pos     int64

	opsLeft int64 // -1: bounded by time only

	rbuf, wbuf []byte
	maps       [][]byte

	fsyncEvery int
	sinceSync  []int
	written    []bool
	// verify (--verify): each block written is sealed (sealed) and its
	// place marked in wroteBlocks, a bitmap per file, for the read-back.
	verify      bool
	wroteBlocks [][]uint64
	fdatasync   bool

	reads, writes, syncs int64
	rrec, wrec, srec     *workload.Recorder

	// engine is --ioengine; async its queue when asynchronous (nil for
	// psync). writesIssued numbers the writes as they are prepared (the
	// stamp in each block), syncDue the files whose sync waits for the
	// requests in flight.
	engine       string
	async        *asyncState
	writesIssued int64
	syncDue      []int

	paths []string
	err   error

	done atomic.Int64 // reads+writes, for progress
	_    [64]byte
}

// newWorker opens thread t's files and allocates its buffers.
func (f *FileIO) newWorker(t int, stop, failed *atomic.Bool) (_ *worker, err error) {
	cfg := f.cfg
	blocks := f.fileSize / cfg.BS
	// w is not the named result: the deferred close below must see the
	// worker, not the nil that an error return sets the result to.
	w := &worker{
		stop:        stop,
		failed:      failed,
		base:        time.Now(),
		bs:          cfg.BS,
		id:          uint64(t),
		fds:         make([]int, cfg.Files),
		random:      isRandom(cfg.RW),
		nfiles:      uint64(cfg.Files),
		blocks:      uint64(blocks),
		total:       uint64(blocks) * uint64(cfg.Files),
		opsLeft:     -1,
		fsyncEvery:  cfg.Fsync,
		sinceSync:   make([]int, cfg.Files),
		written:     make([]bool, cfg.Files),
		verify:      cfg.Verify,
		wroteBlocks: make([][]uint64, cfg.Files),
		fdatasync:   cfg.Fdatasync,
		rrec:        workload.NewRecorder(),
		wrec:        workload.NewRecorder(),
		srec:        workload.NewRecorder(),
		paths:       make([]string, cfg.Files),
		engine:      cfg.Engine(),
	}
	defer func() {
		if err != nil {
			w.close()
		}
	}()
	switch cfg.RW {
	case "read", "randread":
		w.read = true
	case "readwrite", "randrw":
		w.mixed, w.mix = true, uint64(cfg.RWMixRead)
	}
	w.rng.Seed(uint64(cfg.Seed)+uint64(t), offsetStream)
	if cfg.Ops > 0 {
		w.opsLeft = cfg.Ops / int64(cfg.Threads)
		if int64(t) < cfg.Ops%int64(cfg.Threads) {
			w.opsLeft++
		}
	}
	for i := range w.fds {
		w.fds[i] = -1
		w.paths[i] = filepath.Join(cfg.Dir, fileName(i))
	}

	use := make([]bool, cfg.Files)
	if w.random {
		for i := range use {
			use[i] = true
		}
	} else {
		w.regions = seqRegions(t, cfg.Threads, cfg.Files, blocks)
		for _, r := range w.regions {
			use[r.file] = true
		}
		w.pos = w.regions[0].start
	}
	flags := unix.O_RDWR | unix.O_CLOEXEC
	if cfg.Direct {
		flags |= unix.O_DIRECT
	}
	if cfg.Sync {
		flags |= unix.O_SYNC
	} else if cfg.Dsync {
		flags |= unix.O_DSYNC
	}
	for i, u := range use {
		if !u {
			continue
		}
		fd, err := unix.Open(w.paths[i], flags, 0)
		if err != nil {
			if cfg.Direct && errors.Is(err, unix.EINVAL) {
				return nil, fmt.Errorf("open %s with O_DIRECT: %s: the file system does not support O_DIRECT, drop --direct or use another --dir", w.paths[i], errnoText(err))
			}
			return nil, fmt.Errorf("open %s: %s", w.paths[i], errnoText(err))
		}
		w.fds[i] = fd
	}

	// mmap'd buffers are page aligned, as O_DIRECT needs; touching them now
	// keeps page faults out of the measured phase.
	if w.rbuf, err = w.mmap(int(cfg.BS)); err != nil {
		return nil, err
	}
	if w.wbuf, err = w.mmap(int(cfg.BS)); err != nil {
		return nil, err
	}
	clear(w.rbuf)
	fillRandom(w.wbuf, rand.NewPCG(uint64(cfg.Seed)+uint64(t), bufferStream))
	if w.engine != enginePsync {
		if err := w.newAsync(w.engine, cfg.Depth(), cfg.DepthBatch()); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// seqRegions assigns thread t of threads its part of the files: whole files
// t, t+threads, ... when there are enough files, else a contiguous share of
// file t%files. Validate made sure every share holds at least one block.
func seqRegions(t, threads, files int, blocks int64) []region {
	if files >= threads {
		var rs []region
		for i := t; i < files; i += threads {
			rs = append(rs, region{file: i, start: 0, end: blocks})
		}
		return rs
	}
	file := t % files
	sharers := int64((threads - file + files - 1) / files)
	i := int64(t / files)
	return []region{{file: file, start: blocks * i / sharers, end: blocks * (i + 1) / sharers}}
}

func (w *worker) mmap(size int) ([]byte, error) {
	page := unix.Getpagesize()
	m, err := unix.Mmap(-1, 0, (size+page-1)/page*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("allocate a %d-byte IO buffer: %s", size, errnoText(err))
	}
	w.maps = append(w.maps, m)
	return m[:size], nil
}

func (w *worker) close() {
	if w.async != nil {
		w.async.eng.close()
	}
	for i, fd := range w.fds {
		if fd >= 0 {
			unix.Close(fd)
			w.fds[i] = -1
		}
	}
	for _, m := range w.maps {
		unix.Munmap(m)
	}
	w.maps = nil
}

// loop is the measured hot loop: one op per iteration, no allocation, no
// locks, one atomic load of the stop flag and one atomic store for progress.
func (w *worker) loop() {
	if w.async != nil {
		w.asyncLoop()
		return
	}
	for !w.stop.Load() && w.opsLeft != 0 {
		w.opsLeft--
		fi, off := w.nextOffset()
		read := w.read
		if w.mixed {
			read = w.uint64n(100) < w.mix
		}
		fd := w.fds[fi]
		if read {
			t0 := time.Since(w.base)
			n, err := unix.Pread(fd, w.rbuf, off)
			for err == unix.EINTR {
				n, err = unix.Pread(fd, w.rbuf, off)
			}
			now := time.Since(w.base)
			d := now - t0
			w.yield(now)
			if n != len(w.rbuf) {
				w.ioFailed("pread", fi, off, n, err)
				return
			}
			w.rrec.Record(int64(d))
			w.reads++
		} else {
			w.stamp(w.wbuf, fi, off, w.writes)
			t0 := time.Since(w.base)
			n, err := unix.Pwrite(fd, w.wbuf, off)
			for err == unix.EINTR {
				n, err = unix.Pwrite(fd, w.wbuf, off)
			}
			now := time.Since(w.base)
			d := now - t0
			w.yield(now)
			if n != len(w.wbuf) {
				w.ioFailed("pwrite", fi, off, n, err)
				return
			}
			w.wrec.Record(int64(d))
			w.writes++
			w.written[fi] = true
			if w.fsyncEvery > 0 {
				if w.sinceSync[fi]++; w.sinceSync[fi] == w.fsyncEvery {
					w.sinceSync[fi] = 0
					if !w.sync(fi) {
						return
					}
				}
			}
		}
		w.done.Store(w.reads + w.writes)
	}
}

// yieldEvery is how often a loop passes through the Go scheduler. A
// goroutine that only makes blocking syscalls never does, so every 10 ms
// the runtime's monitor (sysmon) takes it for a goroutine that hogs its
// CPU, preempts it, and then wakes every 20 µs for a millisecond and more
// (about 4,400 wake-ups a second measured on a 2-CPU machine, each able
// to delay the worker's own wake-up when the IO completes): 4 KiB
// O_DIRECT reads at depth 1 ran at 0.91 of fio's rate. A yield of our own
// every 5 ms, inside the monitor's 10 ms, keeps it asleep (about 400
// wake-ups in 3.5 s instead of 16,000); with the thread locked, each
// yield hands the P over and back, 200 times a second.
const yieldEvery = 5 * time.Millisecond

// yield passes through the scheduler when it is due (now: time since base).
func (w *worker) yield(now time.Duration) {
	if now >= w.nextYield {
		runtime.Gosched()
		w.nextYield = now + yieldEvery
	}
}

// nextOffset is the next op's file and offset: random, or the next block
// of the thread's regions.
func (w *worker) nextOffset() (fi int, off int64) {
	if w.random {
		r := w.uint64n(w.total)
		if w.nfiles > 1 {
			q := r / w.blocks
			fi, r = int(q), r-q*w.blocks
		}
		return fi, int64(r) * w.bs
	}
	rg := &w.regions[w.ri]
	fi, off = rg.file, w.pos*w.bs
	if w.pos++; w.pos == rg.end {
		if w.ri++; w.ri == len(w.regions) {
			w.ri = 0
		}
		w.pos = w.regions[w.ri].start
	}
	return fi, off
}

// uint64n returns a uniform random number in [0, n) (Lemire's method).
func (w *worker) uint64n(n uint64) uint64 {
	hi, lo := bits.Mul64(w.rng.Uint64(), n)
	if lo < n {
		thresh := -n % n
		for lo < thresh {
			hi, lo = bits.Mul64(w.rng.Uint64(), n)
		}
	}
	return hi
}

// sync fsyncs (or fdatasyncs) file fi, timed; false when it failed.
func (w *worker) sync(fi int) bool {
	call := unix.Fsync
	name := "fsync"
	if w.fdatasync {
		call, name = unix.Fdatasync, "fdatasync"
	}
	t0 := time.Since(w.base)
	err := call(w.fds[fi])
	for err == unix.EINTR {
		err = call(w.fds[fi])
	}
	d := time.Since(w.base) - t0
	if err != nil {
		w.fail(fmt.Errorf("%s %s: %s", name, w.paths[fi], errnoText(err)))
		return false
	}
	w.srec.Record(int64(d))
	w.syncs++
	return true
}

// endSync syncs every file this thread wrote (--end-fsync).
func (w *worker) endSync() {
	for fi, wrote := range w.written {
		if wrote && !w.sync(fi) {
			return
		}
	}
}

// stamp marks buf, the seq-th write of the thread, going to off of file
// fi: its offset and the thread and sequence in its first 16 bytes (when
// it has them), and with --verify its seal.
func (w *worker) stamp(buf []byte, fi int, off, seq int64) {
	if len(buf) >= 16 {
		binary.LittleEndian.PutUint64(buf, uint64(off))
		binary.LittleEndian.PutUint64(buf[8:], w.id<<48|uint64(seq))
	}
	if w.verify {
		w.seal(buf, fi, off)
	}
}

// castagnoli is CRC-32C's table, as fio's verify=crc32c uses.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// seal ends buf, a block about to be written at off of file fi, with the
// CRC-32C of the rest of it, and marks the block written.
func (w *worker) seal(buf []byte, fi int, off int64) {
	n := len(buf) - 4
	binary.LittleEndian.PutUint32(buf[n:], crc32.Checksum(buf[:n], castagnoli))
	b := uint64(off / w.bs)
	if w.wroteBlocks[fi] == nil {
		w.wroteBlocks[fi] = make([]uint64, (w.blocks+63)/64)
	}
	w.wroteBlocks[fi][b/64] |= 1 << (b % 64)
}

// verifyBlocks reads back, through the thread's files and buffer, every
// block marked in marks (a bitmap per file) and checks that it holds its
// own offset and a matching CRC-32C (seal), into v.
func (w *worker) verifyBlocks(marks [][]uint64, v *model.VerifyStats) error {
	for fi, marks := range marks {
		for i, word := range marks {
			for word != 0 {
				bit := uint64(bits.TrailingZeros64(word))
				word &^= 1 << bit
				off := int64(uint64(i)*64+bit) * w.bs
				n, err := unix.Pread(w.fds[fi], w.rbuf, off)
				if err != nil || n != len(w.rbuf) {
					return errors.New(ioErrorText("verify pread", w.paths[fi], off, err))
				}
				v.Blocks++
				k := len(w.rbuf) - 4
				why := ""
				if got := int64(binary.LittleEndian.Uint64(w.rbuf)); got != off {
					why = fmt.Sprintf("holds the block written at offset %d", got)
				} else if crc32.Checksum(w.rbuf[:k], castagnoli) != binary.LittleEndian.Uint32(w.rbuf[k:]) {
					why = "its content does not match its CRC-32C"
				}
				if why != "" {
					v.Bad++
					if v.First == "" {
						v.First = fmt.Sprintf("%s at offset %d %s", w.paths[fi], off, why)
					}
				}
			}
		}
	}
	return nil
}

// ioFailed records a failed or short read or write and stops the run.
func (w *worker) ioFailed(call string, fi int, off int64, n int, err error) {
	if err != nil {
		w.fail(errors.New(ioErrorText(call, w.paths[fi], off, err)))
		return
	}
	what := "short read (was the file truncated?)"
	if strings.HasSuffix(call, "write") {
		what = "short write (is the file system full?)"
	}
	w.fail(fmt.Errorf("%s %s at offset %d: %s: %d of %d bytes", call, w.paths[fi], off, what, n, w.bs))
}

func (w *worker) fail(err error) {
	w.err = err
	w.failed.Store(true)
	w.stop.Store(true)
}
