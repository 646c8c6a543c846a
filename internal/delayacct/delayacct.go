// Package delayacct reads the kernel's per-task delay accounting (the
// taskstats interface, over generic netlink) and turns it on for a
// workload perfsleuth starts.
//
// The kernel counts, per task and in ns, the time it waited for a CPU
// while runnable (cpu_delay_total, the same counter as the second field of
// /proc/PID/task/TID/schedstat), for synchronous block IO (blkio: the
// sleeps in io_schedule, from the switch-out to the wake-up), for swap-in,
// for memory reclaim (freepages), for thrashing and for compaction. It is
// perfsleuth's second opinion on a thread's time, which the timeacct
// probe sets beside its own (see docs/figures.md).
//
// kernel.task_delayacct decides whether the kernel counts the IO and
// memory delays, and only for tasks forked while it is on: the kernel
// gives a task its delay record at fork, and only then
// (kernel/fork.c: delayacct_tsk_init). So it must be on before the
// workload starts: TurnOn, called by the targets that start a workload
// (a command, a built-in benchmark), before they fork it.
package delayacct

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/perfsleuth/perfsleuth/internal/runfile"
)

// SysctlPath is kernel.task_delayacct (Linux 5.14+).
const SysctlPath = "/proc/sys/kernel/task_delayacct"

// States of kernel.task_delayacct, as model.Observation.DelayAcct spells them.
const (
	StateOn          = "on"
	StateOff         = "off"
	StateUnavailable = "unavailable"
)

// State reads kernel.task_delayacct at path (SysctlPath, or a test's).
func State(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return StateUnavailable
	}
	if strings.TrimSpace(string(b)) == "0" {
		return StateOff
	}
	return StateOn
}

// active counts the Switches this process has turned on or joined and not
// yet restored (diagnose runs one target after another; a switch per run).
var active atomic.Int32

// TurnedOn says whether perfsleuth turned delay accounting on for the
// workload it observes now (and will turn it off again): the record says
// so.
func TurnedOn() bool { return active.Load() > 0 }

// A Switch is delay accounting turned on by perfsleuth, to be restored.
type Switch struct {
	path  string
	users string // the users file; "" when it could not be used
	me    user
	mu    sync.Mutex
	done  bool
}

// UsersPath is the file that perfsleuth processes running at once share
// (internal/runfile): it says that a perfsleuth turned
// kernel.task_delayacct on, and lists the processes that need it, so that
// the first to end does not turn it off under the other, and the last
// turns it off. The next perfsleuth drops the processes in it that no
// longer run.
const UsersPath = runfile.Dir + "/delayacct"

// TurnOn turns kernel.task_delayacct on when it is off and this process
// may write it (root), for the tasks forked from now on, or joins the
// perfsleuth processes that turned it on and still run. It returns nil
// when it changed nothing and joined nothing (already on by someone
// else's hand, not available, not allowed): Restore on nil does nothing.
func TurnOn() *Switch { return turnOn(SysctlPath, UsersPath, self()) }

func turnOn(path, usersPath string, me user) *Switch {
	var s *Switch
	err := withUsers(usersPath, func(u *users) {
		u.prune()
		switch State(path) {
		case StateOff:
			if os.WriteFile(path, []byte("1\n"), 0) != nil {
				return
			}
			u.owned = true
		case StateOn:
			if !u.owned {
				return // on by someone else's hand: never perfsleuth's to turn off
			}
		default:
			return
		}
		u.list = append(u.list, me)
		s = &Switch{path: path, users: usersPath, me: me}
	})
	switch {
	case err != nil && s != nil:
		// Turned on or joined, but the users file could not be written
		// back: this process turns it off at its end, as with none.
		s.users = ""
	case err != nil:
		// No users file (a read-only /run): this process alone.
		if State(path) != StateOff || os.WriteFile(path, []byte("1\n"), 0) != nil {
			return nil
		}
		s = &Switch{path: path, me: me}
	}
	if s != nil {
		active.Add(1)
	}
	return s
}

// Restore puts kernel.task_delayacct back to 0, once, whatever path the
// run took (the targets call it from Stop, which every exit path runs:
// the end of the run, an error, Ctrl-C). It leaves the setting alone while
// another switch of this process, or another perfsleuth process, still
// needs it, and when someone else turned it off meanwhile. A perfsleuth
// killed outright (SIGKILL, a second Ctrl-C) cannot restore it: then it
// stays on, which costs the kernel a clock read per block-IO sleep
// (docs/probes.md), until the next perfsleuth that turns it on ends.
func (s *Switch) Restore() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return nil
	}
	s.done = true
	active.Add(-1)
	var restore error
	turnOff := func() {
		if State(s.path) != StateOn {
			return
		}
		if err := os.WriteFile(s.path, []byte("0\n"), 0); err != nil {
			restore = errors.New("restore kernel.task_delayacct=0: " + err.Error())
		}
	}
	if s.users == "" {
		if active.Load() == 0 {
			turnOff()
		}
		return restore
	}
	err := withUsers(s.users, func(u *users) {
		if i := slices.Index(u.list, s.me); i >= 0 {
			u.list = slices.Delete(u.list, i, i+1)
		}
		u.prune()
		if len(u.list) == 0 && u.owned {
			turnOff()
			u.owned = false
		}
	})
	if err != nil {
		return fmt.Errorf("restore kernel.task_delayacct: %w", err)
	}
	return restore
}

// A user is a process that needs delay accounting on, by its pid and its
// start time, so that a pid used again by another process is not taken
// for it.
type user struct {
	pid   int
	start uint64
}

func self() user {
	pid := os.Getpid()
	return user{pid: pid, start: runfile.StartTime(pid)}
}

// users is the content of the users file.
type users struct {
	owned bool // a perfsleuth turned it on, and the last user turns it off
	list  []user
}

// prune drops the users that no longer run (killed before they could
// leave).
func (u *users) prune() {
	u.list = slices.DeleteFunc(u.list, func(x user) bool { return !runfile.Running(x.pid, x.start) })
}

const usersHeader = "perfsleuth turned kernel.task_delayacct on; the last of these processes (pid, start time) to end turns it off"

func (u *users) parse(b []byte) {
	lines := strings.Split(string(b), "\n")
	u.owned = len(lines) > 0 && lines[0] == usersHeader
	for _, l := range lines[1:] {
		var x user
		if _, err := fmt.Sscanf(l, "%d %d", &x.pid, &x.start); err == nil {
			u.list = append(u.list, x)
		}
	}
}

// format is the file's content, empty when no perfsleuth turned
// accounting on or none needs it.
func (u *users) format() []byte {
	if !u.owned && len(u.list) == 0 {
		return nil
	}
	var b strings.Builder
	if u.owned {
		b.WriteString(usersHeader)
	}
	b.WriteString("\n")
	for _, x := range u.list {
		fmt.Fprintf(&b, "%d %d\n", x.pid, x.start)
	}
	return []byte(b.String())
}

// withUsers runs fn on the users file at path (runfile.With).
func withUsers(path string, fn func(*users)) error {
	return runfile.With(path, func(b []byte) []byte {
		var u users
		u.parse(b)
		fn(&u)
		return u.format()
	})
}
