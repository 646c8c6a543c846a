package analyze

import (
	"fmt"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// FromObservation builds the time accounting the /proc observer allows when
// no eBPF accounting was made. It does nothing when the run already has an
// accounting or has no observation. Each thread is given the whole window,
// split as
//
//	cpu            utime+stime
//	cpu-wait       schedstat's run-queue wait, where it could be read
//	storage-read   delay accounting's block-IO wait, when it was on, for a
//	               thread that read from disk and dirtied nothing
//	unknown        the rest: sleeps, locks, and block-IO waits that cannot
//	               be told apart
//
// taken in that order, each at most what the window has left, so that they
// add up to the window and none is negative (10 ms ticks can make cpu plus
// cpu-wait overshoot a little). Unknown says in words what is not known.
//
// Delay accounting keeps one block-IO wait per thread, whatever it waited
// for. A thread that read from disk and wrote nothing (no dirtied, dropped
// or direct-written bytes in /proc/PID/task/TID/io) waited for reads, so its
// wait is storage-read. A thread that wrote may have waited for writeback
// (storage-write) or in fsync (storage-sync), and the two cannot be told
// apart, nor its reads from either; splitting the wait by bytes would be
// made up, so it stays in unknown, and Unknown says how much of it there is.
func FromObservation(run *model.Run) {
	o := run.Observation
	if run.TimeAccounting != nil || o == nil || o.DurationSec <= 0 {
		return
	}
	w := o.DurationSec
	ta := &model.TimeAccounting{Source: "procfs", WindowSec: w}
	delayOn := o.DelayAcct == model.DelayAcctOn
	var noSched, unsplitThreads int
	var unsplitSec float64
	for _, th := range o.Totals.Threads {
		left := w
		take := func(s float64) float64 {
			s = min(max(s, 0), left)
			left -= s
			return s
		}
		secs := map[string]float64{model.CatCPU: take(th.UserSec + th.SystemSec)}
		if th.SchedStat {
			secs[model.CatCPUWait] = take(th.RunDelaySec)
		} else {
			noSched++
		}
		if delayOn && th.IODelaySec > 0 {
			if readsOnly(th.IO) {
				secs[model.CatStorageRead] = take(th.IODelaySec)
			} else {
				unsplitThreads++
				unsplitSec += min(th.IODelaySec, left)
			}
		}
		secs[model.CatUnknown] = left
		ta.Threads = append(ta.Threads, model.ThreadTime{
			PID: th.PID, TID: th.TID, Comm: th.Comm, Title: th.Title, WallSec: w, Exited: th.Exited,
			UserSec: th.UserSec, SystemSec: th.SystemSec, Seconds: secs,
		})
		if th.Exited {
			ta.ThreadsExited++
		}
	}
	ta.Unknown = procfsUnknown(o.DelayAcct, len(o.Totals.Threads), noSched, unsplitThreads, unsplitSec)
	run.TimeAccounting = ta
}

// readsOnly says whether a thread's block IO was reads alone, so that its
// block-IO wait was for reads: it asked for block reads, and dirtied,
// dropped or wrote directly nothing (a write can make it wait for writeback
// or a sync). A nil io (not read) says nothing.
func readsOnly(io *model.ThreadIO) bool {
	return io != nil && io.ReadBytes > 0 && io.WriteBytes == 0 && io.CancelledWriteBytes == 0
}

// procfsUnknown lists what the /proc accounting cannot attribute, in plain
// words, with what to do about it where something can be done.
func procfsUnknown(delayAcct string, threads, noSched, unsplitThreads int, unsplitSec float64) []string {
	u := []string{"why threads were blocked (locks, sleeps, page faults, and storage beyond what is said below): /proc does not say; run as root on a kernel with BTF for eBPF time accounting"}
	switch {
	case noSched == 0:
	case noSched == threads:
		u = append(u, "cpu-wait (time runnable, waiting for a CPU): the kernel's per-thread schedstat could not be read (see observation.missing), so it is in unknown")
	default:
		u = append(u, fmt.Sprintf("cpu-wait for %d of %d threads, whose /proc/PID/task/TID/schedstat could not be read: it is in their unknown", noSched, threads))
	}
	switch delayAcct {
	case model.DelayAcctOn:
		s := "storage-write and storage-sync, and storage-read in part: delay accounting keeps one block-IO wait per thread, without saying whether it was for a read, a write or a sync; it is storage-read for threads that read from disk and dirtied nothing, and unknown for the others"
		if unsplitThreads > 0 {
			s += fmt.Sprintf(" (%.2f s in %d %s)", unsplitSec, unsplitThreads, plural(unsplitThreads, "thread", "threads"))
		}
		u = append(u, s+"; storage waits the kernel does not count as block IO are unknown too")
	case model.DelayAcctOff:
		u = append(u, "storage waits unknown: kernel.task_delayacct=0; sudo sysctl -w kernel.task_delayacct=1")
	case model.DelayAcctUnavailable:
		u = append(u, "storage waits unknown: no kernel.task_delayacct sysctl (a kernel without CONFIG_TASK_DELAY_ACCT, or older than 5.14, where /proc cannot tell whether it is on)")
	case model.DelayAcctChanged:
		u = append(u, "storage waits unknown: kernel.task_delayacct was switched during the window, so its block-IO waits cover only part of it; switch it before the run")
	case model.DelayAcctUnreliable:
		u = append(u, "storage waits unknown: this kernel dequeues sleeping tasks late (Linux 6.12's DELAY_DEQUEUE) and then charges block-IO delays from a stale start, so delay accounting's figure is wrong in some runs (1,396 s of delay in a 0.28 s run was seen); run as root for eBPF time accounting")
	default:
		u = append(u, "storage waits unknown: the record does not say whether delay accounting was on")
	}
	return append(u, "when threads that started or exited in the window lived: each is given the whole window")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
