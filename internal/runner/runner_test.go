package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/probe"
	"github.com/perfsleuth/perfsleuth/internal/probe/probetest"
	"github.com/perfsleuth/perfsleuth/internal/target"
)

// fakeTarget is a target that logs its calls; its Wait blocks until ctx
// ends when block is set.
type fakeTarget struct {
	log              *probetest.Log
	startErr, runErr error
	block            bool
}

func (f *fakeTarget) Start(ctx context.Context) error {
	f.log.Add("target start")
	return f.startErr
}
func (f *fakeTarget) Model() model.Target {
	return model.Target{Kind: "null", Null: &model.NullConfig{}}
}
func (f *fakeTarget) Dir() string { return "" }
func (f *fakeTarget) Pids() []int { return []int{os.Getpid()} }
func (f *fakeTarget) Wait(ctx context.Context) (target.Outcome, error) {
	f.log.Add("target wait")
	if f.runErr != nil {
		return target.Outcome{}, f.runErr
	}
	out := target.Outcome{Result: &model.Result{DurationSec: 1, Null: &model.NullResult{Ops: 7}}, Warnings: []string{"from the target"}}
	if f.block {
		<-ctx.Done()
		out.Interrupted = true
	}
	return out, nil
}
func (f *fakeTarget) Stop() { f.log.Add("target stop") }

func fakes(log *probetest.Log) (a, b, c *probetest.Fake) {
	return &probetest.Fake{Name: "a", Log: log},
		&probetest.Fake{Name: "b", Needs: []string{"a"}, Log: log},
		&probetest.Fake{Name: "c", Log: log}
}

func wantCalls(t *testing.T, log *probetest.Log, want ...string) {
	t.Helper()
	if got := log.Calls(); !slices.Equal(got, want) {
		t.Errorf("calls:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// TestObserveOrder: probes start in registry order once the target is
// ready, stop in reverse after the measured phase, contribute in order, and
// the target stops last.
func TestObserveOrder(t *testing.T) {
	log := &probetest.Log{}
	a, b, c := fakes(log)
	var beforeRun []int
	run, err := Observe(context.Background(), &fakeTarget{log: log}, Options{
		Probes:    []probe.Probe{a, b, c},
		BeforeRun: func(pids []int) error { beforeRun = pids; log.Add("before run"); return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	wantCalls(t, log, "target start", "before run", "start a", "start b", "start c", "target wait",
		"stop c", "stop b", "stop a", "contribute a", "contribute b", "contribute c", "target stop")
	if !slices.Equal(beforeRun, []int{os.Getpid()}) || !slices.Equal(b.Roots, beforeRun) {
		t.Errorf("BeforeRun got %v, probe b %v, want the target's pids", beforeRun, b.Roots)
	}
	if run.Result == nil || run.Result.Null.Ops != 7 || run.Target.Kind != "null" || run.Interrupted {
		t.Errorf("record: result %+v, target %q, interrupted %v", run.Result, run.Target.Kind, run.Interrupted)
	}
	for _, w := range []string{"fake probe a was here", "fake probe c was here", "from the target"} {
		if !slices.Contains(run.Warnings, w) {
			t.Errorf("warnings %q lack %q", run.Warnings, w)
		}
	}
	if run.SchemaVersion != model.SchemaVersion || run.EndedAt.Before(run.StartedAt) {
		t.Errorf("schema %d, started %v, ended %v", run.SchemaVersion, run.StartedAt, run.EndedAt)
	}
}

// TestObserveProbeOff: a probe that cannot start leaves a warning, the
// probe that needs it stays off without one, the others run.
func TestObserveProbeOff(t *testing.T) {
	log := &probetest.Log{}
	a, b, c := fakes(log)
	a.StartErr = errors.New("probe a is off: not root")
	run, err := Observe(context.Background(), &fakeTarget{log: log}, Options{Probes: []probe.Probe{a, b, c}})
	if err != nil {
		t.Fatal(err)
	}
	wantCalls(t, log, "target start", "start a", "start c", "target wait", "stop c",
		"contribute a", "contribute b", "contribute c", "target stop")
	if !slices.Contains(run.Warnings, "probe a is off: not root") || slices.ContainsFunc(run.Warnings, func(w string) bool { return strings.Contains(w, "probe b") }) {
		t.Errorf("warnings %q: want a's reason and nothing of b", run.Warnings)
	}
}

// TestObserveRequiredProbeFails: a required probe that cannot start ends
// the run; what started is stopped and the target too.
func TestObserveRequiredProbeFails(t *testing.T) {
	log := &probetest.Log{}
	a, b, c := fakes(log)
	c.Required, c.StartErr = true, errors.New("the workload is gone")
	_, err := Observe(context.Background(), &fakeTarget{log: log}, Options{Probes: []probe.Probe{a, b, c}})
	if err == nil || err.Error() != "the workload is gone" {
		t.Fatalf("error %v, want c's", err)
	}
	wantCalls(t, log, "target start", "start a", "start b", "start c", "stop b", "stop a", "target stop")
}

// TestObserveStopsOnError: a target that fails to start, a BeforeRun that
// fails and a measured phase that fails each stop what was started.
func TestObserveStopsOnError(t *testing.T) {
	for _, tc := range []struct {
		name string
		tgt  func(*probetest.Log) *fakeTarget
		opts func(*probetest.Log) Options
		want []string
	}{
		{"start", func(l *probetest.Log) *fakeTarget { return &fakeTarget{log: l, startErr: errors.New("boom")} },
			func(*probetest.Log) Options { return Options{} },
			[]string{"target start", "target stop"}},
		{"before run", func(l *probetest.Log) *fakeTarget { return &fakeTarget{log: l} },
			func(l *probetest.Log) Options {
				return Options{BeforeRun: func([]int) error { l.Add("before run"); return errors.New("boom") }}
			},
			[]string{"target start", "before run", "target stop"}},
		{"wait", func(l *probetest.Log) *fakeTarget { return &fakeTarget{log: l, runErr: errors.New("boom")} },
			func(*probetest.Log) Options { return Options{} },
			[]string{"target start", "start a", "start b", "start c", "target wait", "stop c", "stop b", "stop a", "target stop"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := &probetest.Log{}
			a, b, c := fakes(log)
			opts := tc.opts(log)
			opts.Probes = []probe.Probe{a, b, c}
			if _, err := Observe(context.Background(), tc.tgt(log), opts); err == nil || err.Error() != "boom" {
				t.Fatalf("error %v, want boom", err)
			}
			wantCalls(t, log, tc.want...)
		})
	}
}

// TestObserveWaitsForCalibration: a target that fails to start ends the
// run at once, and Observe still returns only once the probes' calibration,
// begun beside the start, is over: nothing is left loading after the run.
func TestObserveWaitsForCalibration(t *testing.T) {
	log := &probetest.Log{}
	a := &probetest.Fake{Name: "a", Log: log, CalibrateFor: 50 * time.Millisecond}
	if _, err := Observe(context.Background(), &fakeTarget{log: log, startErr: errors.New("boom")}, Options{Probes: []probe.Probe{a}}); err == nil {
		t.Fatal("no error from a target that failed to start")
	}
	if !a.Calibrated.Load() {
		t.Error("Observe returned while the probe was still calibrating")
	}
}

// TestObserveCancel: Ctrl-C during the measured phase still gives a record,
// marked interrupted, with every probe stopped and contributing.
func TestObserveCancel(t *testing.T) {
	log := &probetest.Log{}
	a, b, c := fakes(log)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	run, err := Observe(ctx, &fakeTarget{log: log, block: true}, Options{Probes: []probe.Probe{a, b, c}})
	if err != nil {
		t.Fatal(err)
	}
	if !run.Interrupted {
		t.Error("the record is not marked interrupted")
	}
	wantCalls(t, log, "target start", "start a", "start b", "start c", "target wait",
		"stop c", "stop b", "stop a", "contribute a", "contribute b", "contribute c", "target stop")
}

// TestObserveUnwanted: a probe the options do not ask for is never started.
func TestObserveUnwanted(t *testing.T) {
	log := &probetest.Log{}
	a, b, c := fakes(log)
	c.Unwanted = true
	if _, err := Observe(context.Background(), &fakeTarget{log: log}, Options{Probes: []probe.Probe{a, b, c}}); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, log, "target start", "start a", "start b", "target wait", "stop b", "stop a", "contribute a", "contribute b", "target stop")
}

// TestBenchNull runs the null benchmark in this process, unobserved.
func TestBenchNull(t *testing.T) {
	run, err := Bench(context.Background(), model.Target{Kind: "null", Null: &model.NullConfig{Ops: 1000, DurationSec: 0.05}}, target.Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	if run.Result == nil || run.Result.Null == nil || run.Result.Null.Ops != 1000 || run.Result.DurationSec < 0.05 {
		t.Fatalf("result %+v", run.Result)
	}
	if run.Observation != nil || run.TimeAccounting != nil {
		t.Error("bench observed the run")
	}
}

// TestObserveNullFails: a workload that fails in its measured phase is an
// error, after every probe stopped.
func TestObserveNullFails(t *testing.T) {
	log := &probetest.Log{}
	a, b, c := fakes(log)
	tg := target.NewInProcess(model.Target{Kind: "null", Null: &model.NullConfig{Fail: "run"}}, target.Hooks{})
	_, err := Observe(context.Background(), tg, Options{Probes: []probe.Probe{a, b, c}})
	if err == nil || !strings.Contains(err.Error(), "failing in run") {
		t.Fatalf("error %v", err)
	}
	wantCalls(t, log, "start a", "start b", "start c", "stop c", "stop b", "stop a")
}

// A pid that ended while the probes attached is said in words, with what
// to do; a live pid leaves the probe's own error as it is.
func TestGoneWhileAttaching(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	gone := cmd.Process.Pid // reaped by Run: no such process now
	probeErr := errors.New("procfs sampler: file does not exist")
	err := goneWhileAttaching([]int{os.Getpid(), gone}, probeErr)
	if !errors.Is(err, probeErr) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d exited while perfsleuth attached", gone)) || !strings.Contains(err.Error(), "after --") {
		t.Errorf("gone pid: %v", err)
	}
	if err := goneWhileAttaching([]int{os.Getpid()}, probeErr); err != probeErr {
		t.Errorf("live pid: %v, want the probe's error unchanged", err)
	}
}

// A command that exits leaving processes of its tree running says which;
// exited threads, the command itself, a process that has since ended and
// the other kinds of target say nothing.
func TestLeftRunning(t *testing.T) {
	threads := []model.ThreadTime{
		{PID: 10, TID: 10, Comm: "sh", Exited: true},
		{PID: 11, TID: 11, Comm: "daemon"},
		{PID: 11, TID: 12, Comm: "daemon"},
		{PID: 13, TID: 13, Comm: "gone"},
		{PID: 14, TID: 14, Comm: "child", Exited: true},
		{PID: 20, TID: 20, Comm: "root"},
		{PID: 15, TID: 15, Comm: "job"},
	}
	run := &model.Run{
		Target:         model.Target{Kind: "command"},
		TimeAccounting: &model.TimeAccounting{Source: "ebpf", Threads: threads},
	}
	alive := func(pid int) bool { return pid != 13 }
	w := leftRunning(run, []int{20}, alive)
	if !strings.Contains(w, "left 2 process(es)") || !strings.Contains(w, "pid 11 (daemon), 15 (job)") || strings.Contains(w, "13") || strings.Contains(w, "(root)") {
		t.Errorf("warning %q: want pids 11 and 15 named, 2 left, not 13 (ended since) nor the root", w)
	}
	for _, other := range []model.Target{{Kind: "pid"}, {Kind: "command", With: []model.PIDConfig{{PID: 99}}}} {
		run.Target = other
		if w := leftRunning(run, []int{20}, alive); w != "" {
			t.Errorf("target %+v: %q, want nothing said", other, w)
		}
	}
	if processAlive(os.Getpid()) != true {
		t.Error("this process does not read as alive")
	}
}

// TestOtherInstances: the other perfsleuth processes are named once per
// tree, and this one's own children and the perfsleuth it observes are
// not, in a /proc made for the test.
func TestOtherInstances(t *testing.T) {
	root := t.TempDir()
	proc := func(pid, ppid int, comm, cmdline string) {
		dir := filepath.Join(root, strconv.Itoa(pid))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		files := map[string]string{
			"stat":    fmt.Sprintf("%d (%s) S %d %d %d 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 100 0 0\n", pid, comm, ppid, pid, pid),
			"comm":    comm + "\n",
			"cmdline": strings.ReplaceAll(cmdline, " ", "\x00") + "\x00",
		}
		for name, body := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	proc(100, 1, "perfsleuth", "perfsleuth diagnose fileio") // this one
	proc(101, 100, "perfsleuth", "perfsleuth __load cpu 0")  // its load helper
	proc(102, 101, "perfsleuth", "perfsleuth __bench")       // below it
	proc(200, 1, "perfsleuth", "/usr/bin/perfsleuth observe --json a.json -- sh -c loop")
	proc(201, 200, "perfsleuth", "perfsleuth __bench fileio")
	proc(300, 1, "sh", "sh -c perfsleuth bench")
	proc(400, 300, "perfsleuth", "perfsleuth bench sqlite") // the workload observed
	proc(500, 1, "bash", "bash")

	got := otherInstances(root, 100, []int{400})
	want := []string{"200 (/usr/bin/perfsleuth observe --json a.json ...)"}
	if !slices.Equal(got, want) {
		t.Errorf("otherInstances = %q, want %q", got, want)
	}
	if got := otherInstances(root, 200, nil); !slices.Equal(got, []string{"100 (perfsleuth diagnose fileio)", "400 (perfsleuth bench sqlite)"}) {
		t.Errorf("otherInstances of 200 = %q", got)
	}
	if w := besideOthers(nil); w != "" {
		t.Errorf("besideOthers with none: %q", w)
	}
	w := besideOthers([]string{"300 (b)", "200 (/usr/bin/perfsleuth a)", "200 (perfsleuth a)"})
	if !strings.Contains(w, "pid 200 (/usr/bin/perfsleuth a), pid 300 (b);") {
		t.Errorf("besideOthers = %q", w)
	}
}
