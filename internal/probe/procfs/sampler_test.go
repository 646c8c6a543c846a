package procfs

import (
	"bufio"
	"context"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/perfsleuth/perfsleuth/internal/analyze"
	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/sysinfo"
)

const testInterval = 150 * time.Millisecond

// workload is a running "work" helper with its pipes.
type workload struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
}

func startWorkload(t *testing.T) *workload {
	t.Helper()
	cmd := helperCmd("work")
	cmd.Env = append(cmd.Env, "PERFSLEUTH_PROCFS_FILE="+filepath.Join(t.TempDir(), "out"))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return &workload{cmd: cmd, stdin: stdin, out: bufio.NewReader(stdout)}
}

func (w *workload) run(t *testing.T) (shortPID, sleepPID int) {
	t.Helper()
	if _, err := io.WriteString(w.stdin, "go\n"); err != nil {
		t.Fatal(err)
	}
	line, err := w.out.ReadString('\n')
	if err != nil {
		t.Fatalf("helper: %v", err)
	}
	f := strings.Fields(line)
	if len(f) != 3 || f[0] != "done" {
		t.Fatalf("helper said %q", line)
	}
	shortPID, _ = strconv.Atoi(f[1])
	sleepPID, _ = strconv.Atoi(f[2])
	return shortPID, sleepPID
}

// finish lets the helper exit and returns the CPU time it and its reaped
// children used, as wait4 reports it.
func (w *workload) finish(t *testing.T) time.Duration {
	t.Helper()
	w.stdin.Close()
	if err := w.cmd.Wait(); err != nil {
		t.Fatalf("helper: %v", err)
	}
	return w.cmd.ProcessState.UserTime() + w.cmd.ProcessState.SystemTime()
}

// cpuBefore is the CPU time pid used before the window (its start-up),
// which the sampler rightly does not count.
func cpuBefore(t *testing.T, pid int) float64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	st, err := parseStat(b)
	if err != nil {
		t.Fatal(err)
	}
	return float64(st.utime+st.stime) / userHZ
}

// cpuTolerance allows for /proc's 10 ms ticks (each process's utime and
// stime are rounded down); it is below helperShortCPU, so losing the
// short-lived grandchild, or the helper's last interval, fails the test.
const cpuTolerance = 0.08

func TestSamplerWorkloadTree(t *testing.T) {
	w := startWorkload(t)
	time.Sleep(100 * time.Millisecond) // let the helper start and wait for "go"
	pre := cpuBefore(t, w.cmd.Process.Pid)
	s := NewSampler(Config{RootPID: w.cmd.Process.Pid, IncludeRoot: true, Interval: testInterval})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, sleepPID := w.run(t)
	time.Sleep(2 * testInterval) // the helper is idle now, waiting on stdin
	obs := s.Stop()
	used := w.finish(t).Seconds() - pre
	t.Logf("warnings: %v; %d samples, observer %.1f ms/sample", s.Warnings(), len(obs.Timeline), obs.ObserverCPUSec*1000/float64(len(obs.Timeline)+1))

	tot := obs.Totals.Process
	t.Logf("totals: %+v; wait4 CPU %.3f s", tot, used)
	if tot.WChar < helperWrites*helperWriteBytes || tot.SyscW < helperWrites {
		t.Errorf("wchar %d syscw %d, want >= %d and >= %d", tot.WChar, tot.SyscW, helperWrites*helperWriteBytes, helperWrites)
	}
	if tot.Processes < 2 {
		t.Errorf("%d processes seen, want the helper and its sleeping child at least", tot.Processes)
	}
	if got := tot.UserSec + tot.SystemSec; math.Abs(got-used) > cpuTolerance {
		t.Errorf("tree CPU %.3f s, wait4 says %.3f s", got, used)
	}

	var helperThreads, burned, exited int
	sawSleeper := false
	for _, th := range obs.Totals.Threads {
		switch th.PID {
		case w.cmd.Process.Pid:
			helperThreads++
			if th.UserSec > 0 && th.Exited {
				burned++
			}
			if th.Exited {
				exited++
			}
		case sleepPID:
			sawSleeper = true
		}
	}
	if helperThreads < helperBurners+1 {
		t.Errorf("%d helper threads seen, want at least %d", helperThreads, helperBurners+1)
	}
	if burned < helperBurners {
		t.Errorf("%d exited threads with user time, want %d burners", burned, helperBurners)
	}
	if exited == helperThreads {
		t.Errorf("every helper thread is marked exited, but the helper was alive at Stop")
	}
	if !sawSleeper {
		t.Errorf("grandchild %d not in the tree", sleepPID)
	}
	checkCPUShares(t, obs)
	checkRunDelays(t, obs)
	for _, th := range obs.Totals.Threads {
		// One that exited may have gone between its stat and schedstat reads.
		if !th.SchedStat && !th.Exited && schedstatMissing("/proc") == "" {
			t.Errorf("thread %d: schedstat not read", th.TID)
		}
	}
	if last := obs.Timeline[len(obs.Timeline)-1]; math.Abs(last.TSec-obs.DurationSec) > 1e-9 {
		t.Errorf("last sample ends at %.3f s, window at %.3f s", last.TSec, obs.DurationSec)
	}
}

// TestSamplerLauncherRoot observes this test process as an excluded
// launcher: the helper is its child and is reaped by it, so the helper's
// last moments arrive only through this process's cutime. The interval is
// long, so the short-lived grandchild lives and dies between two samples
// and is counted only through the helper's cutime.
func TestSamplerLauncherRoot(t *testing.T) {
	w := startWorkload(t)
	time.Sleep(100 * time.Millisecond)
	pre := cpuBefore(t, w.cmd.Process.Pid)
	s := NewSampler(Config{RootPID: os.Getpid(), IncludeRoot: false, Interval: time.Second})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	w.run(t)
	used := w.finish(t).Seconds() - pre
	obs := s.Stop()
	tot := obs.Totals.Process
	t.Logf("totals: %+v; wait4 CPU %.3f s", tot, used)
	if got := tot.UserSec + tot.SystemSec; math.Abs(got-used) > cpuTolerance {
		t.Errorf("tree CPU %.3f s, wait4 says %.3f s", got, used)
	}
	if tot.WChar < helperWrites*helperWriteBytes {
		t.Errorf("wchar %d, want >= %d", tot.WChar, helperWrites*helperWriteBytes)
	}
	for _, th := range obs.Totals.Threads {
		if th.PID == os.Getpid() {
			t.Errorf("thread %d of the excluded root is listed", th.TID)
			break
		}
	}
	if len(obs.Totals.Threads) == 0 {
		t.Errorf("no helper threads listed")
	}
}

// checkCPUShares: each CPU's eight shares add up to 100 %.
func checkCPUShares(t *testing.T, obs *model.Observation) {
	t.Helper()
	check := func(where string, cpus []model.CPUUse) {
		if len(cpus) < 2 || cpus[0].CPU != -1 {
			t.Errorf("%s: want the all-CPU entry first and one per CPU, got %d entries", where, len(cpus))
			return
		}
		for _, c := range cpus {
			sum := c.User + c.Nice + c.System + c.IOWait + c.IRQ + c.SoftIRQ + c.Steal + c.Idle
			if math.Abs(sum-100) > 0.01 {
				t.Errorf("%s cpu %d: shares add up to %.3f", where, c.CPU, sum)
			}
		}
	}
	for i, smp := range obs.Timeline {
		check("sample "+strconv.Itoa(i), smp.CPUs)
	}
	check("totals", obs.Totals.CPUs)
}

func TestSamplerMissingRoot(t *testing.T) {
	s := NewSampler(Config{RootPID: 1 << 30, Interval: testInterval})
	if err := s.Start(context.Background()); err == nil {
		t.Fatal("Start with a PID that does not exist: no error")
	}
	if obs := s.Stop(); obs == nil || obs.Source != "procfs" {
		t.Errorf("Stop after a failed Start: %+v", obs)
	}
}

func TestSamplerStopTwice(t *testing.T) {
	s := NewSampler(Config{RootPID: os.Getpid(), IncludeRoot: true, Interval: testInterval})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(testInterval + testInterval/2)
	a, b := s.Stop(), s.Stop()
	if a != b {
		t.Error("second Stop returned a different observation")
	}
	if len(a.Missing) == 0 || a.IntervalSec != testInterval.Seconds() {
		t.Errorf("missing %v interval %v", a.Missing, a.IntervalSec)
	}
}

// Two threads spinning on one CPU each run about half the window and wait
// for the CPU the other half: the window is theirs in full, so the
// run-queue wait must be most of what is not CPU time.
const (
	pinnedWindow   = 2 * time.Second
	pinnedInterval = 500 * time.Millisecond
	// minWaitShare: each spinner should wait about half the window; other
	// work on that CPU only makes it wait longer.
	minWaitShare = 0.2
	// sumTolerance: utime and stime are in 10 ms ticks (truncated at both
	// ends of the window) and a wait in progress at either end is counted
	// only when it ends, a few ms: 2% of 2 s is 40 ms.
	sumTolerance = 0.02
)

// TestSamplerRunQueueWait runs helperSpinners threads pinned to one CPU
// and checks that schedstat's run-queue wait is seen per thread, that cpu
// and cpu-wait fill the window, and that FromObservation makes cpu-wait of
// it with next to nothing unknown.
func TestSamplerRunQueueWait(t *testing.T) {
	if why := schedstatMissing("/proc"); why != "" {
		t.Skip(why)
	}
	cmd := helperCmd("pinned")
	cmd.Env = append(cmd.Env, "GODEBUG=asyncpreemptoff=1", "GOGC=off")
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	f := strings.Fields(line)
	if err != nil || len(f) != helperSpinners+1 || f[0] != "ready" {
		t.Fatalf("helper said %q, %v", line, err)
	}
	spinners := map[int]bool{}
	for _, s := range f[1:] {
		tid, _ := strconv.Atoi(s)
		spinners[tid] = true
	}

	s := NewSampler(Config{RootPID: cmd.Process.Pid, IncludeRoot: true, Interval: pinnedInterval})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(pinnedWindow)
	obs := s.Stop()
	w := obs.DurationSec
	want := delayAcctState("/proc")
	if want == model.DelayAcctOn && sysinfo.DelayedDequeue() {
		want = model.DelayAcctUnreliable
	}
	// Another package's tests (timeacct's, run beside this one by go test
	// ./...) turn kernel.task_delayacct on for a command and back off: the
	// sampler then says it changed in the window, which is right, and the
	// sysctl read now cannot say otherwise.
	if obs.DelayAcct != want && obs.DelayAcct != model.DelayAcctChanged {
		t.Errorf("delay accounting %q, the sysctl says %q", obs.DelayAcct, want)
	}

	run := &model.Run{Observation: obs}
	analyze.FromObservation(run)
	times := map[int]model.ThreadTime{}
	for _, tt := range run.TimeAccounting.Threads {
		times[tt.TID] = tt
	}
	// Regression (this test failed on a VM with steal time): time the
	// hypervisor gave another guest while a spinner was running is charged
	// neither as the spinner's CPU ticks nor as a run-queue wait, so the two
	// fall short of the window by up to the spinners' CPU's steal time.
	stolen := 0.0
	var set unix.CPUSet
	if unix.SchedGetaffinity(0, &set) == nil {
		for _, c := range obs.Totals.CPUs {
			if set.IsSet(c.CPU) {
				stolen = c.Steal / 100 * w // the helper pins to the first CPU it may use
				break
			}
		}
	}
	t.Logf("steal on the spinners' CPU: %.3f s", stolen)
	var waits float64
	for _, th := range obs.Totals.Threads {
		if !spinners[th.TID] {
			continue
		}
		delete(spinners, th.TID)
		cpu := th.UserSec + th.SystemSec
		t.Logf("thread %d: cpu %.3f s, run-queue wait %.3f s, window %.3f s", th.TID, cpu, th.RunDelaySec, w)
		if !th.SchedStat {
			t.Errorf("thread %d: schedstat not read", th.TID)
		}
		if th.RunDelaySec < minWaitShare*w {
			t.Errorf("thread %d waited %.3f s for the CPU, want more than %.0f%% of %.3f s", th.TID, th.RunDelaySec, minWaitShare*100, w)
		}
		if d := cpu + th.RunDelaySec - w; d > sumTolerance*w || d < -(sumTolerance*w+stolen) {
			t.Errorf("thread %d: cpu + run-queue wait is %.3f s off the window (%.3f s)", th.TID, d, w)
		}
		waits += th.RunDelaySec

		tt := times[th.TID]
		sec := tt.Seconds
		if sum := sec[model.CatCPU] + sec[model.CatCPUWait] + sec[model.CatUnknown]; math.Abs(sum-w) > 1e-9 || len(sec) != 3 {
			t.Errorf("thread %d accounting %v adds up to %.3f s, window %.3f s", th.TID, sec, sum, w)
		}
		if sec[model.CatCPUWait] < minWaitShare*w || sec[model.CatUnknown] > sumTolerance*w+stolen {
			t.Errorf("thread %d accounting %v: want cpu-wait over %.0f%% and unknown under %.0f%% of the window", th.TID, sec, minWaitShare*100, sumTolerance*100)
		}
	}
	if len(spinners) > 0 {
		t.Fatalf("spinning threads %v not seen", spinners)
	}
	if tot := obs.Totals.Process.RunDelaySec; tot < waits-1e-6 {
		t.Errorf("process run-queue wait %.3f s, less than the spinners' %.3f s", tot, waits)
	}
	checkRunDelays(t, obs)
}

// checkRunDelays: the per-interval run-queue waits of the timeline add up
// to the per-thread ones over the window, so that no interval was lost or
// counted twice (an idle thread's schedstat is read only when it has run).
func checkRunDelays(t *testing.T, obs *model.Observation) {
	t.Helper()
	var timeline, threads float64
	for _, smp := range obs.Timeline {
		timeline += smp.Process.RunDelaySec
	}
	for _, th := range obs.Totals.Threads {
		if th.SchedStat {
			threads += th.RunDelaySec
		}
	}
	if math.Abs(timeline-threads) > 1e-6 {
		t.Errorf("run-queue waits: timeline %.6f s, threads %.6f s", timeline, threads)
	}
}

// TestSchedstatMissing: a kernel that keeps no schedstat prints "0 0 0",
// and one without CONFIG_SCHED_INFO has no file; both turn cpu-wait off.
func TestSchedstatMissing(t *testing.T) {
	dir := t.TempDir()
	if why := schedstatMissing(dir); !strings.Contains(why, "not readable") {
		t.Errorf("no file: %q", why)
	}
	if err := os.Mkdir(filepath.Join(dir, "thread-self"), 0o755); err != nil {
		t.Fatal(err)
	}
	for content, live := range map[string]bool{"0 0 0\n": false, "garbage\n": false, "1234 5 6\n": true} {
		if err := os.WriteFile(filepath.Join(dir, "thread-self", "schedstat"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if why := schedstatMissing(dir); (why == "") != live {
			t.Errorf("%q: %q", content, why)
		}
	}
}
