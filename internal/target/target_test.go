package target

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// TestMain lets this test binary be the benchmark child: the builtin
// target starts os.Executable() with ChildCommand, as perfsleuth starts
// itself.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == ChildCommand {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err := RunChild(ctx)
		stop()
		if err != nil {
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func nullTarget(c model.NullConfig) model.Target { return model.Target{Kind: "null", Null: &c} }

// gone says whether pid is gone (reaped, or never ours).
func gone(pid int) bool { return syscall.Kill(pid, 0) == syscall.ESRCH }

func TestBuiltinNull(t *testing.T) {
	var phases []string
	tg := NewBuiltin(nullTarget(model.NullConfig{Ops: 500, DurationSec: 0.1}), Hooks{Phase: func(p string) { phases = append(phases, p) }})
	defer tg.Stop()
	if err := tg.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	pids := tg.Pids()
	if len(pids) != 1 || pids[0] == os.Getpid() {
		t.Fatalf("pids %v: want the child's", pids)
	}
	out, err := tg.Wait(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if out.Result == nil || out.Result.Null == nil || out.Result.Null.Ops != 500 || out.Interrupted {
		t.Fatalf("outcome %+v", out)
	}
	// The child stays until Stop, so that its /proc files can be read.
	if gone(pids[0]) {
		t.Error("the child is gone before Stop")
	}
	tg.Stop()
	if !gone(pids[0]) {
		t.Error("the child is still there after Stop")
	}
	if strings.Join(phases, ",") != "prepare,run,cleanup" {
		t.Errorf("phases %v", phases)
	}
}

func TestBuiltinPrepareFails(t *testing.T) {
	tg := NewBuiltin(nullTarget(model.NullConfig{Fail: "prepare"}), Hooks{})
	defer tg.Stop()
	err := tg.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "failing in prepare") {
		t.Fatalf("error %v, want the child's", err)
	}
}

func TestBuiltinBadSettings(t *testing.T) {
	tg := NewBuiltin(nullTarget(model.NullConfig{Fail: "sometimes"}), Hooks{})
	defer tg.Stop()
	if err := tg.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "use prepare or run") {
		t.Fatalf("error %v", err)
	}
	if tg.Pids() != nil {
		t.Error("a child was started for bad settings")
	}
}

// TestBuiltinInterrupt: Ctrl-C while the child prepares is ErrInterrupted;
// during the measured phase it is a partial outcome marked interrupted.
func TestBuiltinInterrupt(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	tg := NewBuiltin(nullTarget(model.NullConfig{PrepareSec: 30}), Hooks{})
	start := time.Now()
	err := tg.Start(ctx)
	pid := tg.Pids()[0]
	tg.Stop()
	if !errors.Is(err, ErrInterrupted) || time.Since(start) > 5*time.Second {
		t.Errorf("interrupted in prepare: %v after %s", err, time.Since(start))
	}
	if !gone(pid) {
		t.Error("child left behind after an interrupted prepare")
	}

	tg = NewBuiltin(nullTarget(model.NullConfig{DurationSec: 30}), Hooks{})
	defer tg.Stop()
	if err := tg.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	out, err := tg.Wait(ctx)
	if err != nil || !out.Interrupted || out.Result == nil || out.Result.DurationSec > 5 {
		t.Fatalf("interrupted run: %+v, %v", out, err)
	}
}

// TestBuiltinRemovesItsDirectory: a benchmark's directory made by
// perfsleuth is gone after Stop, even when the child never ran.
func TestBuiltinRemovesItsDirectory(t *testing.T) {
	wd, _ := os.Getwd()
	dir := t.TempDir()
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	defer os.Chdir(wd)
	tg := NewBuiltin(model.Target{Kind: "fileio", FileIO: &model.FileIOConfig{RW: "randread", BS: 4096, Size: 1 << 20, Files: 1, Threads: 1, DurationSec: 0.1}}, Hooks{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	tg.Start(ctx)
	made := tg.Dir()
	tg.Stop()
	if made == "" || !strings.HasPrefix(filepath.Base(made), "perfsleuth-fileio-") {
		t.Fatalf("directory %q", made)
	}
	if _, err := os.Stat(made); !os.IsNotExist(err) {
		t.Errorf("%s left behind: %v", made, err)
	}
}

func TestCommand(t *testing.T) {
	for _, tc := range []struct {
		script string
		code   int
		signal string
	}{
		{"exit 0", 0, ""},
		{"exit 3", 3, ""},
		{"kill -TERM $$", -1, "SIGTERM"},
	} {
		tg := NewCommand([]string{"sh", "-c", tc.script}, CommandOptions{Output: &strings.Builder{}})
		if err := tg.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		out, err := tg.Wait(context.Background())
		tg.Stop()
		if err != nil {
			t.Fatal(err)
		}
		c := out.Result.Command
		if c.ExitCode != tc.code || c.Signal != tc.signal || !c.Exited {
			t.Errorf("%q: exit %d signal %q, want %d %q", tc.script, c.ExitCode, c.Signal, tc.code, tc.signal)
		}
		if warned := len(out.Warnings) > 0; warned != (tc.code != 0) {
			t.Errorf("%q: warnings %q", tc.script, out.Warnings)
		}
	}
}

// TestCommandNeverLetThrough: a command stopped at its gate never runs.
func TestCommandNeverLetThrough(t *testing.T) {
	mark := filepath.Join(t.TempDir(), "ran")
	tg := NewCommand([]string{"touch", mark}, CommandOptions{Output: &strings.Builder{}})
	if err := tg.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	pid := tg.Pids()[0]
	tg.Stop()
	if !gone(pid) {
		t.Error("the gate is still there")
	}
	if _, err := os.Stat(mark); !os.IsNotExist(err) {
		t.Error("the command ran")
	}
}

func TestCommandNotFound(t *testing.T) {
	tg := NewCommand([]string{"no-such-command-perfsleuth"}, CommandOptions{})
	defer tg.Stop()
	if err := tg.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("error %v", err)
	}
}

func TestPID(t *testing.T) {
	sleeper := exec.Command("sleep", "30")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer sleeper.Process.Kill()
	exited := make(chan struct{})
	go func() { sleeper.Wait(); close(exited) }()

	tg := NewPID(sleeper.Process.Pid, 100*time.Millisecond)
	if err := tg.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	out, err := tg.Wait(context.Background())
	tg.Stop()
	if err != nil || out.Result.Command.Exited {
		t.Fatalf("timed observation: %+v %v", out.Result.Command, err)
	}
	if m := tg.Model(); m.PID == nil || m.PID.Comm != "sleep" {
		t.Errorf("model %+v", m.PID)
	}

	tg = NewPID(sleeper.Process.Pid, 0)
	if err := tg.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(100*time.Millisecond, func() { sleeper.Process.Kill() })
	out, err = tg.Wait(context.Background())
	tg.Stop()
	if err != nil || !out.Result.Command.Exited {
		t.Fatalf("observation to the exit: %+v %v", out.Result.Command, err)
	}
	<-exited
	if err := NewPID(sleeper.Process.Pid, 0).Start(context.Background()); err == nil {
		t.Error("a gone pid was accepted")
	}
}

// TestPIDStopEndsWatch: after Stop, no goroutine watches the process any
// more. Regression: Stop cleared the watcher's stop channel, the watcher
// then read a nil one, fell back to polling with kill(2) and never ended
// (the agent, which makes a target per window, had one more each window).
func TestPIDStopEndsWatch(t *testing.T) {
	sleeper := exec.Command("sleep", "30")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sleeper.Process.Kill(); sleeper.Wait() }()
	for range 3 {
		tg := NewPID(sleeper.Process.Pid, time.Millisecond)
		if err := tg.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		if _, err := tg.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		tg.Stop()
	}
	var watching int
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		buf := make([]byte, 1<<20)
		stacks := string(buf[:runtime.Stack(buf, true)])
		watching = strings.Count(stacks, "target.(*running).watch")
		if watching == 0 {
			return
		}
	}
	t.Fatalf("%d watcher frames left 5 s after Stop of 3 targets", watching)
}
