//go:build amd64

package profile

import (
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/perfsleuth/perfsleuth/internal/probe/timeacct"
)

//go:noinline
func spinProfiled(d time.Duration) uint64 {
	x := uint64(1)
	for end := time.Now().Add(d); time.Now().Before(end); {
		for i := 0; i < 10000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	return x
}

func threadCPU(t *testing.T) time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ts.Nano())
}

// TestSamplesMatchCPUTime: a thread of the test process spins for a known
// CPU time; its samples, at Hz, must add up to that time, and the user
// stacks must name the spinning function.
func TestSamplesMatchCPUTime(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: the profile eBPF probe needs root, run the tests with sudo")
	}
	ta, err := timeacct.Start(timeacct.Config{Roots: []int{os.Getpid()}})
	if err != nil {
		t.Skipf("eBPF time accounting unavailable here: %v", err)
	}
	defer ta.Stop()
	tracked := ta.SharedMaps().Tracked
	// The kernel's statistics, to check the program's own timing against.
	stats, statsErr := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
	if statsErr == nil {
		defer stats.Close()
	}
	p, err := Start(Config{Hz: DefaultHz}, tracked)
	if err != nil {
		t.Fatal(err)
	}
	runtime.LockOSThread()
	tid := unix.Gettid()
	before := threadCPU(t)
	spinProfiled(1500 * time.Millisecond)
	cpu := threadCPU(t) - before
	runtime.UnlockOSThread()
	var kernel ebpf.ProgramStats
	if statsErr == nil {
		if s, err := p.objs.DoSample.Stats(); err == nil {
			kernel = *s
		}
	}
	res, err := p.Stop()
	if err != nil {
		t.Fatal(err)
	}
	// The cost stated in the record: the program times itself, all but the
	// dispatch into it, which the kernel's statistics include.
	sec, pc := res.Cost()
	t.Logf("cost: %.2f ms in %d runs (%d of the workload at %.0f ns, the rest %.0f ns); kernel statistics %.2f ms in %d runs",
		sec*1e3, pc.Runs, pc.TrackedRuns, pc.TrackedNs, pc.UntrackedNs, float64(kernel.Runtime.Nanoseconds())/1e6, kernel.RunCount)
	if pc.TrackedRuns == 0 || pc.TrackedNs <= 0 || sec <= 0 {
		t.Errorf("no cost stated for %d samples: %+v", res.Samples, pc)
	}
	if k := kernel.Runtime.Seconds(); k > 0 && (sec > k*1.05 || sec < k/2) {
		t.Errorf("stated %.3f ms, the kernel measured %.3f ms: want at most the kernel's and at least half of it", sec*1e3, k*1e3)
	}
	if res.Dropped != 0 {
		t.Errorf("%d samples dropped", res.Dropped)
	}
	var mine, inSpin uint64
	for _, s := range res.Stacks {
		if s.PID != os.Getpid() {
			t.Errorf("a sample of pid %d, not the tracked process", s.PID)
		}
		if s.TID != tid {
			continue
		}
		mine += s.Samples
		for _, a := range s.User {
			if f := runtime.FuncForPC(uintptr(a)); f != nil && strings.HasSuffix(f.Name(), "spinProfiled") {
				inSpin += s.Samples
				break
			}
		}
	}
	want := cpu.Seconds() * float64(res.Hz)
	t.Logf("thread %d: %.3fs CPU, %d samples (%.0f expected), %d in spinProfiled; %d samples of the process, %d runs",
		tid, cpu.Seconds(), mine, want, inSpin, res.Samples, res.Runs)
	// A cpu-clock event fires on its CPU's clock, so a thread's samples
	// are its CPU time × Hz give or take the sampling error (a few
	// samples) and a migration between CPUs.
	if float64(mine) < 0.8*want || float64(mine) > 1.2*want {
		t.Errorf("thread has %d samples, want %.0f ± 20%%", mine, want)
	}
	if float64(inSpin) < 0.9*float64(mine) {
		t.Errorf("%d of the thread's %d samples have spinProfiled on their user stack", inSpin, mine)
	}
}
