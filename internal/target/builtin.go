package target

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/perfsleuth/perfsleuth/internal/delayacct"
	"github.com/perfsleuth/perfsleuth/internal/model"
)

// How long a stopping benchmark child gets before it is killed: it removes
// its files on SIGINT, which takes well under a second even for gigabytes.
const childStopGrace = 10 * time.Second

// selfExe finds the perfsleuth executable that runs the benchmark child;
// tests point it at a test binary that answers as perfsleuth would.
var selfExe = os.Executable

// NewBuiltin returns a built-in benchmark (fileio, sqlite, null) as a
// target. It runs in a child perfsleuth process (child.go), so that what is
// observed is the workload alone, not perfsleuth's own threads: Start
// returns once the child has prepared its files, Wait runs its measured
// phase. Its settings are checked at Start.
func NewBuiltin(t model.Target, hooks Hooks) Target {
	return &builtin{t: t, hooks: hooks}
}

type builtin struct {
	t     model.Target
	hooks Hooks

	removeDir   func()
	cmd         *exec.Cmd
	exited      chan struct{}
	ctl         *os.File
	events      chan childEvent
	interrupted bool
	warnings    []string
	// delay is kernel.task_delayacct turned on for the benchmark, restored
	// by Stop (nil: not changed).
	delay *delayacct.Switch
}

func (b *builtin) Model() model.Target { return b.t }
func (b *builtin) Dir() string         { return DirOf(&b.t) }

func (b *builtin) Pids() []int {
	if b.cmd == nil || b.cmd.Process == nil {
		return nil
	}
	return []int{b.cmd.Process.Pid}
}

func (b *builtin) Start(ctx context.Context) error {
	_, removeDir, err := setup(&b.t)
	if err != nil {
		return err
	}
	// The child removes its own files; removeDir covers a child that was
	// killed before it could (it also keeps a --keep directory).
	b.removeDir = removeDir
	exe, err := selfExe()
	if err != nil {
		return fmt.Errorf("find perfsleuth's own executable: %w", err)
	}
	evR, evW, err := os.Pipe()
	if err != nil {
		return err
	}
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		evR.Close()
		evW.Close()
		return err
	}
	cmd := exec.Command(exe, ChildCommand)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.ExtraFiles = []*os.File{evW, ctlR}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	// Delay accounting on before the fork: the kernel counts only the
	// tasks forked while it is on (docs/figures.md, against the kernel).
	b.delay = delayacct.TurnOn()
	err = cmd.Start()
	evW.Close()
	ctlR.Close()
	if err != nil {
		evR.Close()
		ctlW.Close()
		return fmt.Errorf("start the benchmark process: %w", err)
	}
	b.cmd, b.ctl = cmd, ctlW
	b.exited = make(chan struct{})
	go func() { cmd.Wait(); close(b.exited) }()
	b.events = make(chan childEvent)
	go func() {
		defer close(b.events)
		sc := bufio.NewScanner(evR)
		sc.Buffer(make([]byte, 64<<10), 64<<20)
		for sc.Scan() {
			var e childEvent
			if json.Unmarshal(sc.Bytes(), &e) == nil {
				b.events <- e
			}
		}
		evR.Close()
	}()

	tb, _ := json.Marshal(b.t)
	if _, err := ctlW.Write(append(tb, '\n')); err != nil {
		return fmt.Errorf("send settings to the benchmark process: %w", err)
	}
	b.hooks.phase("prepare")
	for {
		e, err := b.next(ctx)
		if err != nil {
			return err
		}
		switch e.Event {
		case "prepared":
			if b.interrupted {
				return ErrInterrupted
			}
			return nil
		case "error":
			if b.interrupted {
				return ErrInterrupted
			}
			return errors.New(e.Message)
		}
	}
}

func (b *builtin) Wait(ctx context.Context) (Outcome, error) {
	b.hooks.phase("run")
	if _, err := b.ctl.Write([]byte("start\n")); err != nil {
		if Interrupted(ctx) {
			return Outcome{}, ErrInterrupted // the benchmark process died of the same Ctrl-C
		}
		return Outcome{}, fmt.Errorf("start the benchmark: %w", err)
	}
	for {
		e, err := b.next(ctx)
		if err != nil {
			return Outcome{}, err
		}
		switch e.Event {
		case "progress":
			if b.hooks.Progress != nil {
				b.hooks.Progress(e.Fraction)
			}
		case "error":
			if b.interrupted {
				return Outcome{}, ErrInterrupted // the child stopped before its measured phase began
			}
			return Outcome{}, errors.New(e.Message)
		case "done":
			b.hooks.phase("cleanup")
			return Outcome{Result: e.Result, Interrupted: e.Interrupted || b.interrupted, Warnings: b.warnings}, nil
		}
	}
}

// next returns the child's next event, keeping its warnings. When ctx ends
// the child gets SIGINT, once, and is read on: it reports what it
// measured, then exits.
func (b *builtin) next(ctx context.Context) (childEvent, error) {
	done := ctx.Done()
	if b.interrupted {
		done = nil
	}
	for {
		select {
		case <-done:
			b.interrupted = true
			b.cmd.Process.Signal(syscall.SIGINT)
			done = nil
		case e, ok := <-b.events:
			if !ok {
				<-b.exited
				if b.interrupted || Interrupted(ctx) {
					return e, ErrInterrupted
				}
				return e, fmt.Errorf("the benchmark process ended without a result (%v)", b.cmd.ProcessState)
			}
			if e.Event == "warning" {
				b.warnings = append(b.warnings, e.Message)
				continue
			}
			return e, nil
		}
	}
}

// Stop lets the child remove its files and exit (closing the control pipe
// tells it observation is over), stops it if it does not, and removes a
// directory it left.
func (b *builtin) Stop() {
	defer b.delay.Restore()
	if b.ctl != nil {
		b.ctl.Close()
		b.ctl = nil
	}
	if b.cmd != nil {
		StopChild(b.cmd.Process, b.exited, syscall.SIGINT, childStopGrace)
		for range b.events {
		}
		b.cmd = nil
	}
	if b.removeDir != nil {
		b.removeDir()
		b.removeDir = nil
	}
}

// StopChild makes sure a child process is gone: it sends sig, waits grace,
// then kills it. exited is closed when the child has been reaped.
func StopChild(p *os.Process, exited <-chan struct{}, sig syscall.Signal, grace time.Duration) {
	select {
	case <-exited:
		return
	default:
	}
	p.Signal(sig)
	select {
	case <-exited:
	case <-time.After(grace):
		p.Kill()
		<-exited
	}
}
