package timeacct

import (
	"fmt"
	"slices"

	"github.com/perfsleuth/perfsleuth/internal/delayacct"
	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/sysinfo"
)

// Blocked IO against delay accounting.
//
// The kernel's blkio delay is the time a task slept with in_iowait set,
// from the switch-out (__schedule) to the wake-up (try_to_wake_up): the
// sleeps in io_schedule, which is how a task waits for its block IO
// (submit_bio_wait, folio_wait_bit, blkdev direct IO, writeback waits,
// balance_dirty_pages). perfsleuth's storage-read, -write and -sync are a
// thread's sleeps in D state in read, write and sync calls and page
// faults, told apart by syscall and kernel stack, also ending at the
// wake-up. The two are the same sleeps where every storage wait is an
// io_schedule: O_DIRECT reads and writes, buffered reads that miss, and on
// a file system without a journal fsync (here: ext4 on virtio without a
// journal, 2,000 O_DIRECT 4 KiB reads slept 25.5 ms by delay accounting
// and 26 ms by schedstat's off-CPU time; 1,000 append + fsync 94.4 ms and
// 90.4 ms). They are not where a storage wait is not an io_schedule: a
// sync's wait for the journal's commit (jbd2_log_wait_commit is a plain
// wait_event), a D-state lock. So a thread is judged only when its storage
// waits and the kernel's block-IO sleeps are one-to-one: as many of each
// (within countSlack), over the same window.
//
// The kernel's figure is also not always right. On Linux 6.12 and later a
// task that blocks while its scheduling entity is delayed (DELAY_DEQUEUE)
// is dequeued later, from the scheduler running on its CPU, and
// __block_task then stamps the start of the block-IO delay on the task
// running there ("current"), not on the one dequeued: the dequeued task's
// delay ends against an old start, or against 0, the time since boot.
// Seen here on 6.18: O_DIRECT reads with a CPU hog beside them read 1,396
// s of block-IO delay in a 0.28 s run; pinned to one CPU, 198 ms where
// the thread slept 106 ms in all. A thread whose figure is impossible (more
// than it slept, by schedstat; or a single delay longer than the window)
// is shown and not judged.
const (
	// countSlackFrac, countSlackAbs: the waits of one thread counted by
	// perfsleuth and by the kernel may differ by the one sleep cut by
	// each end of the window, and by 5% (the bar) beyond.
	countSlackFrac = 0.05
	countSlackAbs  = 2
	// delayTurnedOn is KernelAgreement.DelayAcct when perfsleuth turned
	// kernel.task_delayacct on for the workload it started.
	delayTurnedOn = "turned_on"
)

// storageCats are the categories blkio delay may be compared with.
var storageCats = []string{model.CatStorageRead, model.CatStorageWrite, model.CatStorageSync}

func storageSec(t model.ThreadTime) float64 {
	s := 0.0
	for _, c := range storageCats {
		s += t.Seconds[c]
	}
	return s
}

// storageWaits counts each thread's storage waits (model.Wait), nil when
// the record has no waits.
func storageWaits(ta *model.TimeAccounting) map[int]int64 {
	if ta.Waits == nil {
		return nil
	}
	n := map[int]int64{}
	for _, w := range ta.Waits {
		if w.TID != 0 && slices.Contains(storageCats, w.Category) {
			n[w.TID] += w.Count
		}
	}
	return n
}

// Why a thread's blocked IO is not judged.
const (
	whyImpossible = iota
	whyUnrecorded
	whyNotOneToOne
	whyNoWaits
	numWhy
)

// delayChecks sets each thread's storage waits beside its block-IO delay,
// and its cpu-wait beside its cpu_delay_total. It returns the threads
// judged comparable (for PSI's io).
func delayChecks(ta *model.TimeAccounting, start, end *kernelSnapshot) ([]model.KernelCheck, []string, map[int]bool) {
	var notes []string
	switch start.delayState {
	case delayTurnedOn:
		notes = append(notes, "kernel.task_delayacct was 0: perfsleuth turned it on before it started the workload and off again after it (the kernel counts block-IO delays only for tasks forked while it is on)")
	case delayacct.StateOff:
		return nil, []string{"kernel.task_delayacct is 0: blocked IO is not compared with delay accounting. perfsleuth turns it on only for a workload it starts, since the kernel counts only the tasks forked while it is on: run 'sudo sysctl -w kernel.task_delayacct=1' before starting the processes"}, nil
	case delayacct.StateUnavailable:
		return nil, []string{"no kernel.task_delayacct (kernel without CONFIG_TASK_DELAY_ACCT, or older than 5.14): blocked IO is not compared with delay accounting"}, nil
	}
	if end.delayState != start.delayState && !(start.delayState == delayTurnedOn && end.delayState == delayacct.StateOn) {
		return nil, append(notes, fmt.Sprintf("kernel.task_delayacct changed during the window (%s, then %s): blocked IO is not compared with delay accounting", start.delayState, end.delayState)), nil
	}
	waits := storageWaits(ta)
	var pairs []pair
	var left [numWhy]struct {
		threads   int
		perf, krn float64
		pn, kn    int64
	}
	// cpu_delay_total, schedstat's run-queue wait again: said in a note.
	cpuWait := model.KernelCheck{}
	var memory float64
	comparable := map[int]bool{}
	for _, t := range ta.Threads {
		a, b, ok := readingsOf(t, start, end)
		if !ok || a.delay == nil || b.delay == nil || b.delay.BlkioDelayNs < a.delay.BlkioDelayNs || b.delay.CPUDelayNs < a.delay.CPUDelayNs {
			continue
		}
		cpuWait.Threads++
		cpuWait.PerfsleuthSec += t.Seconds[model.CatCPUWait]
		cpuWait.KernelSec += float64(b.delay.CPUDelayNs-a.delay.CPUDelayNs) / 1e9
		memory += float64(b.delay.MemoryDelayNs-a.delay.MemoryDelayNs) / 1e9

		p := pair{t: t, perf: storageSec(t), krn: float64(b.delay.BlkioDelayNs-a.delay.BlkioDelayNs) / 1e9}
		kn := int64(b.delay.BlkioCount - a.delay.BlkioCount)
		why := judgeable(t, a, b, p, kn, waits)
		if why < 0 {
			pairs = append(pairs, p)
			comparable[t.TID] = true
			continue
		}
		l := &left[why]
		l.threads++
		l.perf += p.perf
		l.krn += p.krn
		l.pn += waits[t.TID]
		l.kn += kn
	}
	if cpuWait.Threads == 0 {
		why := "no thread of the workload was alive at both ends of the window"
		if err := cmpErr(start.delayErr, end.delayErr); err != nil {
			why = err.Error()
		}
		return nil, append(notes, "delay accounting could not be read ("+why+"): blocked IO is not compared with it"), nil
	}
	// Judged when a thread has time enough to judge (minJudgedThreadSec):
	// 0 s against 0 s over idle threads tells nothing.
	var checks []model.KernelCheck
	if sum, worst := judgeThreads("storage waits", "delay accounting (blkio)", pairs); worst != nil {
		if delayedDequeue() {
			// Even a figure that passes every test above can be one of
			// the stale ones: a SQLite WAL run read 0.038 s of block-IO
			// delay against 0.022 s of storage waits here, one-to-one in
			// count and within what the thread slept. Shown, not judged.
			sum.Judged, worst.Judged = false, false
			notes = append(notes, "storage waits are shown beside delay accounting's block-IO delay, not judged: this kernel dequeues a sleeping task late (DELAY_DEQUEUE, Linux 6.12+: its sched_entity has sched_delayed), and then stamps the delay's start on the task running the scheduler, so the kernel's figure is wrong in some runs in a way no test of one record tells")
		}
		checks = append(checks, sum, *worst)
	}
	reasons := [numWhy]string{
		whyImpossible:  "the kernel's figure is impossible (more than the thread slept by schedstat, or one delay longer than the window): Linux 6.12+ can charge a block-IO delay from a stale start when a task blocks under delayed dequeue (kernel/sched: __block_task stamps the delay's start on the task running the scheduler)",
		whyUnrecorded:  "the kernel counted no block-IO sleep: the thread was started before kernel.task_delayacct was on (the kernel gives a task its delay record at fork), or its waits were not in io_schedule",
		whyNotOneToOne: "the storage waits and the kernel's block-IO sleeps are not one-to-one: a sync's wait for the journal's commit or a lock taken in D state is storage time here and no block-IO delay there",
		whyNoWaits:     "the record has no waits to count, so they cannot be matched one-to-one",
	}
	for why, l := range left {
		if l.threads == 0 || max(l.perf, l.krn) < agreeFloor {
			continue // nothing worth a line: threads with a wait or two
		}
		notes = append(notes, fmt.Sprintf("storage waits of %d %s not judged against delay accounting (%s here, %s of block-IO delay; %d waits here, %d there): %s",
			l.threads, plural(l.threads, "thread", "threads"), secs(l.perf), secs(l.krn), l.pn, l.kn, reasons[why]))
	}
	notes = append(notes, fmt.Sprintf("cpu-wait by delay accounting (cpu_delay_total) %s over %d %s, against %s here: the same kernel counter as schedstat's run-queue wait (sched_info.run_delay), read through taskstats, so it is judged once, with schedstat",
		secs(cpuWait.KernelSec), cpuWait.Threads, plural(cpuWait.Threads, "thread", "threads"), secs(cpuWait.PerfsleuthSec)))
	if memory >= agreeFloor {
		notes = append(notes, fmt.Sprintf("the kernel also counted %s of memory delays (swap-in, reclaim, thrashing, compaction) for these threads: perfsleuth counts that time where it happens (a major fault's wait is storage-read)", secs(memory)))
	}
	return checks, notes, comparable
}

// judgeable says why thread t's storage waits cannot be judged against
// its block-IO delay (kn sleeps by the kernel), or -1 when they can.
func judgeable(t model.ThreadTime, a, b kernelReading, p pair, kn int64, waits map[int]int64) int {
	// The kernel's figure is impossible when it exceeds the time the
	// thread slept (its wall less its run and run-queue time, by
	// schedstat), or when a single delay longer than the thread's window
	// began in it.
	slept := t.WallSec - t.Seconds[model.CatCPU] - t.Seconds[model.CatCPUWait]
	if a.sched && b.sched && b.runNs >= a.runNs && b.waitNs >= a.waitNs {
		slept = t.WallSec - float64(b.runNs-a.runNs+b.waitNs-a.waitNs)/1e9
	}
	if p.krn > slept+agreeFloor || b.delay.HasMax && b.delay.BlkioMaxNs > a.delay.BlkioMaxNs && float64(b.delay.BlkioMaxNs)/1e9 > t.WallSec+agreeFloor {
		return whyImpossible
	}
	if kn == 0 && p.perf >= minJudgedThreadSec {
		return whyUnrecorded
	}
	if waits == nil {
		// Too little time to matter (see minJudgedThreadSec) is summed;
		// more cannot be matched.
		if max(p.perf, p.krn) < minJudgedThreadSec {
			return -1
		}
		return whyNoWaits
	}
	pn := waits[t.TID]
	if d := abs64(pn - kn); float64(d) > countSlackFrac*float64(max(pn, kn))+countSlackAbs {
		return whyNotOneToOne
	}
	return -1
}

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// delayedDequeue is sysinfo.DelayedDequeue, a variable for the tests.
var delayedDequeue = sysinfo.DelayedDequeue
