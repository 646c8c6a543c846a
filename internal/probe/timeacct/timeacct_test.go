package timeacct

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/perfsleuth/perfsleuth/internal/quiet"
	"github.com/perfsleuth/perfsleuth/internal/sysinfo"
)

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("not root: the timeacct eBPF probe needs root, run the tests with sudo")
	}
}

// observe starts a scenario child, attaches the probe to it, lets it run to
// its end and returns what the probe counted.
func observe(t *testing.T, scenario string) (*child, *Result) {
	t.Helper()
	return observeWith(t, scenario, Config{})
}

// observeWith is observe with the options of cfg (its RootPID is set here).
func observeWith(t *testing.T, scenario string, cfg Config) (*child, *Result) {
	t.Helper()
	needRoot(t)
	c := startChild(t, scenario)
	cfg.Roots = []int{c.cmd.Process.Pid}
	p, err := Start(cfg)
	if err != nil {
		if errors.Is(err, os.ErrPermission) {
			t.Skipf("eBPF not permitted here: %v", err)
		}
		t.Fatalf("start: %v", err)
	}
	c.run(t)
	res, err := p.Stop()
	if err != nil {
		t.Fatalf("stop: %v", err)
	}
	checkSums(t, res)
	return c, res
}

// checkSums asserts what holds for every thread: the categories add up to
// the wall time, which lies within the window.
func checkSums(t *testing.T, res *Result) {
	t.Helper()
	window := res.EndNs - res.StartNs
	if len(res.Threads) == 0 {
		t.Fatal("no threads accounted")
	}
	for _, th := range res.Threads {
		var sum uint64
		for _, v := range th.Ns {
			sum += v
		}
		diff := int64(sum) - int64(th.WallNs)
		if diff < 0 {
			diff = -diff
		}
		if float64(diff) > 0.02*float64(th.WallNs) {
			t.Errorf("tid %d (%s): categories sum to %d ns, wall is %d ns", th.TID, th.Comm, sum, th.WallNs)
		}
		// A folded entry sums the walls of its exited threads: each is
		// within the window.
		if n := uint64(max(th.Folded, 1)); th.WallNs > n*window {
			t.Errorf("tid %d (%s, %d folded): wall %d ns exceeds %d x the window %d ns", th.TID, th.Comm, th.Folded, th.WallNs, n, window)
		}
	}
	if res.Dropped != 0 {
		t.Errorf("dropped %d threads", res.Dropped)
	}
}

func thread(t *testing.T, res *Result, tid int) Thread {
	t.Helper()
	for _, th := range res.Threads {
		if th.TID == tid {
			return th
		}
	}
	t.Fatalf("tid %d not accounted", tid)
	return Thread{}
}

func shares(th Thread) string {
	var b strings.Builder
	fmt.Fprintf(&b, "tid %d %s wall %.1f ms:", th.TID, th.Comm, float64(th.WallNs)/1e6)
	for i, v := range th.Ns {
		if v > 0 {
			fmt.Fprintf(&b, " %s %.1f%%", Categories[i], 100*share(th, i))
		}
	}
	fmt.Fprintf(&b, " (switches %d, involuntary %d, wakeups %d, utime %.0f ms, stime %.0f ms)",
		th.Switches, th.Involuntary, th.Wakeups, float64(th.UserNs)/1e6, float64(th.SysNs)/1e6)
	return b.String()
}

func share(th Thread, cat int) float64 {
	if th.WallNs == 0 {
		return 0
	}
	return float64(th.Ns[cat]) / float64(th.WallNs)
}

func logAll(t *testing.T, res *Result) {
	t.Helper()
	t.Logf("window %.1f ms, forks %d, thread creates %d, exits %d, dropped %d",
		float64(res.EndNs-res.StartNs)/1e6, res.Forks, res.ThreadCreates, res.Exits, res.Dropped)
	for _, th := range res.Threads {
		t.Log(shares(th))
	}
}

// frac is part/whole, for messages.
func frac(part, whole uint64) float64 {
	if whole == 0 {
		return 0
	}
	return float64(part) / float64(whole)
}

// The scenario assertions relate a category to the child's work time (from
// the start byte to its end), not to the thread's wall: the wall also holds
// the wait for the start byte while Start finishes attaching.

func TestCPU(t *testing.T) {
	c, res := observe(t, "cpu")
	logAll(t, res)
	th := thread(t, res, c.tids[0])
	work := c.workNs(t)
	t.Logf("work %.1f ms", float64(work)/1e6)
	// The 300 ms busy loop makes no syscalls: it is on the CPU or waiting
	// for it. Alone on this 2-CPU machine cpu measured 93-99% of the work,
	// but with other packages' tests (go test ./...) or the other
	// developer's load it fell to 56%, the rest correctly cpu-wait; so the
	// 80% the plan named is asserted for cpu + cpu-wait, and cpu only for a
	// share that holds under load.
	if s := frac(th.Ns[CatCPU]+th.Ns[CatCPUWait], work); s < 0.9 {
		t.Errorf("cpu + cpu-wait is %.2f of the work time, want >= 0.90: %s", s, shares(th))
	}
	if s := frac(th.Ns[CatCPU], work); s < 0.3 {
		t.Errorf("cpu is %.2f of the work time, want >= 0.30: %s", s, shares(th))
	}
	checkUncharged(t, res, th)
}

// checkUncharged: the run queues' clocks were read at the switch-ins, and
// what the kernel did not charge the thread is a part of its cpu time, the
// steal a part of that (the probe caps each run's steal at its uncharged
// time, as the kernel does), and all of it on a kernel that does not take
// interrupt time off tasks (no IRQ_TIME_ACCOUNTING): two clocks of the run
// queue against its steal count.
func checkUncharged(t *testing.T, res *Result, th Thread) {
	t.Helper()
	cfg, known := sysinfo.KernelConfig()
	irqTime := cfg["CONFIG_IRQ_TIME_ACCOUNTING"] == "y"
	t.Logf("switch-ins read %d, missed %d; thread cpu %d ns, uncharged %d ns, steal %d ns; IRQ_TIME_ACCOUNTING %v (config read: %v)", res.RQReads, res.RQMisses, th.Ns[CatCPU], th.UnchargedNs, th.StealNs, irqTime, known)
	if res.RQReads == 0 || float64(res.RQMisses) > 0.01*float64(res.RQReads+res.RQMisses) {
		t.Errorf("run queue clocks read at %d switch-ins, missed at %d: want read at 99%%", res.RQReads, res.RQMisses)
	}
	if th.StealNs > th.UnchargedNs || th.UnchargedNs > th.Ns[CatCPU] {
		t.Errorf("steal %d ns, uncharged %d ns, cpu %d ns: want steal <= uncharged <= cpu", th.StealNs, th.UnchargedNs, th.Ns[CatCPU])
	}
	if known && !irqTime && th.StealNs != th.UnchargedNs {
		t.Errorf("uncharged %d ns, steal %d ns: without IRQ_TIME_ACCOUNTING all of it is steal", th.UnchargedNs, th.StealNs)
	}
}

func TestSleep(t *testing.T) {
	c, res := observe(t, "sleep")
	logAll(t, res)
	th := thread(t, res, c.tids[0])
	work := c.workNs(t)
	if s := frac(th.Ns[CatSleep], work); s < 0.9 {
		t.Errorf("sleep is %.2f of the work time, want >= 0.90: %s", s, shares(th))
	}
	if s := share(th, CatSleep); s < 0.9 {
		t.Errorf("sleep share %.2f of the wall, want >= 0.90: %s", s, shares(th))
	}
}

func TestStorageSync(t *testing.T) {
	c, res := observe(t, "sync")
	logAll(t, res)
	th := thread(t, res, c.tids[0])
	work := c.workNs(t)
	t.Logf("work %.1f ms", float64(work)/1e6)
	// Appending 4 KiB and fdatasync-ing on this VM's ext4 on virtio spends
	// about as much time on the CPU in the kernel (journal, bio submission;
	// the thread's stime agrees) as asleep: storage-sync measured 29-60% of
	// the work time, cpu 42-62% (0.3-0.6 ms per write+fdatasync, varying
	// with the load of the shared host). So the share asserted is well below
	// the 50% the plan named, and the classifier itself is checked on the
	// time the thread slept during the work (its sleep category is the wait
	// for the start byte): nearly all of it must be storage-sync.
	//
	// The share is of the work time less the thread's wait for a CPU: how
	// long a busy neighbour keeps the CPU is the machine's, not the
	// thread's. Beside two CPU burners the loop waited for a CPU 70% of
	// its time (cpu 12%, storage-sync 18% of the work time; 61% of the time
	// it was not waiting for a CPU), and the share of the whole work time
	// failed there.
	own := work - min(th.Ns[CatCPUWait], work)
	if s := frac(th.Ns[CatStorageSync], own); s < 0.2 {
		t.Errorf("storage-sync is %.2f of the work time less the wait for a CPU, want >= 0.20: %s", s, shares(th))
	}
	off := th.WallNs - th.Ns[CatCPU] - th.Ns[CatCPUWait] - th.Ns[CatSleep]
	if s := frac(th.Ns[CatStorageSync], off); s < 0.9 {
		t.Errorf("storage-sync is %.2f of the blocked time other than sleep, want >= 0.90: %s", s, shares(th))
	}
}

// TestStackRefinesDsyncWrite checks the kernel-stack refinement: sleeps in
// write(2) on an O_DSYNC file count as storage-sync, not storage-write.
func TestStackRefinesDsyncWrite(t *testing.T) {
	c, res := observe(t, "dsync")
	logAll(t, res)
	th := thread(t, res, c.tids[0])
	off := th.WallNs - th.Ns[CatCPU] - th.Ns[CatCPUWait] - th.Ns[CatSleep]
	if s := frac(th.Ns[CatStorageSync], off); s < 0.5 {
		t.Errorf("storage-sync is %.2f of the blocked time other than sleep, want >= 0.50: %s", s, shares(th))
	}
	if th.Ns[CatStorageWrite] >= th.Ns[CatStorageSync] {
		t.Errorf("storage-write %d ns >= storage-sync %d ns: %s", th.Ns[CatStorageWrite], th.Ns[CatStorageSync], shares(th))
	}
}

// TestStackRefinesInodeLock checks the kernel-stack refinement for locks:
// a buffered write(2) waiting for the inode lock that a synchronous O_DIRECT
// writer holds counts as lock, not storage-write.
func TestStackRefinesInodeLock(t *testing.T) {
	c, res := observe(t, "inodelock")
	logAll(t, res)
	work := c.workNs(t)
	t.Logf("work %.1f ms", float64(work)/1e6)
	b := thread(t, res, c.tids[1])
	// How long B waits varies (7-52% of the work measured: the rwsem
	// waiter spins while the owner runs); what it waits for must not.
	if s := frac(b.Ns[CatLock], work); s < 0.02 {
		t.Errorf("lock is %.2f of the work time of the waiting writer, want >= 0.02: %s", s, shares(b))
	}
	off := b.WallNs - b.Ns[CatCPU] - b.Ns[CatCPUWait] - b.Ns[CatSleep]
	if s := frac(b.Ns[CatLock], off); s < 0.8 {
		t.Errorf("lock is %.2f of the waiting writer's blocked time other than sleep, want >= 0.80: %s", s, shares(b))
	}
}

func TestLock(t *testing.T) {
	c, res := observe(t, "lock")
	logAll(t, res)
	work := c.workNs(t)
	var lock, blocks uint64
	for _, tid := range c.tids {
		th := thread(t, res, tid)
		lock += th.Ns[CatLock]
		blocks += th.FutexLockBlocks
	}
	// Each thread sleeps 1 ms holding the lock and 0.2 ms without it, while
	// the other mostly waits for the lock: about 40% lock each.
	if s := frac(lock, 2*work); s < 0.25 {
		t.Errorf("lock is %.2f of the two contending threads' work time, want >= 0.25", s)
	}
	if blocks == 0 {
		t.Error("no futex lock blocks counted")
	}
}

// TestFutexEventIsSleep: a FUTEX_WAIT for a word to leave 0 waits for an
// event (Go's idle threads park so), not a lock. Regression: a Go program
// sleeping on timers read "lock-bound: 67%".
func TestFutexEventIsSleep(t *testing.T) {
	c, res := observe(t, "event")
	logAll(t, res)
	waiter := thread(t, res, c.tids[0])
	blocked := waiter.WallNs - waiter.Ns[CatCPU] - waiter.Ns[CatCPUWait]
	if s := frac(waiter.Ns[CatSleep], blocked); s < 0.8 {
		t.Errorf("sleep is %.2f of the waiter's blocked time, want >= 0.80: %s", s, shares(waiter))
	}
	if s := frac(waiter.Ns[CatLock], blocked); s > 0.05 {
		t.Errorf("lock is %.2f of the waiter's blocked time, want <= 0.05: %s", s, shares(waiter))
	}
	if waiter.FutexSleepBlocks == 0 {
		t.Error("no futex sleep blocks counted")
	}
}

func TestForksExact(t *testing.T) {
	_, res := observe(t, "forks")
	logAll(t, res)
	if res.Forks != 5 {
		t.Errorf("forks = %d, want 5", res.Forks)
	}
	if res.Exits < 5 {
		t.Errorf("exits = %d, want >= 5", res.Exits)
	}
	procs := map[int]bool{}
	for _, th := range res.Threads {
		procs[th.PID] = true
	}
	if len(procs) != 6 {
		t.Errorf("threads from %d processes, want 6 (child + 5)", len(procs))
	}
}

func TestFdatasyncCountExact(t *testing.T) {
	_, res := observe(t, "fdatasync")
	if res.SyncNote != "" {
		t.Skip(res.SyncNote)
	}
	for k, s := range res.Sync {
		t.Logf("%s: count %d, total %.2f ms", SyncKinds[k], s.Count, float64(s.TotalNs)/1e6)
	}
	fd := res.Sync[1]
	if fd.Count != 1000 {
		t.Errorf("fdatasync count = %d, want 1000", fd.Count)
	}
	var inSlots uint64
	for _, v := range fd.LatencyLog2Us {
		inSlots += v
	}
	if inSlots != fd.Count {
		t.Errorf("histogram holds %d calls, count is %d", inSlots, fd.Count)
	}
	if fd.TotalNs == 0 || fd.TotalNs > res.EndNs-res.StartNs {
		t.Errorf("fdatasync total %d ns outside (0, window %d]", fd.TotalNs, res.EndNs-res.StartNs)
	}
	for k, s := range res.Sync {
		if k != 1 && s.Count != 0 {
			t.Errorf("%s count = %d, want 0", SyncKinds[k], s.Count)
		}
	}
}

// sampleCount sums a thread's on-CPU activity samples.
func sampleCount(th Thread) (n uint64) {
	for _, s := range th.Samples {
		n += s
	}
	return n
}

// TestActivitySamplesUser: a busy loop with no syscalls is sampled in user
// code, at the scheduler tick's rate (CONFIG_HZ) per second of its cpu
// time.
func TestActivitySamplesUser(t *testing.T) {
	c, res := observe(t, "cpu")
	th := thread(t, res, c.tids[0])
	if !res.Sampled || res.SampleHz == 0 {
		t.Skipf("no activity samples, or no tick rate, here: %s", res.SampleNote)
	}
	n := sampleCount(th)
	want := float64(th.Ns[CatCPU]) / 1e9 * float64(res.SampleHz)
	t.Logf("%d samples, %.0f expected from %.1f ms of cpu; by activity %v", n, want, float64(th.Ns[CatCPU])/1e6, th.Samples)
	// ~75 ticks at 250 Hz: ±1 at each edge of the work, and the tick's
	// phase against the thread's runs.
	if float64(n) < 0.75*want || float64(n) > 1.25*want {
		t.Errorf("%d samples for %.0f expected", n, want)
	}
	if u := frac(th.Samples[ActUser], n); u < 0.95 {
		t.Errorf("%.2f of the samples in user code, want >= 0.95: %v", u, th.Samples)
	}
}

// TestActivitySamplesSync: appending and fdatasync-ing runs much of its
// cpu time inside the sync calls (the journal, the bio submission), which
// the samples must see as sync, not as user code.
//
// It needs a quiet machine: beside two CPU burners the loop, woken by the
// disk's interrupt on a CPU a burner holds, mostly gets the CPU when the
// scheduler tick preempts the burner, runs its ~17 µs and sleeps again long
// before the next tick: the samples, taken at the tick, then miss it (1 and
// 3 samples for ~60 expected in two of the suite runs). The record
// keeps how many samples a thread's split rests on (ThreadTime's
// ActivitySamples); what this test holds is the split itself.
func TestActivitySamplesSync(t *testing.T) {
	q := quiet.Need(t)
	c, res := observe(t, "synclong")
	q.Still(t)
	th := thread(t, res, c.tids[0])
	if !res.Sampled || res.SampleHz == 0 {
		t.Skipf("no activity samples, or no tick rate, here: %s", res.SampleNote)
	}
	n := sampleCount(th)
	t.Logf("%d samples by activity %v, cpu %.1f ms", n, th.Samples, float64(th.Ns[CatCPU])/1e6)
	if n < 10 {
		t.Fatalf("%d samples: too few to judge", n)
	}
	// Bursts of ~17 µs catch fewer ticks than a long run: 37 for 51
	// expected alone (the tick stops while the CPU idles), 20 for 61
	// beside two CPU burners (a thread that gets the CPU as a tick's
	// interrupt returns seldom holds it at the next). The count is not
	// held to the cpu time here (TestActivitySamplesUser holds it for a
	// long run); the split is a ratio within the thread.
	in := th.Samples[ActSync] + th.Samples[ActWrite]
	if s := frac(th.Samples[ActSync], n); s < 0.2 {
		t.Errorf("%.2f of the samples in sync calls, want >= 0.20: %v", s, th.Samples)
	}
	if s := frac(in, n); s < 0.6 {
		t.Errorf("%.2f of the samples in write and sync calls, want >= 0.60 (the loop does little else): %v", s, th.Samples)
	}
}
