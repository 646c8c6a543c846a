package procfs

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The test binary re-executes itself as the workload: helperEnv selects what
// it does instead of running tests.
const helperEnv = "PERFSLEUTH_PROCFS_HELPER"

// What the "work" helper does, so tests know what to expect.
const (
	helperBurners    = 3
	helperBurnCPU    = 300 * time.Millisecond // CPU time per burner thread
	helperWrites     = 64
	helperWriteBytes = 4096
	helperShortCPU   = 150 * time.Millisecond // the short-lived grandchild
	helperSleep      = 1200 * time.Millisecond
	helperThreads    = 20
	helperSpinners   = 2 // threads the "pinned" helper spins on one CPU
)

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "":
		os.Exit(m.Run())
	case "work":
		helperWork()
	case "short":
		burnThreadCPU(helperShortCPU, 2*time.Second)
	case "sleep":
		time.Sleep(helperSleep)
	case "threads":
		helperManyThreads()
	case "pinned":
		helperPinned()
	default:
		fmt.Fprintln(os.Stderr, "unknown helper", os.Getenv(helperEnv))
		os.Exit(2)
	}
	os.Exit(0)
}

// helperWork waits for "go" on stdin, then: writes helperWrites*helperWriteBytes
// bytes with write(2); runs a short-lived grandchild and reaps it; starts a
// sleeping grandchild; burns CPU in helperBurners threads that then exit;
// reaps the sleeper; prints "done SHORTPID SLEEPPID" and waits for stdin to
// close.
func helperWork() {
	// Keep the main goroutine on its thread so that the burners run on
	// threads of their own, which end when they return.
	runtime.LockOSThread()
	in := bufio.NewReader(os.Stdin)
	if line, err := in.ReadString('\n'); err != nil || line != "go\n" {
		os.Exit(3)
	}
	f, err := os.Create(os.Getenv("PERFSLEUTH_PROCFS_FILE"))
	if err != nil {
		os.Exit(4)
	}
	buf := make([]byte, helperWriteBytes)
	for range helperWrites {
		if _, err := unix.Write(int(f.Fd()), buf); err != nil {
			os.Exit(5)
		}
	}
	f.Close()

	short := helperCmd("short")
	if err := short.Run(); err != nil {
		os.Exit(6)
	}
	sleeper := helperCmd("sleep")
	if err := sleeper.Start(); err != nil {
		os.Exit(7)
	}
	var wg sync.WaitGroup
	for range helperBurners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Returning while locked ends the OS thread: the test sees it exit.
			runtime.LockOSThread()
			burnThreadCPU(helperBurnCPU, 3*time.Second)
		}()
	}
	wg.Wait()
	if err := sleeper.Wait(); err != nil {
		os.Exit(8)
	}
	fmt.Printf("done %d %d\n", short.Process.Pid, sleeper.Process.Pid)
	in.ReadString('\n') // until the test closes stdin
}

func helperManyThreads() {
	for range helperThreads {
		go func() {
			runtime.LockOSThread()
			select {}
		}()
	}
	time.Sleep(100 * time.Millisecond)
	fmt.Println("ready")
	bufio.NewReader(os.Stdin).ReadString('\n')
}

// helperPinned spins helperSpinners threads on one CPU (the first this
// process may use), prints "ready TID..." and spins until it is killed. Run
// it with GODEBUG=asyncpreemptoff=1: the spin loop makes no calls, so Go
// never preempts it, and the threads only ever run or wait for the CPU
// (a preempted locked goroutine would briefly sleep while its thread is
// handed back to it).
func helperPinned() {
	runtime.GOMAXPROCS(helperSpinners + 2) // the spinners never give their Ps back
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		os.Exit(9)
	}
	cpu := 0
	for cpu < 1024 && !set.IsSet(cpu) { // unix.CPUSet holds 1024
		cpu++
	}
	tids := make(chan int)
	for range helperSpinners {
		go func() {
			runtime.LockOSThread()
			var one unix.CPUSet
			one.Set(cpu)
			if err := unix.SchedSetaffinity(0, &one); err != nil {
				os.Exit(10)
			}
			tids <- unix.Gettid()
			spin()
		}()
	}
	line := "ready"
	for range helperSpinners {
		line += " " + strconv.Itoa(<-tids)
	}
	fmt.Println(line)
	select {}
}

// spin never returns and makes no calls.
//
//go:noinline
func spin() {
	for x := 0; ; x++ {
	}
}

func helperCmd(mode string) *exec.Cmd {
	c := exec.Command(os.Args[0], "-test.run=^$")
	c.Env = append(os.Environ(), helperEnv+"="+mode)
	return c
}

// burnThreadCPU spins until this thread used d of CPU (or limit passes, on a
// machine too busy to give it that).
func burnThreadCPU(d, limit time.Duration) {
	end := time.Now().Add(limit)
	c0 := threadCPU()
	x := 0
	for threadCPU()-c0 < d && time.Now().Before(end) {
		for i := range 100000 {
			x += i
		}
	}
	_ = strconv.Itoa(x)
}
