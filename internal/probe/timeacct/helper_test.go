package timeacct

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The tests observe a child process, the test binary re-executed with
// scenarioEnv naming what it does, so that the observed tree is not the
// test runner. The child prints "tid <n>" for each thread doing the work,
// then "ready", waits for a byte on stdin, works and exits.
const (
	scenarioEnv = "TIMEACCT_TEST_SCENARIO"
	dirEnv      = "TIMEACCT_TEST_DIR"
)

func TestMain(m *testing.M) {
	if s := os.Getenv(scenarioEnv); s != "" {
		runtime.LockOSThread()
		if err := runScenario(s); err != nil {
			fmt.Fprintln(os.Stderr, "scenario:", err)
			os.Exit(1)
		}
		fmt.Printf("work %d\n", time.Since(workStart).Nanoseconds())
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// onCPU0 pins the calling thread to CPU 0.
func onCPU0() error {
	var set unix.CPUSet
	set.Set(0)
	return unix.SchedSetaffinity(0, &set)
}

func announce(tids ...int) {
	for _, t := range tids {
		fmt.Printf("tid %d\n", t)
	}
	fmt.Println("ready")
}

// workStart is when the child was told to begin; it prints "work <ns>"
// at its end so that tests can relate the categories to the work alone.
var workStart time.Time

func waitGo() error {
	var b [1]byte
	_, err := io.ReadFull(os.Stdin, b[:])
	workStart = time.Now()
	return err
}

func runScenario(name string) error {
	switch name {
	case "cpu":
		announce(unix.Gettid())
		if err := waitGo(); err != nil {
			return err
		}
		spin(300 * time.Millisecond)
	case "cpu0":
		if err := onCPU0(); err != nil {
			return err
		}
		announce(unix.Gettid())
		if err := waitGo(); err != nil {
			return err
		}
		spin(time.Second)
	case "hog0":
		// Two threads spinning on CPU 0 for 3 s, for cpu0 to wait behind.
		tids := make(chan int)
		errs := make(chan error, 2)
		for range 2 {
			go func() {
				runtime.LockOSThread()
				if err := onCPU0(); err != nil {
					errs <- err
					return
				}
				tids <- unix.Gettid()
				spin(3 * time.Second)
				errs <- nil
			}()
		}
		announce(<-tids, <-tids)
		if err := waitGo(); err != nil {
			return err
		}
		return errors.Join(<-errs, <-errs)
	case "execs":
		// Three processes that exec a program, each pid printed.
		announce(unix.Gettid())
		if err := waitGo(); err != nil {
			return err
		}
		for range 3 {
			cmd := exec.Command("true")
			if err := cmd.Run(); err != nil {
				return err
			}
			fmt.Printf("child %d\n", cmd.Process.Pid)
		}
	case "sleep":
		announce(unix.Gettid())
		if err := waitGo(); err != nil {
			return err
		}
		nap(300 * time.Millisecond)
	case "sync", "synclong":
		// synclong: enough calls for ~150 activity samples of their cpu.
		n := 200
		if name == "synclong" {
			n = 3000
		}
		return fdatasyncs(filepath.Join(os.Getenv(dirEnv), "sync.dat"), n, make([]byte, 4096))
	case "dsync":
		// O_DSYNC appends: the sleeps are in write(2), and only the kernel
		// stack (file_write_and_wait_range, jbd2_log_wait_commit) tells
		// that they wait for a sync rather than for the write.
		fd, err := unix.Open(filepath.Join(os.Getenv(dirEnv), "dsync.dat"), unix.O_CREAT|unix.O_WRONLY|unix.O_DSYNC|unix.O_CLOEXEC, 0o644)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		announce(unix.Gettid())
		if err := waitGo(); err != nil {
			return err
		}
		buf := make([]byte, 4096)
		for i := range 200 {
			if _, err := unix.Pwrite(fd, buf, int64(i)*4096); err != nil {
				return err
			}
		}
	case "inodelock":
		return inodeLockScenario()
	case "renamesync":
		// PostgreSQL's WAL: a segment is made and synced as xlogtemp.PID,
		// then renamed.
		path := filepath.Join(os.Getenv(dirEnv), "xlogtemp.4242")
		if err := fdatasyncs(path, 10, nil); err != nil {
			return err
		}
		return os.Rename(path, filepath.Join(os.Getenv(dirEnv), "000000010000000000000005"))
	case "manysync":
		// One fsync each of manySynced files in three directories, past
		// the 1,024 the probe lists one by one: the files are made and
		// written back first, so that each fsync is cheap.
		var fds []int
		for i := range manySynced {
			dir := filepath.Join(os.Getenv(dirEnv), fmt.Sprintf("d%d", i%3))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			fd, err := unix.Open(filepath.Join(dir, fmt.Sprintf("f%d", i)), unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
			if err != nil {
				return err
			}
			defer unix.Close(fd)
			fds = append(fds, fd)
		}
		unix.Sync()
		announce(unix.Gettid())
		if err := waitGo(); err != nil {
			return err
		}
		for _, fd := range fds {
			if err := unix.Fsync(fd); err != nil {
				return err
			}
		}
	case "fdatasync":
		// 1000 fdatasync calls on an unchanged file: cheap, exact to count.
		return fdatasyncs(filepath.Join(os.Getenv(dirEnv), "fdatasync.dat"), 1000, nil)
	case "syscalls":
		// 1000 getppid (never fails) and 500 close(-1) (always EBADF):
		// no Go runtime thread makes either.
		announce(unix.Gettid())
		if err := waitGo(); err != nil {
			return err
		}
		for range 1000 {
			unix.Getppid()
		}
		for range 500 {
			unix.Syscall(unix.SYS_CLOSE, ^uintptr(0), 0, 0)
		}
	case "lock":
		return lockScenario()
	case "event":
		return eventScenario()
	case "forks":
		// The first exec in a Go process also clones a short-lived child
		// to check for CLONE_PIDFD (syscall.checkClonePidfd): do it
		// before the window so that only the 5 forks below are in it.
		if err := exec.Command("/bin/true").Run(); err != nil {
			return err
		}
		announce()
		if err := waitGo(); err != nil {
			return err
		}
		for range 5 {
			if err := exec.Command("/bin/true").Run(); err != nil {
				return err
			}
		}
	case "churn":
		// Threads by the thousand, each blocked twice (a timer, then a
		// pipe this thread writes to: two kinds of wait, so that the first
		// goes to the edges map under the thread's own tid before it
		// exits), and a process now and then: past 4,096 exits the threads
		// are folded at their exit, and the edges they left behind are the
		// compaction's.
		r, w, err := os.Pipe()
		if err != nil {
			return err
		}
		announce()
		if err := waitGo(); err != nil {
			return err
		}
		for i := range 750 {
			var wg sync.WaitGroup
			for range 8 {
				wg.Go(func() {
					runtime.LockOSThread() // not unlocked: the thread ends with the goroutine
					nap(time.Millisecond)
					var b [1]byte
					unix.Read(int(r.Fd()), b[:])
				})
			}
			nap(2 * time.Millisecond)
			if _, err := w.Write(make([]byte, 8)); err != nil {
				return err
			}
			wg.Wait()
			if i%50 == 0 {
				if err := exec.Command("/bin/true").Run(); err != nil {
					return err
				}
			}
		}
	case "pingpong":
		return pingPong()
	case "crosspingpong":
		return crossPingPong()
	default:
		return fmt.Errorf("unknown scenario %q", name)
	}
	return nil
}

// spin burns CPU for d without syscalls (time.Now uses the vDSO).
func spin(d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
	}
}

func nap(d time.Duration) {
	ts := unix.NsecToTimespec(d.Nanoseconds())
	for unix.Nanosleep(&ts, &ts) == unix.EINTR {
	}
}

// futexMutex is Drepper's three-state mutex ("Futexes are tricky") on raw
// FUTEX_WAIT/FUTEX_WAKE, so that a contended thread sleeps in futex op 0,
// as pthread mutexes do, unlike sync.Mutex.
type futexMutex struct{ v uint32 }

func futex(addr *uint32, op, val int) {
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), uintptr(op), uintptr(val), 0, 0, 0)
}

func (m *futexMutex) lock() {
	c := uint32(0)
	if atomic.CompareAndSwapUint32(&m.v, 0, 1) {
		return
	}
	c = atomic.LoadUint32(&m.v)
	if c != 2 {
		c = atomic.SwapUint32(&m.v, 2)
	}
	for c != 0 {
		futex(&m.v, 0 /* FUTEX_WAIT */, 2)
		c = atomic.SwapUint32(&m.v, 2)
	}
}

func (m *futexMutex) unlock() {
	if atomic.AddUint32(&m.v, ^uint32(0)) != 0 {
		atomic.StoreUint32(&m.v, 0)
		futex(&m.v, 1 /* FUTEX_WAKE */, 1)
	}
}

func lockScenario() error {
	var mu futexMutex
	// The holder sleeps rather than spins, so that the share of lock does
	// not depend on how much CPU the shared machine leaves us; the pause
	// after unlock lets the other thread in.
	contend := func() {
		for range 150 {
			mu.lock()
			nap(time.Millisecond)
			mu.unlock()
			nap(200 * time.Microsecond)
		}
	}
	return onThreads(contend, contend)
}

// eventScenario has a thread wait, 100 times, in FUTEX_WAIT for a flag
// word to leave 0, as Go parks its idle threads (runtime.notesleep), and
// another set it 2 ms later and wake it: the waiter sleeps on an event,
// not on a lock.
func eventScenario() error {
	var flag uint32
	waiter := func() {
		for range 100 {
			for atomic.LoadUint32(&flag) == 0 {
				futex(&flag, 0 /* FUTEX_WAIT */, 0)
			}
			atomic.StoreUint32(&flag, 0)
		}
	}
	waker := func() {
		for range 100 {
			nap(2 * time.Millisecond)
			atomic.StoreUint32(&flag, 1)
			futex(&flag, 1 /* FUTEX_WAKE */, 1)
			for atomic.LoadUint32(&flag) != 0 {
				nap(100 * time.Microsecond)
			}
		}
	}
	return onThreads(waiter, waker) // the waiter first: tids[0]
}

// onThreads runs each of fns on an OS thread of its own, announces their
// tids in the order of fns, and once told to go starts them together and
// waits for them all.
func onThreads(fns ...func()) error {
	start := make(chan struct{})
	tids := make([]chan int, len(fns))
	var wg sync.WaitGroup
	for i, fn := range fns {
		tids[i] = make(chan int, 1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			tids[i] <- unix.Gettid()
			<-start
			fn()
		}()
	}
	order := make([]int, len(fns))
	for i := range tids {
		order[i] = <-tids[i]
	}
	announce(order...)
	if err := waitGo(); err != nil {
		return err
	}
	close(start)
	wg.Wait()
	return nil
}

// inodeLockScenario makes one thread wait for the inode lock in D state:
// thread A appends with synchronous O_DIRECT writes, which wait for the
// device while holding the file's i_rwsem (ext4_dio_write_iter takes it
// exclusively for extending writes), and thread B's buffered writes to the
// same file sleep in rwsem_down_write_slowpath meanwhile. Only the kernel
// stack tells B's sleeps in write(2) are a lock, not storage-write.
func inodeLockScenario() error {
	path := filepath.Join(os.Getenv(dirEnv), "inodelock.dat")
	fdA, err := unix.Open(path, unix.O_CREAT|unix.O_WRONLY|unix.O_DIRECT|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return err
	}
	defer unix.Close(fdA)
	fdB, err := unix.Open(path, unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fdB)
	bufA, err := unix.Mmap(-1, 0, 64<<10, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return err
	}
	var stop atomic.Bool
	start := make(chan struct{})
	tidB := make(chan int, 1)
	errB := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		tidB <- unix.Gettid()
		<-start
		buf := make([]byte, 4096)
		for !stop.Load() {
			if _, err := unix.Pwrite(fdB, buf, 0); err != nil {
				errB <- err
				return
			}
		}
		errB <- nil
	}()
	announce(unix.Gettid(), <-tidB)
	if err := waitGo(); err != nil {
		return err
	}
	close(start)
	for i := range 200 {
		if _, err := unix.Pwrite(fdA, bufA, int64(i+1)*int64(len(bufA))); err != nil {
			stop.Store(true)
			return err
		}
	}
	stop.Store(true)
	return <-errB
}

// twoPipes opens the two pipes of a ping-pong: a carries the ping, b the pong.
func twoPipes() (a, b [2]int, err error) {
	if err = unix.Pipe(a[:]); err == nil {
		err = unix.Pipe(b[:])
	}
	return a, b, err
}

// pingPongRoundTrips is the n of the pingpong scenario.
const pingPongRoundTrips = 50000

// pingPong bounces a byte between two threads through two pipes and prints
// the round trips per second. The main thread is locked by TestMain.
func pingPong() error {
	a, b, err := twoPipes()
	if err != nil {
		return err
	}
	const n = pingPongRoundTrips
	// Both threads on one CPU: every round trip is then two direct
	// switches, and the rate does not depend on where the scheduler puts
	// the threads (across CPUs of this VM a wake-up costs an IPI and an
	// idle exit, and the rate varied 2x from run to run).
	var cpus unix.CPUSet
	cpus.Set(runtime.NumCPU() - 1)
	if err := unix.SchedSetaffinity(0, &cpus); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		unix.SchedSetaffinity(0, &cpus)
		buf := make([]byte, 1)
		for range n {
			unix.Read(a[0], buf)
			unix.Write(b[1], buf)
		}
		close(done)
	}()
	announce()
	if err := waitGo(); err != nil {
		return err
	}
	buf := make([]byte, 1)
	t0 := time.Now()
	for range n {
		unix.Write(a[1], buf)
		unix.Read(b[0], buf)
	}
	el := time.Since(t0)
	<-done
	fmt.Printf("roundtrips/s %.0f\n", n/el.Seconds())
	return nil
}

// crossPingPong is a pipe ping-pong between two threads pinned to the
// first two CPUs, so that every wake-up is sent to the other CPU; the tids
// are announced. At the end it prints "done" and stays alive until its
// stdin closes.
func crossPingPong() error {
	a, b, err := twoPipes()
	if err != nil {
		return err
	}
	pin := func(cpu int) error {
		var set unix.CPUSet
		set.Set(cpu)
		return unix.SchedSetaffinity(0, &set)
	}
	if err := pin(0); err != nil {
		return err
	}
	peer := make(chan int)
	done := make(chan error)
	go func() {
		runtime.LockOSThread()
		if err := pin(1); err != nil {
			done <- err
			return
		}
		peer <- unix.Gettid()
		buf := make([]byte, 1)
		for range crossRoundTrips {
			unix.Read(a[0], buf)
			unix.Write(b[1], buf)
		}
		done <- nil
	}()
	announce(unix.Gettid(), <-peer)
	if err := waitGo(); err != nil {
		return err
	}
	buf := make([]byte, 1)
	for range crossRoundTrips {
		unix.Write(a[1], buf)
		unix.Read(b[0], buf)
	}
	if err := <-done; err != nil {
		return err
	}
	// Alive until stdin closes, for the kernel's figures to be read.
	fmt.Println("done")
	io.Copy(io.Discard, os.Stdin)
	return nil
}

// crossRoundTrips: about half a second beside two CPU burners here.
const crossRoundTrips = 5000

// child is a started scenario process.
type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Scanner
	tids  []int
	lines []string
	dir   string // the scenario's files
}

func startChild(t testing.TB, scenario string) *child {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), scenarioEnv+"="+scenario, dirEnv+"="+dir)
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
	c := &child{cmd: cmd, stdin: stdin, out: bufio.NewScanner(stdout), dir: dir}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for c.out.Scan() {
		line := c.out.Text()
		if line == "ready" {
			return c
		}
		if s, ok := strings.CutPrefix(line, "tid "); ok {
			tid, err := strconv.Atoi(s)
			if err != nil {
				t.Fatalf("child: %q", line)
			}
			c.tids = append(c.tids, tid)
		}
	}
	t.Fatalf("child %s exited before ready: %v", scenario, c.out.Err())
	return nil
}

// workNs is how long the child worked, from its "work" line.
func (c *child) workNs(t testing.TB) uint64 {
	t.Helper()
	for _, l := range c.lines {
		if s, ok := strings.CutPrefix(l, "work "); ok {
			v, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				t.Fatalf("child: %q", l)
			}
			return v
		}
	}
	t.Fatalf("child printed no work time: %q", c.lines)
	return 0
}

// run tells the child to begin and waits for it to exit.
func (c *child) run(t testing.TB) {
	t.Helper()
	if _, err := c.stdin.Write([]byte{1}); err != nil {
		t.Fatal(err)
	}
	for c.out.Scan() {
		c.lines = append(c.lines, c.out.Text())
	}
	if err := c.cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
}

// fdatasyncs makes the file at path, announces the thread, waits for the
// go and syncs the file n times, each after writing buf at the next
// offset when buf is not nil.
func fdatasyncs(path string, n int, buf []byte) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	announce(unix.Gettid())
	if err := waitGo(); err != nil {
		return err
	}
	for i := range n {
		if buf != nil {
			if _, err := unix.Pwrite(int(f.Fd()), buf, int64(i*len(buf))); err != nil {
				return err
			}
		}
		if err := unix.Fdatasync(int(f.Fd())); err != nil {
			return err
		}
	}
	return nil
}
