package target

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// NewPID returns a running process and its descendants as a target,
// observed for duration (0: until it exits or Ctrl-C). Observation never
// signals the process: Ctrl-C ends the observation, not the target.
func NewPID(pid int, duration time.Duration) Target {
	return &running{pid: pid, duration: duration}
}

type running struct {
	pid      int
	duration time.Duration
	t        model.Target
	dir      string
	gone     chan struct{}
	stop     chan struct{}
}

func (r *running) Model() model.Target { return r.t }
func (r *running) Dir() string         { return r.dir }
func (r *running) Pids() []int         { return []int{r.pid} }

// Start checks that the process runs and starts watching for its exit.
func (r *running) Start(ctx context.Context) error {
	pid := r.pid
	if pid <= 0 {
		return fmt.Errorf("pid %d is not valid: give the pid of a running process (see ps)", pid)
	}
	if pid == os.Getpid() {
		return errors.New("perfsleuth cannot observe itself: give another pid")
	}
	procDir := "/proc/" + strconv.Itoa(pid)
	comm, err := os.ReadFile(procDir + "/comm")
	if err != nil {
		return fmt.Errorf("pid %d is not running: check the pid with ps", pid)
	}
	cmdline, _ := os.ReadFile(procDir + "/cmdline")
	cwd, _ := os.Readlink(procDir + "/cwd")
	if cwd != "" && !filepath.IsAbs(cwd) {
		cwd = ""
	}
	// A pidfd tells us the moment the process exits, without polling, and
	// cannot be fooled by the pid being reused.
	pidfd, pidfdErr := unix.PidfdOpen(pid, 0)
	if pidfdErr != nil && errors.Is(pidfdErr, unix.ESRCH) {
		return fmt.Errorf("pid %d is not running: check the pid with ps", pid)
	}
	r.dir = cwd
	r.t = model.Target{Kind: "pid", PID: &model.PIDConfig{
		PID:         pid,
		Comm:        strings.TrimSpace(string(comm)),
		Cmdline:     strings.TrimSpace(strings.ReplaceAll(string(cmdline), "\x00", " ")),
		DurationSec: r.duration.Seconds(),
	}}
	r.gone, r.stop = make(chan struct{}), make(chan struct{})
	if pidfdErr == nil {
		go r.watchPidfd(pidfd, r.stop)
	} else {
		go r.watchKill(r.stop)
	}
	return ctx.Err()
}

// watchPidfd closes r.gone when the pidfd says the process exited, until
// stop closes. It is given stop rather than reading r.stop, which Stop
// clears: a watcher that read it after Stop saw a nil channel, which never
// closes, and went on polling with kill(2) ten times a second for good
// (the agent had one such goroutine more for each window it had made). The
// pidfd is in Go's poller, so waiting costs nothing: it woke perfsleuth
// five times a second before (a poll(2) with a 200 ms timeout, to see
// r.stop), and each wake-up of an otherwise idle process has Go's sysmon
// poll for about a millisecond (21% of the agent's CPU in a profile).
func (r *running) watchPidfd(pidfd int, stop <-chan struct{}) {
	if err := unix.SetNonblock(pidfd, true); err != nil {
		unix.Close(pidfd)
		r.watchKill(stop)
		return
	}
	f := os.NewFile(uintptr(pidfd), "pidfd")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		r.watchKill(stop)
		return
	}
	stopped := make(chan struct{})
	go func() {
		select {
		case <-stop:
			f.Close() // ends the Read below with an error
		case <-stopped:
		}
	}()
	defer close(stopped)
	defer f.Close()
	exited := false
	err = rc.Read(func(fd uintptr) bool {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, 0)
		exited = err == nil && n > 0
		return exited
	})
	if err == nil && exited {
		close(r.gone)
		return
	}
	select {
	case <-stop:
	default:
		r.watchKill(stop) // the poller could not wait on the pidfd
	}
}

func (r *running) watchKill(stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case <-time.After(100 * time.Millisecond):
		}
		if unix.Kill(r.pid, 0) == unix.ESRCH {
			close(r.gone)
			return
		}
	}
}

// Wait waits for the duration, the process's exit or ctx.
func (r *running) Wait(ctx context.Context) (Outcome, error) {
	start := time.Now()
	var timeout <-chan time.Time
	if r.duration > 0 {
		timer := time.NewTimer(r.duration)
		defer timer.Stop()
		timeout = timer.C
	}
	var out Outcome
	exited := false
	select {
	case <-r.gone:
		exited = true
	case <-timeout:
	case <-ctx.Done():
		out.Interrupted = true
	}
	wall := time.Since(start)
	out.Result = &model.Result{DurationSec: wall.Seconds(), Command: &model.CommandResult{ExitCode: -1, Exited: exited, WallSec: wall.Seconds()}}
	if exited && r.duration > 0 {
		out.Warnings = append(out.Warnings, fmt.Sprintf("pid %d exited after %.1fs, before the %s asked for", r.pid, wall.Seconds(), r.duration))
	}
	return out, nil
}

// Stop ends the watch; the process is left alone.
func (r *running) Stop() {
	if r.stop != nil {
		close(r.stop)
		r.stop = nil
	}
}
