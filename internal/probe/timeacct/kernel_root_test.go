package timeacct

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/perfsleuth/perfsleuth/internal/delayacct"
	"github.com/perfsleuth/perfsleuth/internal/model"
)

// kernelChildEnv names the directory of TestKernelChildDirectReads's file
// when the test binary runs as that child.
const kernelChildEnv = "TIMEACCT_KERNEL_CHILD_DIR"

// directReads is how many O_DIRECT reads the child makes.
const directReads = 2000

// TestKernelAgreementDirectReads observes a thread making 2,000 O_DIRECT 4
// KiB reads, with delay accounting on from before the thread started, and
// holds the record's agreement with the kernel's own accounting to what
// analyze judges: cpu + cpu-wait within 5% summed and thread by thread,
// and the reader's storage-read within 5% of its block-IO delay, each of
// its waits one of the kernel's block-IO sleeps. On Linux 6.12+ the
// kernel's block-IO delay is often unsound under any CPU contention
// (kernel_delay.go: a 0.28 s run read 1,396 s): the record must then say
// so, and the test says why it could not compare.
func TestKernelAgreementDirectReads(t *testing.T) {
	needRoot(t)
	if delayacct.State(delayacct.SysctlPath) == delayacct.StateUnavailable {
		t.Skip("no kernel.task_delayacct: kernel without CONFIG_TASK_DELAY_ACCT")
	}
	sw := delayacct.TurnOn() // before the child forks
	t.Cleanup(func() {
		if err := sw.Restore(); err != nil {
			t.Error(err)
		}
	})
	c := startKernelChild(t)
	cfg := Config{Roots: []int{c.cmd.Process.Pid}, DeferWindow: true}
	p, err := Start(cfg)
	if err != nil {
		if errors.Is(err, os.ErrPermission) {
			t.Skipf("eBPF not permitted here: %v", err)
		}
		t.Fatalf("start: %v", err)
	}
	var w kernelWatch
	w.begin(cfg.Roots)
	if err := p.Open(); err != nil {
		t.Fatalf("open: %v", err)
	}
	w.opened()
	c.work(t)
	w.finish()
	p.CloseWindow()
	w.closed()
	res, err := p.Stop()
	if err != nil {
		t.Fatalf("stop: %v", err)
	}
	ta := toModel(res)
	k := w.agreement(ta, res.Threads)
	if k == nil {
		t.Fatal("no agreement with the kernel made")
	}
	for _, n := range k.Notes {
		t.Log("note:", n)
	}
	for _, ch := range k.Checks {
		t.Logf("check %s (%s, %d threads, tid %d, %d runs): %.4f s here (%.4f s of it uncharged, %.4f s after the kernel ended runs that blocked), %.4f s by the kernel (%.4f s of it stale), judged %v",
			ch.What, ch.Source, ch.Threads, ch.TID, ch.Runs, ch.PerfsleuthSec, ch.UnchargedSec, ch.CutLagSec, ch.KernelSec, ch.KernelStaleSec, ch.Judged)
	}

	// cpu + cpu-wait: summed, and the reader's own (it has ~60 ms).
	var sum, worst *model.KernelCheck
	for i, ch := range k.Checks {
		if ch.Source != "schedstat" || !strings.HasPrefix(ch.What, "cpu + cpu-wait") {
			continue
		}
		if ch.TID == 0 {
			sum = &k.Checks[i]
		} else {
			worst = &k.Checks[i]
		}
		if fails(ch) {
			t.Errorf("%s: %.4f s here, %.4f s by schedstat: more than 5%% apart", ch.What, ch.PerfsleuthSec, ch.KernelSec)
		}
	}
	if sum == nil || worst == nil {
		t.Fatalf("checks %+v: want cpu + cpu-wait summed and thread by thread", k.Checks)
	}

	// Each of the reader's reads is at most one storage wait here: a read
	// whose completion arrives before its thread has gone to sleep makes
	// none (1,713 waits for 2,000 reads in one run here, 812 in one with
	// the host stealing a third of the CPU). How many did sleep is the
	// kernel's count of the reader's block-IO sleeps, when delay
	// accounting counted them, and each of those is a storage wait here.
	// The kernel may count fewer, never more: under delayed dequeue
	// (Linux 6.12+) a thread woken before the kernel took it off its run
	// queue switched out in D state, a wait here, and never blocked there
	// (1,981 waits here, 1,918 sleeps there in one run).
	pn := storageWaits(ta)[c.tid]
	if float64(pn) > directReads+countSlackAbs {
		t.Errorf("reader %d: %d storage waits for %d O_DIRECT reads", c.tid, pn, directReads)
	}
	if kn, ok := blkioSleeps(&w, c.tid); ok {
		t.Logf("reader %d: %d storage waits here, %d block-IO sleeps by the kernel, for %d O_DIRECT reads", c.tid, pn, kn, directReads)
		if kn > pn+countSlackAbs || !delayedDequeue() && float64(pn-kn) > countSlackFrac*float64(pn)+countSlackAbs {
			t.Errorf("reader %d: %d storage waits here, %d block-IO sleeps by the kernel: not one to one", c.tid, pn, kn)
		}
		if kn == 0 {
			t.Errorf("reader %d: the kernel counted no block-IO sleep in %d O_DIRECT reads", c.tid, directReads)
		}
	} else if pn < directReads/2 {
		t.Errorf("reader %d: %d storage waits for %d O_DIRECT reads (the kernel's count of its sleeps could not be read)", c.tid, pn, directReads)
	}

	if k.DelayAcct != delayTurnedOn && k.DelayAcct != delayacct.StateOn {
		t.Fatalf("delay accounting %q during the run", k.DelayAcct)
	}
	var blk *model.KernelCheck
	for i, ch := range k.Checks {
		if ch.Source == "delay accounting (blkio)" && ch.TID == c.tid {
			blk = &k.Checks[i]
		}
	}
	if blk == nil {
		for _, n := range k.Notes {
			if strings.Contains(n, "not judged against delay accounting") {
				t.Skipf("the reader's block-IO delay could not be judged, as the record says: %s", n)
			}
		}
		t.Fatalf("the reader's storage waits were neither judged against delay accounting nor said why: %q", k.Notes)
	}
	if fails(*blk) {
		t.Errorf("reader %d: storage-read %.4f s, block-IO delay %.4f s: more than 5%% apart", c.tid, blk.PerfsleuthSec, blk.KernelSec)
	}
}

// blkioSleeps is how many times the kernel counted thread tid asleep for
// block IO (taskstats blkio_count) between the watch's two reads.
func blkioSleeps(w *kernelWatch, tid int) (int64, bool) {
	if w.start == nil || w.end == nil {
		return 0, false
	}
	a, b := w.start.threads[tid].delay, w.end.threads[tid].delay
	if a == nil || b == nil || b.BlkioCount < a.BlkioCount {
		return 0, false
	}
	return int64(b.BlkioCount - a.BlkioCount), true
}

// kernelChild is the test binary running TestKernelChildDirectReads.
type kernelChild struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Scanner
	tid   int
}

func startKernelChild(t *testing.T) *kernelChild {
	t.Helper()
	dir := t.TempDir()
	if !supportsDirect(dir) {
		t.Skipf("%s does not take O_DIRECT (tmpfs?): set TMPDIR to a disk's file system", dir)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestKernelChildDirectReads$")
	cmd.Env = append(os.Environ(), kernelChildEnv+"="+dir)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &kernelChild{cmd: cmd, stdin: stdin, out: bufio.NewScanner(stdout)}
	t.Cleanup(func() { stdin.Close(); cmd.Process.Kill(); cmd.Wait() })
	for c.out.Scan() {
		line := c.out.Text()
		if s, ok := strings.CutPrefix(line, "tid "); ok {
			c.tid, _ = strconv.Atoi(s)
		}
		if line == "ready" && c.tid != 0 {
			return c
		}
	}
	t.Fatalf("kernel child exited before ready: %v", c.out.Err())
	return nil
}

// work lets the child read and waits until it is done, leaving it alive
// (its threads stay readable in /proc for the closing reads).
func (c *kernelChild) work(t *testing.T) {
	t.Helper()
	if _, err := c.stdin.Write([]byte{1}); err != nil {
		t.Fatal(err)
	}
	for c.out.Scan() {
		if line := c.out.Text(); line == "done" {
			return
		} else if strings.HasPrefix(line, "error") {
			t.Fatalf("kernel child: %s", line)
		}
	}
	t.Fatalf("kernel child exited before done: %v", c.out.Err())
}

func supportsDirect(dir string) bool {
	fd, err := unix.Open(filepath.Join(dir, "probe"), unix.O_CREAT|unix.O_RDWR|unix.O_DIRECT|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return false
	}
	unix.Close(fd)
	os.Remove(filepath.Join(dir, "probe"))
	return true
}

// TestKernelChildDirectReads is TestKernelAgreementDirectReads's child,
// not a test of its own: it writes an 8 MiB file, says "ready", reads it
// directReads times 4 KiB at a time with O_DIRECT at random offsets once
// given a byte, says "done", and exits when its stdin closes.
func TestKernelChildDirectReads(t *testing.T) {
	dir := os.Getenv(kernelChildEnv)
	if dir == "" {
		t.Skip("the child of TestKernelAgreementDirectReads")
	}
	runtime.LockOSThread()
	if err := directReadsChild(dir); err != nil {
		fmt.Println("error", err)
	}
}

func directReadsChild(dir string) error {
	const size = 8 << 20
	path := filepath.Join(dir, "direct.dat")
	if err := os.WriteFile(path, make([]byte, size), 0o644); err != nil {
		return err
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	err = unix.Fsync(int(f.Fd()))
	f.Close()
	if err != nil {
		return err
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECT|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	// O_DIRECT needs an aligned buffer: a page from mmap is.
	buf, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return err
	}
	fmt.Printf("tid %d\nready\n", unix.Gettid())
	in := bufio.NewReader(os.Stdin)
	if _, err := in.ReadByte(); err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range directReads {
		if _, err := unix.Pread(fd, buf, rng.Int64N(size/4096)*4096); err != nil {
			return err
		}
	}
	fmt.Println("done")
	io.Copy(io.Discard, in)
	return nil
}
