package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// ObserveOptions are the observer's settings, common to every target kind.
type ObserveOptions struct {
	// Interval between /proc samples.
	Interval time.Duration
	// NoEBPF turns the eBPF probes off: /proc observation only.
	NoEBPF bool
	// Syscalls counts and times every syscall per thread (costs more).
	Syscalls bool
	// Storage adds the per-file view and SQLite pages to the storage probe
	// (it hooks the read, write and sync calls: costs more).
	Storage bool
	// Stacks takes the kernel and user stack of every sleep (costs more).
	Stacks bool
	// BeforeRun, when set, is called with the workload's pid once it is
	// ready and before the measured phase (and its observation) starts: a
	// built-in benchmark has prepared its files, a command has not yet been
	// exec'd. diagnose applies its conditions there. An error ends the run.
	BeforeRun func(pid int) error
	// Output, when set, takes a command's stdout and stderr (and the
	// command's stdin is /dev/null); otherwise it has the terminal's.
	Output io.Writer
}

// How long a stopping child gets before it is signalled harder. A benchmark
// child removes its files on SIGINT, which takes well under a second even for
// gigabytes; a command gets the time a user would give it before Ctrl-\.
const (
	childStopGrace   = 10 * time.Second
	commandStopGrace = 3 * time.Second
	commandTermGrace = 2 * time.Second
)

// ObserveBuiltin runs a built-in benchmark in a child perfsleuth process and
// observes it from the end of its prepare step to the end of its measured phase.
func ObserveBuiltin(ctx context.Context, t model.Target, opts ObserveOptions, hooks Hooks) (*model.Run, error) {
	_, run, removeDir, err := setupBuiltin(t)
	if err != nil {
		return nil, err
	}
	// The probe's calibration (~0.5 s) overlaps the benchmark's prepare
	// step instead of following it.
	calibrateAhead(opts)
	// The child removes its own files; removeDir covers a child that was killed
	// before it could (it also keeps a --keep directory).
	defer removeDir()
	t = run.Target

	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find perfsleuth's own executable: %w", err)
	}
	evR, evW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		evR.Close()
		evW.Close()
		return nil, err
	}
	cmd := exec.Command(exe, childCommand)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.ExtraFiles = []*os.File{evW, ctlR}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		evR.Close()
		evW.Close()
		ctlR.Close()
		ctlW.Close()
		return nil, fmt.Errorf("start the benchmark process: %w", err)
	}
	evW.Close()
	ctlR.Close()
	defer ctlW.Close()
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	// Whatever happens below, the child is gone when we return.
	defer StopChild(cmd.Process, exited, syscall.SIGINT, childStopGrace)

	tb, _ := json.Marshal(t)
	if _, err := ctlW.Write(append(tb, '\n')); err != nil {
		return nil, fmt.Errorf("send settings to the benchmark process: %w", err)
	}

	events := make(chan childEvent)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(evR)
		sc.Buffer(make([]byte, 64<<10), 64<<20)
		for sc.Scan() {
			var e childEvent
			if json.Unmarshal(sc.Bytes(), &e) == nil {
				events <- e
			}
		}
		evR.Close()
	}()

	hooks.phase("prepare")
	var obs *observers
	defer func() { obs.close() }()
	interrupted := false
	for {
		select {
		case <-ctx.Done():
			if !interrupted {
				interrupted = true
				cmd.Process.Signal(syscall.SIGINT)
			}
			// Keep reading: the child reports what it measured, then exits.
			ctx = context.Background()
			continue
		case e, ok := <-events:
			if !ok {
				<-exited
				if interrupted {
					return nil, ErrInterrupted
				}
				return nil, fmt.Errorf("the benchmark process ended without a result (%v)", cmd.ProcessState)
			}
			switch e.Event {
			case "prepared":
				if opts.BeforeRun != nil {
					if err := opts.BeforeRun(cmd.Process.Pid); err != nil {
						return nil, err
					}
				}
				if obs, err = startObservers(ctx, cmd.Process.Pid, opts, run); err != nil {
					return nil, err
				}
				hooks.phase("run")
				if _, err := ctlW.Write([]byte("start\n")); err != nil {
					return nil, fmt.Errorf("start the benchmark: %w", err)
				}
			case "progress":
				if hooks.Progress != nil {
					hooks.Progress(e.Fraction)
				}
			case "warning":
				run.Warnings = append(run.Warnings, e.Message)
			case "error":
				if interrupted && obs == nil {
					return nil, ErrInterrupted
				}
				return nil, errors.New(e.Message)
			case "done":
				if obs != nil {
					obs.finish(run)
				}
				hooks.phase("cleanup")
				run.Result = e.Result
				run.Interrupted = e.Interrupted || interrupted
				run.EndedAt = time.Now()
				// Observation is over: let the child remove its files and
				// exit; the deferred stopChild waits for it.
				ctlW.Close()
				for range events {
				}
				return run, nil
			}
		}
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
