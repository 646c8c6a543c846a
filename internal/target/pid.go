package runner

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
	"github.com/perfsleuth/perfsleuth/internal/sysinfo"
)

// ObservePID observes a running process and its descendants for duration
// (0: until it exits or Ctrl-C). Observation never signals the process:
// Ctrl-C ends the observation, not the target.
func ObservePID(ctx context.Context, pid int, duration time.Duration, opts ObserveOptions) (*model.Run, error) {
	if pid <= 0 {
		return nil, fmt.Errorf("pid %d is not valid: give the pid of a running process (see ps)", pid)
	}
	if pid == os.Getpid() {
		return nil, errors.New("perfsleuth cannot observe itself: give another pid")
	}
	procDir := "/proc/" + strconv.Itoa(pid)
	comm, err := os.ReadFile(procDir + "/comm")
	if err != nil {
		return nil, fmt.Errorf("pid %d is not running: check the pid with ps", pid)
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
		return nil, fmt.Errorf("pid %d is not running: check the pid with ps", pid)
	}
	t := model.Target{Kind: "pid", PID: &model.PIDConfig{
		PID:         pid,
		Comm:        strings.TrimSpace(string(comm)),
		Cmdline:     strings.TrimSpace(strings.ReplaceAll(string(cmdline), "\x00", " ")),
		DurationSec: duration.Seconds(),
	}}
	run := newRun(t)
	run.Host, run.Warnings = sysinfo.Collect(cwd)

	gone := make(chan struct{})
	stopWatch := make(chan struct{})
	defer close(stopWatch)
	if pidfdErr == nil {
		go func() {
			defer unix.Close(pidfd)
			fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
			for {
				select {
				case <-stopWatch:
					return
				default:
				}
				n, err := unix.Poll(fds, 200)
				if err == nil && n > 0 {
					close(gone)
					return
				}
			}
		}()
	} else {
		go func() {
			for {
				select {
				case <-stopWatch:
					return
				case <-time.After(100 * time.Millisecond):
				}
				if unix.Kill(pid, 0) == unix.ESRCH {
					close(gone)
					return
				}
			}
		}()
	}

	obs, err := startObservers(context.Background(), pid, opts, run)
	if err != nil {
		return nil, err
	}
	defer obs.close()
	start := time.Now()
	var timeout <-chan time.Time
	if duration > 0 {
		timer := time.NewTimer(duration)
		defer timer.Stop()
		timeout = timer.C
	}
	exited := false
	select {
	case <-gone:
		exited = true
	case <-timeout:
	case <-ctx.Done():
		run.Interrupted = true
	}
	obs.finish(run)
	wall := time.Since(start)
	run.Result = &model.Result{DurationSec: wall.Seconds(), Command: &model.CommandResult{ExitCode: -1, Exited: exited, WallSec: wall.Seconds()}}
	if exited && duration > 0 {
		run.Warnings = append(run.Warnings, fmt.Sprintf("pid %d exited after %.1fs, before the %s asked for", pid, wall.Seconds(), duration))
	}
	run.EndedAt = time.Now()
	return run, nil
}
