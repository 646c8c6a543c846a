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
	"os"
	"strings"
	"sync"
	"sync/atomic"
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

// active counts the Switches this process has turned on and not yet
// restored (diagnose runs one target after another; a switch per run).
var active atomic.Int32

// TurnedOn says whether perfsleuth turned delay accounting on for the
// workload it observes now (and will turn it off again): the record says
// so.
func TurnedOn() bool { return active.Load() > 0 }

// A Switch is delay accounting turned on by perfsleuth, to be restored.
type Switch struct {
	path string
	mu   sync.Mutex
	done bool
}

// TurnOn turns kernel.task_delayacct on when it is off and this process
// may write it (root), for the tasks forked from now on. It returns nil
// when it changed nothing (already on, not available, not allowed):
// Restore on nil does nothing.
func TurnOn() *Switch { return turnOn(SysctlPath) }

func turnOn(path string) *Switch {
	if State(path) != StateOff {
		return nil
	}
	if os.WriteFile(path, []byte("1\n"), 0) != nil {
		return nil
	}
	active.Add(1)
	return &Switch{path: path}
}

// Restore puts kernel.task_delayacct back to 0, once, whatever path the
// run took (the targets call it from Stop, which every exit path runs:
// the end of the run, an error, Ctrl-C). It leaves the setting alone while
// another switch of this process still needs it, and when someone else
// turned it off meanwhile. A perfsleuth killed outright (SIGKILL, a second
// Ctrl-C) cannot restore it: then it stays on, which costs the kernel a
// clock read per block-IO sleep (docs/probes.md).
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
	if active.Add(-1) > 0 || State(s.path) != StateOn {
		return nil
	}
	if err := os.WriteFile(s.path, []byte("0\n"), 0); err != nil {
		return errors.New("restore kernel.task_delayacct=0: " + err.Error())
	}
	return nil
}
