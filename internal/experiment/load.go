package experiment

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"

	"github.com/perfsleuth/perfsleuth/internal/sysinfo"
	"github.com/perfsleuth/perfsleuth/internal/target"
)

// The load a condition adds (busy threads, a background writer) runs in a
// helper process, `perfsleuth __load KIND ARGS`, never in perfsleuth's own:
// the helper is stopped by a signal on every exit path, dies with
// perfsleuth (PR_SET_PDEATHSIG), and its own process group keeps a
// terminal's Ctrl-C from ending it before perfsleuth has finished the run.
// It writes "ready" (or "error: ...") on stdout once its load is running.

// LoadCommand is the hidden subcommand the CLI registers for RunLoad.
const LoadCommand = "__load"

// Bounds of the background writer: 1 MiB O_DIRECT writes, 4 in flight, over
// a 64 MiB unnamed file that is written once before the load starts (so the
// load overwrites allocated blocks, like a database's steady state) and that
// vanishes with the process whatever way it ends (O_TMPFILE).
const (
	writerBlock  = 1 << 20
	writerDepth  = 4
	writerSpan   = 64 << 20
	loadStopWait = 3 * time.Second
	loadReadyMax = 60 * time.Second
)

// helper is a running load process.
type helper struct {
	cmd    *exec.Cmd
	exited chan struct{}
	out    *bufio.Reader
	// readyCPU is its CPU time when it said it was ready: what setting
	// its load up cost (an io writer's file laid out), not counted.
	readyCPU float64
}

// cpuSec is the CPU time, user and system, the helper has used since its
// load was ready (/proc/PID/stat); ok is false when it cannot be read.
func (h *helper) cpuSec() (sec float64, ok bool) {
	t, ok := h.cpuTotal()
	return t - h.readyCPU, ok
}

func (h *helper) cpuTotal() (float64, bool) {
	p, err := procfs.NewProc(h.cmd.Process.Pid)
	if err != nil {
		return 0, false
	}
	st, err := p.Stat()
	if err != nil {
		return 0, false
	}
	return st.CPUTime(), true
}

// startHelper starts `perfsleuth __load args...` and waits until it reports
// that its load is running.
func startHelper(ctx context.Context, exe string, args ...string) (*helper, error) {
	cmd := exec.Command(exe, append([]string{LoadCommand}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the %s load: %w", args[0], err)
	}
	h := &helper{cmd: cmd, exited: make(chan struct{}), out: bufio.NewReader(out)}
	go func() { cmd.Wait(); close(h.exited) }()
	line := make(chan string, 1)
	go func() {
		l, _ := h.out.ReadString('\n')
		line <- strings.TrimSpace(l)
	}()
	select {
	case l := <-line:
		if l == "ready" {
			h.readyCPU, _ = h.cpuTotal()
			return h, nil
		}
		h.stop()
		msg := strings.TrimPrefix(l, "error: ")
		if msg == "" {
			msg = strings.TrimSpace(stderr.String())
		}
		return nil, fmt.Errorf("the %s load did not start: %s", args[0], msg)
	case <-ctx.Done():
		h.stop()
		return nil, ctx.Err()
	case <-time.After(loadReadyMax):
		h.stop()
		return nil, fmt.Errorf("the %s load did not start within %s", args[0], loadReadyMax)
	}
}

// stop ends the helper (SIGTERM, then SIGKILL) and waits for it.
func (h *helper) stop() {
	if h != nil {
		target.StopChild(h.cmd.Process, h.exited, syscall.SIGTERM, loadStopWait)
	}
}

// RunLoad is the helper's side. ctx ends on SIGTERM or SIGINT.
func RunLoad(ctx context.Context, args []string, stdout io.Writer) error {
	say := func(format string, a ...any) { fmt.Fprintf(stdout, format+"\n", a...) }
	fail := func(err error) error {
		say("error: %s", strings.ReplaceAll(err.Error(), "\n", "; "))
		return err
	}
	if len(args) < 2 {
		return fail(errors.New("__load is perfsleuth's internal load helper: run 'perfsleuth diagnose' instead"))
	}
	switch args[0] {
	case "cpu":
		cpus := sysinfo.ParseCPUList(args[1])
		if len(cpus) == 0 {
			return fail(fmt.Errorf("bad CPU list %q", args[1]))
		}
		return burn(ctx, cpus, func() { say("ready") })
	case "io", "peak":
		if len(args) != 3 {
			return fail(fmt.Errorf("__load %s DIR RATE|SECONDS", args[0]))
		}
		n, err := strconv.ParseFloat(args[2], 64)
		if err != nil || n <= 0 {
			return fail(fmt.Errorf("__load %s: bad number %q", args[0], args[2]))
		}
		w, err := openWriter(args[1])
		if err != nil {
			return fail(err)
		}
		defer w.close()
		if args[0] == "peak" {
			rate, err := w.peak(ctx, time.Duration(n*float64(time.Second)))
			if err != nil {
				return fail(err)
			}
			b, _ := json.Marshal(map[string]float64{"bytes_per_sec": rate})
			say("ready")
			say("%s", b)
			return nil
		}
		if err := w.fill(ctx); err != nil {
			return fail(err)
		}
		say("ready")
		return w.paced(ctx, n)
	}
	return fail(fmt.Errorf("unknown load %q", args[0]))
}

// burn keeps one thread busy on each CPU until ctx ends. The threads run at
// the default priority (nice 0), as a competing process would.
func burn(ctx context.Context, cpus []int, ready func()) error {
	var stop atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, len(cpus))
	started := make(chan struct{}, len(cpus))
	for _, c := range cpus {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// The thread stays locked and pinned until the process exits:
			// an unlocked pinned thread would carry the pin to other goroutines.
			runtime.LockOSThread()
			var set unix.CPUSet
			set.Set(c)
			if err := unix.SchedSetaffinity(0, &set); err != nil {
				errs <- fmt.Errorf("pin a busy thread to CPU %d: %w", c, err)
				return
			}
			started <- struct{}{}
			x := uint64(0)
			for !stop.Load() {
				for i := 0; i < 1<<16; i++ {
					x = x*6364136223846793005 + 1442695040888963407
				}
			}
			sink.Add(x)
		}()
	}
	for range cpus {
		select {
		case err := <-errs:
			stop.Store(true)
			return err
		case <-started:
		}
	}
	ready()
	<-ctx.Done()
	stop.Store(true)
	wg.Wait()
	return nil
}

var sink atomic.Uint64

// writer writes 1 MiB O_DIRECT blocks over an unnamed file in a directory.
type writer struct {
	f   *os.File
	buf [][]byte
	off atomic.Int64
}

func openWriter(dir string) (*writer, error) {
	fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_WRONLY|unix.O_DIRECT, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open an O_DIRECT file in %s: %w (the file system must support O_TMPFILE and O_DIRECT)", dir, err)
	}
	f := os.NewFile(uintptr(fd), dir+"/(io-pressure)")
	if err := unix.Fallocate(fd, 0, 0, writerSpan); err != nil {
		f.Close()
		return nil, fmt.Errorf("reserve %d MiB in %s for the background writer: %w", writerSpan>>20, dir, err)
	}
	w := &writer{f: f}
	for i := 0; i < writerDepth; i++ {
		// An anonymous mapping is page-aligned, as O_DIRECT needs.
		b, err := unix.Mmap(-1, 0, writerBlock, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			w.close()
			return nil, err
		}
		for j := range b {
			b[j] = byte(j*7 + i + 1) // not zeros: some devices skip writing zeros
		}
		w.buf = append(w.buf, b)
	}
	return w, nil
}

func (w *writer) close() {
	for _, b := range w.buf {
		unix.Munmap(b)
	}
	w.f.Close()
}

// write writes the next block of the span with buffer i.
func (w *writer) write(i int) error {
	off := (w.off.Add(writerBlock) - writerBlock) % writerSpan
	if _, err := w.f.WriteAt(w.buf[i], off); err != nil {
		return fmt.Errorf("background write: %w", err)
	}
	return nil
}

// run keeps writerDepth writes in flight until ctx ends or until n blocks
// (n > 0) are written; due, if set, says when block k may start.
func (w *writer) run(ctx context.Context, n int64, due func(k int64) time.Time) error {
	var next atomic.Int64
	errc := make(chan error, writerDepth)
	var wg sync.WaitGroup
	for i := 0; i < writerDepth; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				k := next.Add(1) - 1
				if n > 0 && k >= n {
					return
				}
				if due != nil {
					if d := time.Until(due(k)); d > 0 {
						select {
						case <-ctx.Done():
							return
						case <-time.After(d):
						}
					}
				}
				if err := w.write(i); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-errc:
		return err
	default:
		return nil
	}
}

// fill writes the whole span once, unpaced, and ends with an fsync: the blocks' allocation (their extents
// turned from unwritten to written) is committed to the journal then, not
// in the first sync the workload makes under the load.
func (w *writer) fill(ctx context.Context) error {
	if err := w.run(ctx, writerSpan/writerBlock, nil); err != nil {
		return err
	}
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("sync the written file: %w", err)
	}
	return nil
}

// peak writes as fast as the device takes it for d (after one unmeasured
// pass over the span) and returns the rate in bytes per second.
func (w *writer) peak(ctx context.Context, d time.Duration) (float64, error) {
	if err := w.fill(ctx); err != nil {
		return 0, err
	}
	c, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	before := w.off.Load()
	start := time.Now()
	if err := w.run(c, 0, nil); err != nil {
		return 0, err
	}
	if ctx.Err() != nil {
		return 0, ctx.Err()
	}
	return float64(w.off.Load()-before) / time.Since(start).Seconds(), nil
}

// paced writes at rate bytes per second until ctx ends. A writer that falls
// behind (the device is slower than the rate) does not burst to catch up
// by more than a second's worth.
func (w *writer) paced(ctx context.Context, rate float64) error {
	interval := time.Duration(float64(writerBlock) / rate * float64(time.Second))
	var mu sync.Mutex
	start := time.Now()
	var base int64
	due := func(k int64) time.Time {
		mu.Lock()
		defer mu.Unlock()
		t := start.Add(time.Duration(k-base) * interval)
		if time.Since(t) > time.Second {
			start, base = time.Now(), k
			t = start
		}
		return t
	}
	err := w.run(ctx, 0, due)
	if ctx.Err() != nil {
		return nil
	}
	return err
}
