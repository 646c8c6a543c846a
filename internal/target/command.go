package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/proctree"
	"github.com/perfsleuth/perfsleuth/internal/sysinfo"
)

// ObserveCommand runs argv with the terminal's stdin, stdout and stderr and
// observes its whole process tree until it exits. Ctrl-C reaches the command
// from the terminal; if it is still running commandStopGrace later (or the
// signal came to perfsleuth alone), its tree gets SIGTERM, then SIGKILL.
func ObserveCommand(ctx context.Context, argv []string, opts ObserveOptions) (*model.Run, error) {
	if len(argv) == 0 {
		return nil, errors.New("no command given: put it after --, e.g. perfsleuth observe -- dd if=/dev/zero of=x bs=1M count=100")
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return nil, fmt.Errorf("command %q not found: check the name, or give its path", argv[0])
	}
	cwd, _ := os.Getwd()
	t := model.Target{Kind: "command", Command: &model.CommandConfig{Argv: argv, Dir: cwd}}
	run := newRun(t)
	run.Host, run.Warnings = sysinfo.Collect(cwd)

	// The command starts as a gate that execs it once the observers are
	// attached to its pid: nothing the command does escapes observation,
	// and loading the probes (up to a second) is not the command's time.
	// The gate is /bin/sh, which is single-threaded: a Go gate would bring
	// runtime threads that show up in the accounting before the exec.
	gateR, gateW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer gateW.Close()
	cmd := exec.Command("/bin/sh", append([]string{"-c", gateScript, path}, argv[1:]...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if opts.Output != nil {
		cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, opts.Output, opts.Output
		// A daemon the command left behind may hold the output pipe open:
		// stop copying from it a second after the command is gone.
		cmd.WaitDelay = time.Second
	}
	cmd.ExtraFiles = []*os.File{gateR}
	// If perfsleuth dies, so does the command it started.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		gateR.Close()
		return nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	gateR.Close()
	// exited closes when the command has exited but is not yet reaped: as a
	// zombie its /proc files still hold its final CPU and IO totals (its own
	// and its reaped children's), which the last sample must read before
	// cmd.Wait releases them.
	exited := make(chan struct{})
	go func() {
		var info unix.Siginfo
		for unix.Waitid(unix.P_PID, cmd.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil) == unix.EINTR {
		}
		close(exited)
	}()
	reaped := false
	defer func() {
		if !reaped {
			stopTree(cmd.Process.Pid, exited)
			cmd.Wait()
		}
	}()

	if opts.BeforeRun != nil {
		if err := opts.BeforeRun(cmd.Process.Pid); err != nil {
			return nil, err
		}
	}
	obs, err := startObservers(context.Background(), cmd.Process.Pid, opts, run)
	if err != nil {
		return nil, err
	}
	defer obs.close()
	start := time.Now()
	if _, err := gateW.Write([]byte("go\n")); err != nil {
		return nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	gateW.Close()
	select {
	case <-exited:
	case <-ctx.Done():
		run.Interrupted = true
		cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-exited:
		case <-time.After(commandStopGrace):
			stopTree(cmd.Process.Pid, exited)
		}
	}
	<-exited
	wall := time.Since(start)
	obs.finish(run)
	cmd.Wait()
	reaped = true
	res := &model.CommandResult{ExitCode: cmd.ProcessState.ExitCode(), Exited: true, WallSec: wall.Seconds()}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		res.Signal = unix.SignalName(ws.Signal())
	}
	if res.ExitCode != 0 && !run.Interrupted {
		run.Warnings = append(run.Warnings, fmt.Sprintf("%s exited with status %d%s: its numbers may describe a failed run", argv[0], res.ExitCode, SignalSuffix(res.Signal)))
	}
	run.Result = &model.Result{DurationSec: wall.Seconds(), Command: res}
	run.EndedAt = time.Now()
	return run, nil
}

// SignalSuffix is " (SIGNAME)" for a process a signal ended, "" otherwise.
func SignalSuffix(sig string) string {
	if sig == "" {
		return ""
	}
	return " (" + sig + ")"
}

// gateScript waits for "go" on fd 3, then becomes the command ($0 is its
// path, found by perfsleuth; "$@" its arguments). If perfsleuth goes away
// first, read fails and the command never starts.
const gateScript = `read -r go <&3 && exec 3<&- && exec "$0" "$@"`

// stopTree ends a child and every process below it: SIGTERM, a grace period,
// then SIGKILL. Descendants are found from /proc before the root is
// signalled, since they are re-parented once it dies.
func stopTree(root int, exited <-chan struct{}) {
	below, _ := proctree.Descendants("/proc", root) // none found: signal the root alone
	pids := append(below, root)
	signalAll := func(sig syscall.Signal) {
		for _, p := range pids {
			syscall.Kill(p, sig)
		}
	}
	alive := func() bool {
		for _, p := range pids {
			if p != root && syscall.Kill(p, 0) == nil {
				return true
			}
		}
		select {
		case <-exited:
			return false
		default:
			return true
		}
	}
	if !alive() {
		return
	}
	signalAll(syscall.SIGTERM)
	deadline := time.Now().Add(commandTermGrace)
	for alive() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if alive() {
		signalAll(syscall.SIGKILL)
	}
	<-exited
}
