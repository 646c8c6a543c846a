package scenarios

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/quiet"
)

// expDir is one working directory for all experiment tests, so that the
// device's peak write rate is measured once and remembered (as it would be
// for a user) instead of once per test.
var (
	expDirOnce sync.Once
	expDirPath string
)

func expDir(t *testing.T) string {
	expDirOnce.Do(func() {
		d, err := os.MkdirTemp(bin, "experiments-")
		if err != nil {
			t.Fatal(err)
		}
		expDirPath = d
	})
	return expDirPath
}

// experiment runs perfsleuth diagnose (with experiments) and returns the record.
func experiment(t *testing.T, args ...string) *model.Run {
	t.Helper()
	work := expDir(t)
	rec := filepath.Join(t.TempDir(), "run.json")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	// The budget stops the rounds added while a condition is
	// inconclusive (up to twice --repeat) in time: at b17f91e (stop 41)
	// DELETE+FULL's 5 rounds of 5.5 s runs, planned at 1m28s, went on
	// past the 4 minutes and were killed.
	full := append([]string{"diagnose", "--interval", "200ms", "--json", rec, "--budget", "3m"}, args...)
	cmd := command(ctx, full...)
	cmd.Dir = work
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("perfsleuth %s: %v\n%s", strings.Join(full, " "), err, out)
	}
	run := loadRecord(t, rec)
	if run.Experiments == nil || run.Verdict == nil {
		t.Fatalf("no experiments or verdict in the record\n%s", out)
	}
	t.Logf("perfsleuth %s:\n%s", strings.Join(full, " "), section(string(out), "experiments", "observation"))
	return run
}

// section cuts the report from the line starting with from to the one starting with to.
func section(out, from, to string) string {
	if i := strings.Index(out, "\n"+from); i >= 0 {
		out = out[i+1:]
	}
	if i := strings.Index(out, "\n"+to); i >= 0 {
		out = out[:i]
	}
	return out
}

// findCondition is a condition's result in the record, nil when it is not
// there.
func findCondition(run *model.Run, cond string) *model.Condition {
	for i := range run.Experiments.Conditions {
		if c := &run.Experiments.Conditions[i]; c.Name == cond {
			return c
		}
	}
	return nil
}

// class asserts a condition's classification.
func class(t *testing.T, run *model.Run, cond, want string) {
	t.Helper()
	c := findCondition(run, cond)
	if c == nil {
		t.Errorf("condition %s not in the record", cond)
	} else if c.Class != want {
		t.Errorf("%s: %s (change %+.0f%%, interval [%+.0f%%, %+.0f%%], %s), want %s", cond, c.Class, c.Change*100, c.Interval[0]*100, c.Interval[1]*100, c.Reason, want)
	}
}

// conditionOf is a condition's result in the record.
func conditionOf(t *testing.T, run *model.Run, cond string) model.Condition {
	t.Helper()
	c := findCondition(run, cond)
	if c == nil {
		t.Fatalf("condition %s not in the record", cond)
	}
	return *c
}

// change is a condition's median change in the record.
func change(t *testing.T, run *model.Run, cond string) float64 {
	t.Helper()
	return conditionOf(t, run, cond).Change
}

// The scenario programs below do a fixed amount of work, so the measure is
// their wall time.

func TestExperimentCPUBound(t *testing.T) {
	// Beside two CPU burners io-pressure cost the program as much as
	// cpu-contention (-40%, -39%): its writer needs a CPU too.
	q := quiet.Need(t)
	run := experiment(t, "--conditions", "cpu-contention,io-pressure", "--", scenario(t, "cpu"), "600")
	q.Still(t)
	class(t, run, "cpu-contention", "sensitive")
	// IO pressure costs CPU too: its writer's own (520 ms a run here at
	// 918 MiB/s), and a VM's virtio backend (steal). On the CI machine it
	// once took 11% from this program, on this one 1-2% and, once, 21%
	// (its cpu time rose 773 ms → 895 ms a run, its storage time stayed 0).
	// What must hold anywhere is perfsleuth's claim about it: io-pressure
	// is never "sensitive" for a program that does no IO, and when it
	// costs more than a third of what losing a CPU costs, perfsleuth has
	// found that it took CPU (a confounded side effect) and says so.
	cpuLoss, ioLoss := change(t, run, "cpu-contention"), change(t, run, "io-pressure")
	io := conditionOf(t, run, "io-pressure")
	if io.Class == "sensitive" {
		t.Errorf("io-pressure is sensitive (%+.0f%%) for a program that does no IO: %s", ioLoss*100, io.Reason)
	}
	if -ioLoss > -cpuLoss/3 {
		if se := io.SideEffect; se == nil || !se.Confounded || se.Resource != "cpu" || io.Class != "inconclusive" {
			t.Errorf("io-pressure changed a CPU-bound program %+.0f%%, more than a third of cpu-contention's %+.0f%%, and is %s without a confounded cpu side effect (%+v)", ioLoss*100, cpuLoss*100, io.Class, io.SideEffect)
		} else {
			t.Logf("io-pressure changed it %+.0f%% and took CPU, as perfsleuth said: %s", ioLoss*100, io.SideEffect.Summary)
		}
	}
	if run.Verdict.Bottleneck != "cpu" {
		t.Errorf("bottleneck %q, want cpu: %s", run.Verdict.Bottleneck, run.Verdict.Conclusion)
	}
}

// TestExperimentCPUHalf: a program with as many busy threads as CPUs feels
// losing half of them (a single thread does not, on 2 CPUs).
func TestExperimentCPUHalf(t *testing.T) {
	// Beside two CPU burners, two busy threads on two CPUs lose little
	// more on one (+1%, insensitive): they had the CPUs half anyway.
	q := quiet.Need(t)
	cpus := runtimeCPUs(t)
	run := experiment(t, "--conditions", "cpu-half", "--", scenario(t, "cpu"), "300", fmt.Sprint(cpus))
	q.Still(t)
	class(t, run, "cpu-half", "sensitive")
}

func TestExperimentSyncBound(t *testing.T) {
	// 7 repeats of 12000 syncs (about 1.6 s a run). With 3 repeats of 3000
	// the CI machine's baseline moved ±16% and cpu-half's interval [-26%,
	// +16%] could not rule out a large loss. With 5 of 6000 (~0.8 s), one
	// slow run in the baseline and one in cpu-half (978 ms and 1.0 s among
	// ~800 ms) widened the interval to [-20%, +20%]; with 7 of 6000, one
	// slow baseline run (952 ms among ~830) made the baseline's noise ±13%,
	// more than a weak io-pressure's -11% (clean-clone runs here). The
	// noise was then the largest single run's change; a hiccup of ~150 ms
	// weighs half as much in runs twice as long.
	//
	// cpu-half is not held to "insensitive": the loop is on a CPU or
	// waiting for one 45% of its time (cpu 433 ms, cpu-wait 219 ms of
	// 1.44 s in a clean-clone run), and on one CPU it shares that CPU with
	// jbd2 and the disk's interrupts. Losing it cost 6 of 7 paired rounds
	// 0-21% there (-10% [-16%, -7%], sensitive), and -14% in an earlier
	// CI run: an effect at the material threshold, which the product must
	// measure and name (the AndroBench report's lesson), not a test's
	// premise. What must hold: the storage costs it more than a CPU, the
	// verdict says storage, and a cpu-half found to matter is said.
	//
	// Issue 14: the runs are now about 1.2 s on whatever disk this is,
	// five of each, at most seven. 12,000 syncs took 2.7 s a run on a
	// slower day of this VM's disk, the test 90 s, and issue 14's command
	// (go test -count=5 of this test, TestCompareIdenticalConfigs and
	// TestScenarioVerdicts) ran past go test's 10 minutes. The syncs are
	// counted from a timed run of 1,000 first; io-pressure cost that slower
	// disk's loop 41% against a baseline noise of ±13%.
	//
	// Then about 0.9 s: the test took 39-50 s of issue 14's command, which
	// ran 612 s and past go test's 10 minutes. Short runs widened the
	// baseline's noise when cpu-half had to be found insensitive; what is
	// held now (io-pressure sensitive, it slowing the loop 50-110% here;
	// cpu-half's change smaller; the verdict io) stands well clear of a
	// ±20% noise.
	prog := scenario(t, "storagesync")
	n := syncsFor(t, prog, 900*time.Millisecond)
	run := experiment(t, "--repeat", "5", "--max-repeat", "7", "--conditions", "cpu-half,io-pressure", "--", prog, fmt.Sprint(n))
	class(t, run, "io-pressure", "sensitive")
	cpuLoss, ioLoss := change(t, run, "cpu-half"), change(t, run, "io-pressure")
	if -cpuLoss >= -ioLoss {
		t.Errorf("cpu-half changed a sync loop %+.0f%%, as much as io-pressure's %+.0f%% or more", cpuLoss*100, ioLoss*100)
	}
	if run.Verdict.Bottleneck != "io" {
		t.Errorf("bottleneck %q, want io: %s", run.Verdict.Bottleneck, run.Verdict.Conclusion)
	}
	for _, c := range run.Experiments.Conditions {
		if c.Name == "cpu-half" && c.Class == "sensitive" && !strings.Contains(run.Verdict.Conclusion, "cpu-half") {
			t.Errorf("cpu-half is sensitive (%+.0f%%) and the conclusion does not say so: %s", c.Change*100, run.Verdict.Conclusion)
		}
	}
}

// syncsFor is how many write+fdatasync of the storagesync scenario take
// about d in the experiments' directory, from a timed run of 1,000 there:
// at least 2,000 and at most 12,000.
func syncsFor(t *testing.T, prog string, d time.Duration) int {
	t.Helper()
	const probe = 1000
	cmd := exec.Command(prog, fmt.Sprint(probe))
	cmd.Dir = expDir(t)
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %d: %v\n%s", prog, probe, err, out)
	}
	took := time.Since(start)
	n := int(float64(probe) * d.Seconds() / took.Seconds())
	n = min(max(n, 2000), 12000)
	t.Logf("%d syncs took %s here: %d for about %s a run", probe, took.Round(time.Millisecond), n, d)
	return n
}

// readData writes the 256 MiB file the coldread scenario reads, removed
// at the test's end.
func readData(t *testing.T, name string) string {
	t.Helper()
	data := filepath.Join(expDir(t), name)
	f, err := os.Create(data)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(data) })
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = byte(i * 31)
	}
	for i := 0; i < 256; i++ {
		if _, err := f.Write(buf); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
	return data
}

func TestExperimentColdRead(t *testing.T) {
	// 256 MiB read at 20,000 random 4 KiB places: warm, copies from the
	// page cache; evicted, each read waits for the disk.
	data := readData(t, "coldread-data")
	run := experiment(t, "--conditions", "cold-cache", "--evict", data, "--", scenario(t, "coldread"), data, "20000")
	class(t, run, "cold-cache", "sensitive")
	if run.Verdict.Bottleneck != "cache" {
		t.Errorf("bottleneck %q, want cache: %s", run.Verdict.Bottleneck, run.Verdict.Conclusion)
	}
}

// TestExperimentCacheLimit: the same reads under a 16 MiB page cache
// (cache-limit): the places they read take about 80 MiB, so each run
// reads most of them from the device, while the baseline's stay cached:
// a baseline run after a cache-limit one gets a re-warm run first. It
// failed about one run in two before those (CI at f0a4997, 0e5d731):
// baseline runs of 22 ms after a baseline, 1.1-1.3 s after a
// cache-limit run, noise ±281%, cache-limit inconclusive.
func TestExperimentCacheLimit(t *testing.T) {
	data := readData(t, "cachelimit-data")
	run := experiment(t, "--conditions", "cache-limit", "--cache-limit", "16MiB", "--evict", data, "--", scenario(t, "coldread"), data, "20000")
	ex := run.Experiments
	want := 0
	for i := 1; i < len(ex.Order); i++ {
		if strings.HasPrefix(ex.Order[i-1], "cache-limit#") && strings.HasPrefix(ex.Order[i], "baseline#") {
			want++
		}
	}
	if len(ex.Rewarms) != want {
		t.Errorf("%d re-warm runs, want %d, one before each baseline run after a cache-limit one: %v", len(ex.Rewarms), want, ex.Order)
	}
	class(t, run, "cache-limit", "sensitive")
	if run.Verdict.Bottleneck != "cache" {
		t.Errorf("bottleneck %q, want cache: %s", run.Verdict.Bottleneck, run.Verdict.Conclusion)
	}
	c := conditionOf(t, run, "cache-limit")
	if all := strings.Join(c.Settings, "; "); !strings.Contains(all, "16 MiB") || !strings.Contains(all, "memory.") {
		t.Errorf("cache-limit's settings %q do not give the budget and the mechanism", c.Settings)
	}
}

// TestExperimentSQLite: WAL with synchronous=NORMAL commits without a sync
// and is limited by SQLite's own CPU; DELETE with synchronous=FULL syncs the
// journal, the database and the directory on every commit and is limited
// by the device. The record must prove each with its numbers.
// walSteadyNoise bounds the WAL+NORMAL baseline's noise of a quiet run
// of TestExperimentSQLite: under 1.75x the most a quiet machine gave
// (±20%), far under the ±52% of the run that failed.
const walSteadyNoise = 0.35

func TestExperimentSQLite(t *testing.T) {
	// Beside two CPU burners WAL+NORMAL ran 24% faster on one CPU than
	// on two (it shared each with a burner) and lost 24% to io-pressure
	// (its writer's CPU).
	q := quiet.Need(t)
	wal := experiment(t, "--conditions", "cpu-half,cpu-contention,io-pressure", "sqlite", "--journal", "wal", "--sync", "normal", "--rows", "10000")
	q.Still(t)
	// Issue 14: the load can come after Need's first second. Six quiet
	// runs here measured the baseline's noise at ±0, 0, 0, 0, 9 and 20%
	// (and found cpu every time); the run that failed, ±52%, with every
	// condition rightly inconclusive. The zeros were three-run baselines,
	// whose noise was 0 by construction until 4 runs were needed to take
	// them off a line (stats.minDetrend): a clean-clone run at 1f48d43
	// failed here, "storage-bound: io-pressure -77%", its baseline 26,811,
	// 16,440 and 22,923 tx/s read as ±0% (±50% now, and skipped).
	quiet.Steady(t, "the WAL baseline", wal.Experiments.BaselineNoise, walSteadyNoise)
	if wal.Verdict.Bottleneck != "cpu" {
		t.Errorf("WAL+NORMAL: bottleneck %q, want cpu: %s", wal.Verdict.Bottleneck, wal.Verdict.Conclusion)
	}
	// 1000 rows (about a second a run here) and 5 repeats: with 300 rows
	// and 3 repeats the baseline alone moved ±11% on the CI machine.
	del := experiment(t, "--repeat", "5", "--conditions", "cpu-half,io-pressure", "sqlite", "--journal", "delete", "--sync", "full", "--rows", "1000")
	q.Still(t)
	if del.Verdict.Bottleneck != "io" {
		t.Errorf("DELETE+FULL: bottleneck %q, want io: %s", del.Verdict.Bottleneck, del.Verdict.Conclusion)
	}
	// Half the CPUs must not cost a sync-bound run a material share: the
	// class is insensitive, or inconclusive on a noisy machine, never
	// sensitive, and the median change stays under the 10% that counts.
	for _, c := range del.Experiments.Conditions {
		if c.Name == "cpu-half" && (c.Class == "sensitive" || c.Change <= -0.10) {
			t.Errorf("DELETE+FULL cpu-half: %s, change %+.0f%% [%+.0f%%, %+.0f%%], want no material loss", c.Class, c.Change*100, c.Interval[0]*100, c.Interval[1]*100)
		}
	}
	for _, run := range []*model.Run{wal, del} {
		c := run.Verdict.Conclusion
		if !strings.Contains(c, "changed the result") || !strings.Contains(c, "%") {
			t.Errorf("the conclusion does not show its numbers: %q", c)
		}
		if run.Experiments.Measure.Unit != "tx/s" {
			t.Errorf("measure %+v, want the benchmark's tx/s", run.Experiments.Measure)
		}
	}
}

// runtimeCPUs is how many CPUs this process may use (as nproc counts them).
func runtimeCPUs(t *testing.T) int {
	n := runtime.NumCPU()
	if n < 2 {
		t.Skip("cpu-half needs 2 CPUs or more")
	}
	return n
}

// TestInterruptsLeaveNothing stops perfsleuth at 50 random moments across
// diagnose (a command and a benchmark, with every condition, so that the
// signal lands in a condition's setup, its run or its restore), observe and
// bench, with SIGINT to perfsleuth alone, SIGINT to its whole process group
// (a terminal's Ctrl-C) or SIGTERM (a service manager's stop). Each time:
// exit 130 (or 0 when it had finished) within 30 s; no process of its own or
// of the workload left; no cgroup of its own left; nothing left in the
// working directory but the record, and nothing in its temporary directory;
// kernel.task_delayacct as it was; and a record, when one was written, that
// says it was interrupted. The moment is logged with each round, so that a
// failure can be replayed.
func TestInterruptsLeaveNothing(t *testing.T) {
	work := t.TempDir()
	tmp := t.TempDir()
	cpuProg := scenario(t, "cpu")
	before := listDir(t, work)
	delayacct := readSysctl(t, "/proc/sys/kernel/task_delayacct")
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 7))
	t.Logf("seed %d", seed)
	rec := filepath.Join(work, "run.json")
	fileio := []string{"fileio", "--rw", "randwrite", "--size", "16MiB", "--duration", "300ms"}
	kinds := []struct {
		name     string
		args     []string
		maxDelay time.Duration
	}{
		{"diagnose command", append([]string{"diagnose", "--json", rec, "--interval", "200ms", "--io-peak", "400MiB",
			"--conditions", "cpu-contention,io-pressure,cold-cache,cpu-half,cpu-quota", "--evict", cpuProg, "--"}, cpuProg, "200"), 6 * time.Second},
		{"diagnose fileio", append([]string{"diagnose", "--json", rec, "--interval", "200ms", "--io-peak", "400MiB",
			"--conditions", "cpu-contention,io-pressure,cold-cache,cpu-half,cpu-quota,io-throttle"}, fileio...), 6 * time.Second},
		{"observe command", []string{"observe", "--json", rec, "--interval", "100ms", "--", cpuProg, "1000"}, 3 * time.Second},
		{"observe fileio", append([]string{"observe", "--json", rec, "--interval", "100ms"}, fileio[:len(fileio)-2]...), 3 * time.Second},
		{"bench fileio", []string{"bench", "fileio", "--json", rec, "--rw", "randwrite", "--size", "16MiB", "--duration", "5s"}, 3 * time.Second},
		{"bench sqlite", []string{"bench", "sqlite", "--json", rec, "--rows", "100000000", "--sync", "off"}, 3 * time.Second},
	}
	signals := []struct {
		name  string
		sig   syscall.Signal
		group bool
	}{{"SIGINT", syscall.SIGINT, false}, {"SIGINT to the group", syscall.SIGINT, true}, {"SIGTERM", syscall.SIGTERM, false}}
	const rounds = 50
	for i := 0; i < rounds; i++ {
		k := kinds[i%len(kinds)]
		sg := signals[rng.IntN(len(signals))]
		// From 50 ms: before Go's runtime has installed perfsleuth's
		// handler, a signal kills it as it would any program.
		delay := 50*time.Millisecond + time.Duration(rng.Int64N(int64(k.maxDelay)))
		what := fmt.Sprintf("round %d: %s, %s after %s", i, k.name, sg.name, delay.Round(time.Millisecond))
		os.Remove(rec)
		cmd := exec.Command(filepath.Join(bin, "perfsleuth"), k.args...)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "NO_COLOR=1", "TMPDIR="+tmp)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(delay)
		if sg.group {
			syscall.Kill(-cmd.Process.Pid, sg.sig)
		} else {
			cmd.Process.Signal(sg.sig)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			t.Fatalf("%s: perfsleuth did not exit within 30 s\n%s", what, out.String())
		}
		code := cmd.ProcessState.ExitCode()
		if code != 130 && code != 0 {
			t.Errorf("%s: exit status %d, want 130 (or 0 if it had finished)\n%s", what, code, out.String())
		}
		// Nothing of perfsleuth's may be running: its helpers, the workload.
		time.Sleep(100 * time.Millisecond)
		if left := strays(t, cpuProg); len(left) > 0 {
			t.Fatalf("%s: processes left behind: %v\n%s", what, left, out.String())
		}
		if left := ownCgroups(); len(left) > 0 {
			t.Fatalf("%s: cgroups left behind: %v\n%s", what, left, out.String())
		}
		for name := range listDir(t, work) {
			if !before[name] && name != filepath.Base(rec) {
				t.Fatalf("%s: left behind in the working directory: %s\n%s", what, name, out.String())
			}
		}
		if left := listDir(t, tmp); len(left) > 0 {
			t.Fatalf("%s: left behind in the temporary directory: %v\n%s", what, left, out.String())
		}
		if now := readSysctl(t, "/proc/sys/kernel/task_delayacct"); now != delayacct {
			t.Fatalf("%s: kernel.task_delayacct is %s, was %s\n%s", what, now, delayacct, out.String())
		}
		saved := "no record"
		if run, err := model.Load(rec); err == nil {
			saved = "a record"
			if code == 130 && !run.Interrupted {
				t.Errorf("%s: exit 130 but the record does not say it was interrupted", what)
			}
		} else if !os.IsNotExist(err) {
			t.Errorf("%s: the record does not load: %v", what, err)
		} else if code == 130 && !strings.Contains(out.String(), "interrupted before anything was measured") {
			t.Errorf("%s: exit 130, no record, and no word that nothing was measured\n%s", what, out.String())
		}
		t.Logf("%s: exit %d, %s, nothing left", what, code, saved)
	}
}

// readSysctl reads a /proc/sys file ("" when it is not there).
func readSysctl(t *testing.T, path string) string {
	t.Helper()
	b, _ := os.ReadFile(path)
	return strings.TrimSpace(string(b))
}

// ownCgroups lists the cgroups perfsleuth made (named perfsleuth-PID-...)
// that are still there, in every hierarchy.
func ownCgroups() []string {
	var left []string
	filepath.WalkDir("/sys/fs/cgroup", func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if strings.HasPrefix(d.Name(), "perfsleuth-") {
			left = append(left, p)
			return filepath.SkipDir
		}
		if strings.Count(strings.TrimPrefix(p, "/sys/fs/cgroup"), "/") >= 5 {
			return filepath.SkipDir
		}
		return nil
	})
	return left
}

// listDir lists every path below dir, relative to it.
func listDir(t *testing.T, dir string) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err == nil && p != dir {
			rel, _ := filepath.Rel(dir, p)
			names[rel] = true
		}
		return nil
	})
	return names
}

// strays lists running processes that are perfsleuth's (its binary from
// this test run) or the workload program.
func strays(t *testing.T, prog string) []string {
	t.Helper()
	self := filepath.Join(bin, "perfsleuth")
	var left []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if err != nil {
			continue
		}
		if exe == self || exe == prog {
			stat, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
			if strings.Contains(string(stat), ") Z ") {
				continue // a zombie whose parent (this test) has not reaped it
			}
			cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			left = append(left, e.Name()+": "+strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	return left
}

// TestExperimentMetric takes the measure from the command's output (an
// exit-time score, higher is better) instead of its wall time.
func TestExperimentMetric(t *testing.T) {
	script := fmt.Sprintf(`s=$(date +%%s%%N); %s 300; e=$(date +%%s%%N); echo "score: $((1000000000000 / (e - s)))"`, scenario(t, "cpu"))
	run := experiment(t, "--conditions", "cpu-contention", "--metric", `score: ([0-9]+)`, "--", "sh", "-c", script)
	if m := run.Experiments.Measure; m.Source != "metric" || !m.HigherIsBetter {
		t.Errorf("measure %+v, want a metric where higher is better", m)
	}
	class(t, run, "cpu-contention", "sensitive")
	for _, c := range run.Experiments.Conditions {
		for _, r := range c.Runs {
			if r.Value < 100 {
				t.Errorf("%s run %d: score %v, not the printed score", c.Name, r.Seq, r.Value)
			}
		}
	}
}

// TestScaling (issue 20): diagnose --scale at 1 thread, as many as CPUs,
// and twice that tells how a program scales: threads on their own data
// and counters each on its own cache line scale linearly; counters on one
// cache line (false sharing) cost each unit more CPU time (coherency);
// units that take one mutex for most of their work wait for it
// (contention). The level past the CPUs is marked, and the USL is fitted.
// Beside a busy neighbour every level waits for the CPUs it holds: it
// needs a quiet machine, and skips when perfsleuth finds the machine's
// speed moved between runs as much as the levels differ ("unsettled").
func TestScaling(t *testing.T) {
	cpus := runtimeCPUs(t)
	cases := []struct{ mode, class string }{
		{"parallel", "linear"},
		{"padded", "linear"},
		{"shared", "coherency"},
		{"convoy", "contention"},
	}
	for _, c := range cases {
		t.Run(c.mode, func(t *testing.T) {
			q := quiet.Need(t)
			run := experiment(t, "--scale", fmt.Sprintf("threads=1,%d,%d", cpus, 2*cpus), "--repeat", "3", "--metric", `ops/s: ([0-9.]+)`,
				"--", scenario(t, "scale"), c.mode, "{threads}")
			q.Still(t)
			sc := run.Experiments.Scaling
			if sc == nil || len(sc.Points) != 3 {
				t.Fatalf("scaling %+v: want 3 levels", sc)
			}
			for i, p := range sc.Points {
				t.Logf("threads=%d: %.0f ops/s [%.0f, %.0f], %.0f%% of linear, cpu %.1f ns a unit, time a unit %v", p.N, p.Throughput, p.ThroughputInterval[0], p.ThroughputInterval[1],
					p.Efficiency*100, p.CPUSecPerUnit*1e9, p.TimePerUnit)
				if len(p.Runs) != 3 || p.Throughput <= 0 || p.CPUSecPerUnit <= 0 {
					t.Errorf("threads=%d: %d runs, throughput %.0f, cpu per unit %g: want 3 runs, both measured", p.N, len(p.Runs), p.Throughput, p.CPUSecPerUnit)
				}
				if over := i == 2; p.OverCPUs != over {
					t.Errorf("threads=%d: over the CPUs %v, want %v", p.N, p.OverCPUs, over)
				}
			}
			if sc.Class == "unsettled" {
				// The product measured the machine moving within a level
				// by as much as the levels differ (contention this guest
				// cannot see, as the Watch cannot): no class is told, and
				// the assertion has nothing to hold.
				t.Skipf("the machine was not steady during the test: %s", sc.Summary)
			}
			if sc.Class != c.class {
				t.Errorf("%s: class %q (%s), want %q", c.mode, sc.Class, sc.Summary, c.class)
			}
			if sc.Fit == nil {
				t.Errorf("no USL fit: %s", sc.FitNote)
			}
			if run.Verdict.Conclusion != sc.Summary {
				t.Errorf("conclusion %q, want the scaling's summary", run.Verdict.Conclusion)
			}
		})
	}
}

// TestExperimentIOThrottle: io-throttle, a bandwidth limit on a cgroup of
// the workload's at half a peak given as 200 MiB/s, slows a program that
// writes 192 MiB with O_DIRECT (sensitive, by far more than the noise),
// and is never sensitive for a program that only computes: it runs
// nothing beside the workload, so it takes no CPU from it (io-pressure's
// writer does).
func TestExperimentIOThrottle(t *testing.T) {
	run := experiment(t, "--repeat", "3", "--io-peak", "200MiB", "--conditions", "io-throttle", "--", scenario(t, "storagewrite"), "192")
	class(t, run, "io-throttle", "sensitive")
	if c := change(t, run, "io-throttle"); c > -0.3 {
		t.Errorf("io-throttle changed 192 MiB of direct writes %+.0f%%, want them slower by far (100 MiB/s at most)", c*100)
	}
	run = experiment(t, "--repeat", "3", "--io-peak", "200MiB", "--conditions", "io-throttle", "--", scenario(t, "cpu"), "300")
	if c := conditionOf(t, run, "io-throttle"); c.Class == "sensitive" {
		t.Errorf("io-throttle is sensitive for a program that does no IO (%+.0f%%, %s)", c.Change*100, c.Reason)
	}
}
