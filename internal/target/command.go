package target

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/perfsleuth/perfsleuth/internal/delayacct"
	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/proctree"
)

// How long a command gets to stop: after Ctrl-C (which reaches it from the
// terminal) the time a user would give it before Ctrl-\, then SIGTERM to
// its whole tree, then SIGKILL.
const (
	commandStopGrace = 3 * time.Second
	commandTermGrace = 2 * time.Second
)

// CommandOptions are how a command is run.
type CommandOptions struct {
	// Output, when set, takes the command's stdout and stderr (its stdin is
	// then /dev/null); otherwise it has the terminal's.
	Output io.Writer
	// Stdout, when set (and Output is not), takes the command's stdout
	// only: its stdin and stderr stay the terminal's.
	Stdout io.Writer
}

// NewCommand returns argv as a target: its whole process tree is observed
// until it exits.
func NewCommand(argv []string, opts CommandOptions) Target {
	return &command{argv: argv, opts: opts}
}

type command struct {
	argv []string
	opts CommandOptions
	dir  string

	cmd    *exec.Cmd
	gate   *os.File
	exited chan struct{}
	// status is the command's wait status, read when it exited (before it
	// is reaped, so that its /proc files stay readable).
	status syscall.WaitStatus
	start  time.Time
	// waited is set when Wait saw the command exit: what it left running
	// (a daemon it started) is then the user's, not perfsleuth's to stop.
	waited, reaped bool
	// delay is kernel.task_delayacct turned on for the command, restored
	// by Stop (nil: not changed).
	delay *delayacct.Switch
}

func (c *command) Model() model.Target {
	return model.Target{Kind: "command", Command: &model.CommandConfig{Argv: c.argv, Dir: c.dir}}
}

func (c *command) Dir() string { return c.dir }

func (c *command) Pids() []int {
	if c.cmd == nil || c.cmd.Process == nil {
		return nil
	}
	return []int{c.cmd.Process.Pid}
}

// Start starts the command as a gate that execs it once the observers are
// attached to its pid (Wait opens it): nothing the command does escapes
// observation, and loading the probes (up to a second) is not the
// command's time. The gate is /bin/sh, which is single-threaded: a Go gate
// would bring runtime threads that show up in the accounting before the
// exec.
func (c *command) Start(ctx context.Context) error {
	if len(c.argv) == 0 {
		return errors.New("no command given: put it after --, e.g. perfsleuth observe -- dd if=/dev/zero of=x bs=1M count=100")
	}
	path, err := exec.LookPath(c.argv[0])
	if err != nil {
		return fmt.Errorf("command %q not found: check the name, or give its path", c.argv[0])
	}
	c.dir, _ = os.Getwd()
	gateR, gateW, err := os.Pipe()
	if err != nil {
		return err
	}
	cmd := exec.Command("/bin/sh", append([]string{"-c", gateScript, path}, c.argv[1:]...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	switch {
	case c.opts.Output != nil:
		cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, c.opts.Output, c.opts.Output
	case c.opts.Stdout != nil:
		cmd.Stdout = c.opts.Stdout
	}
	if cmd.Stdout != os.Stdout {
		// A daemon the command left behind may hold the output pipe open:
		// stop copying from it a second after the command is gone.
		cmd.WaitDelay = time.Second
	}
	cmd.ExtraFiles = []*os.File{gateR}
	// If perfsleuth dies, so does the command it started.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	// Delay accounting on before the fork: the kernel counts only the
	// tasks forked while it is on (docs/figures.md, against the kernel).
	c.delay = delayacct.TurnOn()
	err = cmd.Start()
	gateR.Close()
	if err != nil {
		gateW.Close()
		return fmt.Errorf("start %s: %w", c.argv[0], err)
	}
	c.cmd, c.gate = cmd, gateW
	// exited closes when the command has exited but is not yet reaped: as a
	// zombie its /proc files still hold its final CPU and IO totals (its own
	// and its reaped children's), which the last sample must read.
	c.exited = make(chan struct{})
	go func() {
		var info unix.Siginfo
		for unix.Waitid(unix.P_PID, cmd.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil) == unix.EINTR {
		}
		c.status = waitStatus(&info)
		close(c.exited)
	}()
	return ctx.Err()
}

// waitStatus is the wait status a waitid(2) siginfo for a child's exit
// carries: si_code says how it ended (CLD_EXITED, CLD_KILLED, CLD_DUMPED)
// and si_status is the exit status or the signal. x/sys/unix declares only
// siginfo_t's head; on 64-bit Linux si_status follows si_pid and si_uid at
// offset 24 (the SIGCHLD member of its union, include/uapi/asm-generic/siginfo.h).
func waitStatus(info *unix.Siginfo) syscall.WaitStatus {
	status := *(*int32)(unsafe.Add(unsafe.Pointer(info), 24))
	// si_code values of SIGCHLD, include/uapi/asm-generic/siginfo.h.
	const (
		cldExited = 1
		cldKilled = 2
		cldDumped = 3
	)
	switch info.Code {
	case cldExited:
		return syscall.WaitStatus(status&0xff) << 8
	case cldKilled:
		return syscall.WaitStatus(status & 0x7f)
	case cldDumped:
		return syscall.WaitStatus(status&0x7f) | 0x80
	}
	return 0
}

// Wait opens the gate and waits for the command to exit. Ctrl-C reaches
// the command from the terminal; if it is still running commandStopGrace
// later (or the signal came to perfsleuth alone), its tree gets SIGTERM,
// then SIGKILL.
func (c *command) Wait(ctx context.Context) (Outcome, error) {
	c.start = time.Now()
	_, err := c.gate.Write([]byte("go\n"))
	c.gate.Close()
	c.gate = nil
	if err != nil {
		if Interrupted(ctx) {
			return Outcome{}, ErrInterrupted // the gate died of the same Ctrl-C
		}
		return Outcome{}, fmt.Errorf("start %s: %w", c.argv[0], err)
	}
	var out Outcome
	select {
	case <-c.exited:
	case <-ctx.Done():
		out.Interrupted = true
		c.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-c.exited:
		case <-time.After(commandStopGrace):
			stopTree(c.cmd.Process.Pid, c.exited)
		}
	}
	<-c.exited
	if s := c.status; !out.Interrupted && s.Signaled() && (s.Signal() == syscall.SIGINT || s.Signal() == syscall.SIGTERM) && Interrupted(ctx) {
		// A Ctrl-C to the process group ended the command before it
		// reached perfsleuth.
		out.Interrupted = true
	}
	c.waited = true
	wall := time.Since(c.start)
	res := &model.CommandResult{ExitCode: c.status.ExitStatus(), Exited: true, WallSec: wall.Seconds()}
	if c.status.Signaled() {
		res.ExitCode = -1
		res.Signal = unix.SignalName(c.status.Signal())
	}
	if res.ExitCode != 0 && !out.Interrupted {
		out.Warnings = append(out.Warnings, fmt.Sprintf("%s exited with status %d%s: its numbers may describe a failed run", c.argv[0], res.ExitCode, SignalSuffix(res.Signal)))
	}
	out.Result = &model.Result{DurationSec: wall.Seconds(), Command: res}
	return out, nil
}

// Stop reaps the command; one that Wait did not see exit (an error, or a
// command never let through the gate) is stopped first, with its tree.
func (c *command) Stop() {
	defer c.delay.Restore()
	if c.gate != nil {
		c.gate.Close() // a command never let through exits at the gate
		c.gate = nil
	}
	if c.cmd == nil || c.reaped {
		return
	}
	if !c.waited {
		stopTree(c.cmd.Process.Pid, c.exited)
	}
	c.cmd.Wait()
	c.reaped = true
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
