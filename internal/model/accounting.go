package model

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/perfsleuth/perfsleuth/internal/proctree"
)

// Category ids of the time accounting, in display order. A thread's seconds
// in these categories add up to its wall-clock time in the window.
const (
	CatCPU          = "cpu"
	CatCPUWait      = "cpu-wait"
	CatStorageRead  = "storage-read"
	CatStorageWrite = "storage-write"
	CatStorageSync  = "storage-sync"
	CatLock         = "lock"
	CatSleep        = "sleep"
	CatOther        = "other"
	// CatUnknown holds the time a source cannot attribute (the /proc
	// fallback cannot tell most off-CPU causes apart).
	CatUnknown = "unknown"
)

// Categories lists the category ids in display order.
var Categories = []string{CatCPU, CatCPUWait, CatStorageRead, CatStorageWrite, CatStorageSync, CatLock, CatSleep, CatOther, CatUnknown}

// TimeAccounting says where each thread's wall-clock time went.
type TimeAccounting struct {
	// Source is "ebpf" (scheduler tracepoints) or "procfs" (the fallback).
	Source    string  `json:"source"`
	WindowSec float64 `json:"window_sec"`
	// Unknown lists, in plain words, what this source cannot attribute.
	Unknown []string `json:"unknown,omitempty"`
	// Total sums the busy threads' seconds per category (idle threads,
	// which waited for work the whole window, are left out).
	Total map[string]float64 `json:"total"`
	// UserSec and SystemSec split the busy threads' cpu time.
	UserSec   float64      `json:"user_sec"`
	SystemSec float64      `json:"system_sec"`
	Threads   []ThreadTime `json:"threads"`
	// Thread churn over the window.
	ThreadsCreated   int64 `json:"threads_created"`
	ThreadsExited    int64 `json:"threads_exited"`
	ProcessesCreated int64 `json:"processes_created"`
	// PeakThreads is the most threads of the workload alive at once.
	PeakThreads int `json:"peak_threads"`
	// Syncs has one entry per kind of sync call made in the window: fsync,
	// fdatasync, msync, write (O_SYNC and O_DSYNC writes), other
	// (sync_file_range, syncfs, sync).
	Syncs []SyncCalls `json:"syncs,omitempty"`
	// SyncNote says why sync calls were not timed, when they were not.
	SyncNote string `json:"sync_note,omitempty"`
	// SyncedFiles lists the files synced in the window, most time first.
	SyncedFiles []SyncedFile `json:"synced_files,omitempty"`
	// Syscalls, with --syscalls, counts every syscall per thread; nil
	// when it was not asked for.
	Syscalls []SyscallStat `json:"syscalls,omitempty"`
	// OffCPU, with --stacks, sums the time slept per process, category
	// and stack, most time first; nil when it was not asked for.
	OffCPU []OffCPUStack `json:"offcpu_stacks,omitempty"`
	// OffCPUIdleSec is the sleep time of idle threads, whose stacks are
	// left out of OffCPU.
	OffCPUIdleSec float64 `json:"offcpu_idle_sec,omitempty"`
	// OnCPU, with --stacks, counts the samples of the workload's threads
	// taken on a CPU (software cpu-clock at OnCPUHz on every CPU) per
	// thread and stack, most samples first; nil when not asked for.
	OnCPU   []OnCPUStack `json:"oncpu_stacks,omitempty"`
	OnCPUHz int          `json:"oncpu_hz,omitempty"`
	// OnCPUSource is where the samples come from: OnCPUClock (--stacks:
	// a cpu-clock event at OnCPUHz; samples / Hz is cpu time), or
	// OnCPUTick (by default: one in some of the scheduler ticks that fell
	// on the workload's threads, OnCPUHz per busy CPU; their shares split
	// the threads' exact cpu time, as the activity samples do, and a
	// thread that runs in step with the tick is sampled less: not a
	// measure of cpu time by themselves). "" in older records: cpu-clock.
	OnCPUSource string `json:"oncpu_source,omitempty"`
	// OnCPUSamples is every sample of the workload's threads, OnCPU's kept
	// stacks or not (the record keeps the 200 largest stacks); OnCPUDropped
	// the samples the sampler could not count (its map was full).
	OnCPUSamples int64 `json:"oncpu_samples,omitempty"`
	OnCPUDropped int64 `json:"oncpu_dropped,omitempty"`
	// OnCPUNote says why there are no on-CPU samples, when there are none.
	OnCPUNote string `json:"oncpu_note,omitempty"`
	// ProbeCPUSec is the CPU time the eBPF programs took, summed over all
	// CPUs and all the (machine-wide) events they ran on, estimated as each
	// program's runs times its cost calibrated on this host (Programs),
	// the storage probe's included (its programs are named storage/...,
	// their tracked runs timed in the kernel: StorageIO.ProbeCPUSec);
	// ProbeRuns is how often they ran. ProbeNote says what the estimate
	// leaves out, or why there is none. The on-CPU sampler's (--stacks)
	// is included as profile/do_sample, timed by the program itself.
	ProbeCPUSec float64       `json:"probe_cpu_sec"`
	ProbeRuns   int64         `json:"probe_runs"`
	ProbeNote   string        `json:"probe_note,omitempty"`
	Programs    []ProgramCost `json:"probe_programs,omitempty"`
	// Dropped counts events the probe could not record (full maps); the
	// accounting is exact only when it is 0.
	Dropped int64 `json:"dropped"`
	// DroppedBy splits Dropped by what was lost, when it is not 0:
	// DroppedThreads (events of threads or processes the full maps could
	// not hold, sync calls not timed), DroppedWaits (waits the wait-for
	// graph's map could not hold: their time is still in the categories),
	// DroppedSyscalls (--syscalls) and DroppedSyncedFiles (sync calls
	// whose file could not be listed).
	DroppedBy map[string]int64 `json:"dropped_by,omitempty"`
	// FoldedSyncs counts the sync calls counted in a directory's entry of
	// SyncedFiles (Folded) rather than their file's: past 1,024 files
	// the list counts by directory, in the kernel.
	FoldedSyncs int64 `json:"folded_syncs,omitempty"`
	// MissedRuns counts, per program, the runs the kernel skipped because
	// the program was already running on that CPU (recursion misses): a
	// missed sched_switch leaves a thread in its last state until its next
	// event, so the accounting is exact only when it is empty.
	MissedRuns map[string]int64 `json:"missed_runs,omitempty"`
	// Unseen counts the context switches the kernel made with no
	// sched_switch event, and those of the workload's threads, which the
	// probe timed from the kernel's own record of the thread's arrival or
	// queueing instead; nil when none.
	Unseen *UnseenSwitches `json:"unseen_switches,omitempty"`
	// QueuedWakeups are the wake-ups whose sleep ended where the kernel
	// queued the thread on a run queue (sched_info.last_queued, read at
	// its switch-in), as schedstat's run-queue wait starts there;
	// QueuedWakeupsSec is their run-queue wait, cpu-wait.
	QueuedWakeups    int64   `json:"wakeups_queued,omitempty"`
	QueuedWakeupsSec float64 `json:"wakeups_queued_sec,omitempty"`
	// QueuedWakeupsNote says why no wake-up is timed so (a kernel
	// without CONFIG_SCHED_INFO), or timed less exactly (without the
	// enqueue's tracepoint the cut lag is not added), when it is not.
	QueuedWakeupsNote string `json:"wakeups_queued_note,omitempty"`
	// Kernel holds the accounting against the kernel's own figures for
	// the same threads and window (schedstat, delay accounting); nil when
	// they could not be read.
	Kernel *KernelAgreement `json:"kernel,omitempty"`
	// Waits split each thread's time off the CPU (waits and run-queue
	// waits) by what it was doing and what ended it: the wait-for graph.
	// A thread's waits add up to its time less cpu. Nil when the source
	// does not see wake-ups (procfs, records made before it); WaitNote
	// says what it cannot tell apart on this kernel.
	Waits    []Wait `json:"waits,omitempty"`
	WaitNote string `json:"wait_note,omitempty"`
	// CriticalPath is the busy threads' time with every wait for another
	// thread of the workload charged to what that thread was doing
	// meanwhile (analyze), per category; nil without Waits.
	CriticalPath map[string]float64 `json:"critical_path,omitempty"`
	// ActivityHz is the rate of the on-CPU samples that split each
	// thread's cpu time by activity (ThreadTime.CPUByActivity: a software
	// cpu-clock event on every CPU); 0 when none were taken, and
	// ActivityNote then says why.
	ActivityHz   int    `json:"activity_hz,omitempty"`
	ActivityNote string `json:"activity_note,omitempty"`
	// StealMeasured says the threads' UnchargedSec and StealSec were
	// measured (their run queues' clocks read at every switch-in); else
	// StealNote says why not, and they are 0 without meaning none.
	StealMeasured bool   `json:"steal_measured,omitempty"`
	StealNote     string `json:"steal_note,omitempty"`
	// Matrix is the busy threads' time by activity (what they were doing:
	// Wait's activities, or ActivityUnsampled) and state (how: the State*
	// ids), each cell with its part of the critical path (analyze). Its
	// cells add up to the busy threads' time (Total). Nil without Waits.
	Matrix []ActivityTime `json:"matrix,omitempty"`
	// Locks are the lock waits by what they waited on, most time first;
	// nil when the source does not see them (procfs, older records).
	// LocksNote says what they leave out (waits whose stacks the map could
	// not keep, waits not counted because the map was full).
	Locks     []LockWait `json:"locks,omitempty"`
	LocksNote string     `json:"locks_note,omitempty"`
}

// LockWait is the time a process's threads waited on one lock: a kernel
// lock taken on the file their read, write or sync call was on (Path: on
// a file system's write path, the file's inode lock), a futex (Addr), or
// another kernel lock. Lock names it. Kernel and User are the waiters'
// frames and Holder the frames of the thread that let go (its kernel
// stack for a kernel lock, its user stack for a futex), innermost first,
// from the waits whose stacks were walked: Walked of Count (at most one
// walk every 50 ms per thread).
type LockWait struct {
	PID      int      `json:"pid"`
	Lock     string   `json:"lock"`
	Kind     string   `json:"kind"` // LockFile, LockFutex, LockKernel
	Path     string   `json:"path,omitempty"`
	Addr     string   `json:"addr,omitempty"`
	Activity string   `json:"activity"`
	Count    int64    `json:"count"`
	Walked   int64    `json:"walked"`
	Seconds  float64  `json:"seconds"`
	Kernel   []string `json:"kernel,omitempty"`
	User     []string `json:"user,omitempty"`
	Holder   []string `json:"holder,omitempty"`
	// Threads are the waiters, most time first: their Seconds add up to
	// the lock's (analysis leaves the idle threads' waits out).
	Threads []LockThread `json:"threads,omitempty"`
}

// LockThread is one thread's waits on a lock.
type LockThread struct {
	TID     int     `json:"tid"`
	Count   int64   `json:"count"`
	Seconds float64 `json:"seconds"`
}

// What TimeAccounting.DroppedBy counts.
const (
	DroppedThreads     = "threads"
	DroppedWaits       = "waits"
	DroppedSyscalls    = "syscalls"
	DroppedSyncedFiles = "synced_files"
)

// OnCPU sources.
const (
	OnCPUClock = "cpu-clock"
	OnCPUTick  = "tick"
)

// LockWait kinds.
const (
	LockFile   = "file"
	LockFutex  = "futex"
	LockKernel = "kernel"
)

// ActivityTime is one cell of the time by activity and state: Seconds of
// the busy threads' time, CriticalSec of the critical path's.
type ActivityTime struct {
	Activity    string  `json:"activity"`
	State       string  `json:"state"`
	Seconds     float64 `json:"seconds"`
	CriticalSec float64 `json:"critical_sec,omitempty"`
}

// States of the time by activity and state: how a thread spent the time.
// cpu, cpu-wait, the storage ones and lock are the accounting's
// categories; a sleep or other wait is told by what ended it: a thread of
// the workload (peer), a timer, or anything else or nothing (other).
const (
	StateCPU          = CatCPU
	StateCPUWait      = CatCPUWait
	StateStorageRead  = CatStorageRead
	StateStorageWrite = CatStorageWrite
	StateStorageSync  = CatStorageSync
	StateLock         = CatLock
	StatePeer         = "peer"
	StateTimer        = "timer"
	StateOther        = "other"
)

// States lists the state ids in display order.
var States = []string{StateCPU, StateCPUWait, StateStorageRead, StateStorageWrite, StateStorageSync, StateLock, StatePeer, StateTimer, StateOther}

// Waker kinds (Wait.Waker): what ended a wait.
const (
	WakerNone    = "none"    // not ended in the window, or a run-queue wait
	WakerPeer    = "peer"    // a thread of the workload
	WakerKthread = "kthread" // a kernel thread (jbd2, kworker, ksoftirqd...)
	WakerOutside = "outside" // a user thread outside the workload
	WakerDevice  = "device"  // a block request's completion
	WakerTimer   = "timer"   // a timer expiring
	WakerIRQ     = "irq"     // another hardware interrupt
	WakerSoftirq = "softirq" // another softirq (network, tasklets, RCU)
)

// Wait is a share of one thread's time off the CPU: what it was doing
// (Activity: the syscall class it was in, "user" or "fault"), the
// category of the time (a blocked category, or cpu-wait) and what ended
// it (Waker, with WakerTID, WakerPID and WakerComm for a thread, Op for a
// device completion, IRQ or Softirq).
type Wait struct {
	PID       int    `json:"pid"`
	TID       int    `json:"tid"`
	Activity  string `json:"activity"`
	Category  string `json:"category"`
	Waker     string `json:"waker"`
	WakerTID  int    `json:"waker_tid,omitempty"`
	WakerPID  int    `json:"waker_pid,omitempty"`
	WakerComm string `json:"waker_comm,omitempty"`
	// WakerPPID is the parent of an outside waker's process, as it was
	// when it woke the thread: a server's backends share their server's
	// (PostgreSQL's postmaster), which -p observes with them all.
	WakerPPID int     `json:"waker_ppid,omitempty"`
	Op        string  `json:"op,omitempty"`
	IRQ       int     `json:"irq,omitempty"`
	Softirq   string  `json:"softirq,omitempty"`
	Count     int64   `json:"count"`
	Seconds   float64 `json:"seconds"`
}

// KernelAgreement is perfsleuth's accounting against the kernel's own.
type KernelAgreement struct {
	Checks []KernelCheck `json:"checks"`
	// Notes say what could not be compared, and why.
	Notes []string `json:"notes,omitempty"`
	// DelayAcct is kernel.task_delayacct over the window: "on", "off",
	// "unavailable", or "turned_on" when perfsleuth turned it on for the
	// workload it started (and off again after). Empty in older records.
	DelayAcct string `json:"delay_acct,omitempty"`
	// Cgroup is the workload's own cgroup (v2 path), whose pressure (PSI)
	// is compared; empty when it has none of its own.
	Cgroup string `json:"cgroup,omitempty"`
	// ClockSkewSec is how far apart the CPUs' scheduler clocks were
	// against ktime, measured at enqueues made on each run queue's own
	// CPU (ClockCPUs of them): the kernel stamps a remote wake-up's
	// queueing with the waker's CPU's clock, so schedstat's wait of each
	// is off by up to this. Shown, not judged. Absent: under 1 ns, or not
	// measured (fewer than two CPUs, older records).
	ClockSkewSec float64 `json:"clock_skew_sec,omitempty"`
	ClockCPUs    int     `json:"clock_cpus,omitempty"`
}

// KernelCheck is one figure of the accounting beside the kernel's: What
// ("cpu + cpu-wait", "cpu", "cpu-wait", "storage waits") over Threads
// threads, from Source ("schedstat", "delay accounting (blkio)", "PSI io
// some"). Only Judged figures must agree (within 5%); the others are
// shown for what they tell.
//
// A per-thread check (TID set) judges each of its Threads threads on its
// own and holds the thread furthest apart: PerfsleuthSec and KernelSec
// are that thread's figures, and What names it, so that a reader of the
// check alone (analyze's perfsleuth.inconsistent, older versions too)
// names the thread.
type KernelCheck struct {
	What          string  `json:"what"`
	Source        string  `json:"source"`
	Threads       int     `json:"threads"`
	PerfsleuthSec float64 `json:"perfsleuth_sec"`
	KernelSec     float64 `json:"kernel_sec"`
	Judged        bool    `json:"judged"`
	TID           int     `json:"tid,omitempty"`
	PID           int     `json:"pid,omitempty"`
	Comm          string  `json:"comm,omitempty"`
	// Runs is how many times the threads compared were put on a CPU in
	// the window, by the kernel's count (schedstat's third field): each
	// such arrival is an edge the kernel's clock and perfsleuth's cut
	// apart, and the tolerance allows for it (KernelSliceSec).
	Runs int64 `json:"runs,omitempty"`
	// UnchargedSec is the part of PerfsleuthSec that the kernel did not
	// charge to the threads (ThreadTime.UnchargedSec: steal, interrupt
	// time): the kernel's figure leaves it out, so PerfsleuthSec less it
	// (Charged) is what is set beside KernelSec.
	UnchargedSec float64 `json:"uncharged_sec,omitempty"`
	// CutLagSec is the part of PerfsleuthSec that came after the kernel
	// had ended the threads' runs that blocked them (ThreadTime.CutLagSec,
	// measured at each switch-out): Charged leaves it out too.
	CutLagSec float64 `json:"cut_lag_sec,omitempty"`
	// OpenEdgeSec and CloseEdgeSec are how much the kernel's counters of
	// the threads moved while the window opened and while it closed: each
	// is read just before and just after the probe's edge, so the kernel's
	// figure for the window itself lies between KernelSec less OpenEdgeSec
	// and KernelSec plus CloseEdgeSec (KernelRange). A thread busy at an
	// edge (perfsleuth's own, when the workload is its built-in benchmark:
	// it makes the reads) moves them; a sleeping one does not. 0 in older
	// records.
	OpenEdgeSec  float64 `json:"open_edge_sec,omitempty"`
	CloseEdgeSec float64 `json:"close_edge_sec,omitempty"`
	// KernelStaleSec is the part of KernelSec that is the threads' sleep
	// counted as run-queue wait from a stale record of their queueing
	// (ThreadTime.KernelStaleSec): taken off KernelSec in KernelRange.
	KernelStaleSec float64 `json:"kernel_stale_sec,omitempty"`
}

// Charged is perfsleuth's figure as the kernel counts it: less the time the
// kernel did not charge to the threads.
func (c KernelCheck) Charged() float64 {
	return c.PerfsleuthSec - c.UnchargedSec - c.CutLagSec
}

// KernelRange is where the kernel's figure for the window lies, from its
// readings on both sides of each edge (OpenEdgeSec, CloseEdgeSec), less
// the sleep it counted as run-queue wait (KernelStaleSec).
func (c KernelCheck) KernelRange() (lo, hi float64) {
	k := c.KernelSec - c.KernelStaleSec
	return k - c.OpenEdgeSec, k + c.CloseEdgeSec
}

// Apart is how far perfsleuth's charged figure lies outside KernelRange:
// 0 within it.
func (c KernelCheck) Apart() float64 {
	lo, hi := c.KernelRange()
	switch v := c.Charged(); {
	case v < lo:
		return lo - v
	case v > hi:
		return v - hi
	}
	return 0
}

// KernelAgreeFrac and KernelAgreeFloorSec are the bar a judged check is
// held to (issue 15): its two figures may be 5% of the larger apart, and
// always 10 ms (a few scheduler ticks of the kernel's figures).
const (
	KernelAgreeFrac     = 0.05
	KernelAgreeFloorSec = 0.010
)

// Disagreement is how far apart a judged check's two figures are (Apart),
// that relative to the larger of them (rel), and whether it is a
// disagreement: more than KernelAgreeFloorSec, more than KernelAgreeFrac
// of the larger figure and more than KernelSliceSec per run on a CPU.
// analyze's perfsleuth.inconsistent judges by it, and the per-thread
// check picks the thread furthest apart by it.
func (c KernelCheck) Disagreement() (d, rel float64, fails bool) {
	d = c.Apart()
	m := max(c.Charged(), c.KernelSec-c.KernelStaleSec)
	if m <= 0 {
		return d, 0, false
	}
	return d, d / m, d > KernelAgreeFloorSec && d > KernelAgreeFrac*m && d > KernelSliceSec*float64(c.Runs)
}

// KernelSliceSec is how far apart the kernel's schedstat and perfsleuth
// may cut each of a thread's runs on a CPU, beyond the 5% and beyond the
// lag measured at switch-outs that block (KernelCheck.CutLagSec): the kernel ends
// a run at the start of __schedule (its run-queue clock's update), before
// it picks the next task; perfsleuth at the sched_switch tracepoint, after
// the pick and in its own program (~370 ns of it). A run followed by an
// idle CPU gives that time to this thread in perfsleuth's account and to
// the idle task in the kernel's; after a wake-up that preempted, the kernel
// skips its clock's update (rq_clock_skip_update) and puts the time before
// the switch on another side. Measured here over whole runs (an exited
// thread compared at its exit): +1.6 µs a run on a quiet 4 KiB append +
// fdatasync loop (12,200 runs: 5.3% of its cpu + cpu-wait), +0.5 µs on a
// nanosleep loop, +0.45 µs on a TCP ping-pong, and with two CPU burners
// beside them -3.9 to -4.3 µs on the ping-pong and up to -4.3 µs on
// O_DIRECT reads.
const KernelSliceSec = 5e-6

// ThreadTime is one thread's accounting.
type ThreadTime struct {
	PID  int    `json:"pid"`
	TID  int    `json:"tid"`
	Comm string `json:"comm"`
	// Title is the process's title, as ThreadUse's ("" when none).
	Title   string             `json:"title,omitempty"`
	WallSec float64            `json:"wall_sec"`
	Seconds map[string]float64 `json:"seconds"`
	// UserSec and SystemSec split the thread's cpu seconds.
	UserSec   float64 `json:"user_sec"`
	SystemSec float64 `json:"system_sec"`
	// Idle marks a thread that waited for work the whole window (a pool's
	// parked worker): it is listed, not counted in Total or the verdict.
	Idle   bool `json:"idle"`
	Exited bool `json:"exited"`
	// Folded > 0 marks the exited threads of one process summed into one
	// entry (TID 0) as they exited, so that thread churn cannot fill the
	// probe's map: Folded threads, their seconds and wall time added up.
	Folded int `json:"folded,omitempty"`
	// Role is "worker" or "runtime" for a built-in benchmark, whose worker
	// threads are known (Result.WorkerTIDs): its other threads are the Go
	// runtime's, parked between bits of housekeeping, and are left out like
	// idle ones. Empty for other workloads.
	Role string `json:"role,omitempty"`
	// Poller marks a busy thread that slept on timers nearly all the time
	// while others worked (fio's main thread polling its workers): listed,
	// left out of the critical path and the verdict.
	Poller bool `json:"poller,omitempty"`
	// CriticalSec is the time of the critical path this thread carried:
	// its own, and the waits of other threads for it (analyze).
	CriticalSec float64 `json:"critical_sec,omitempty"`
	// CPUByActivity splits the thread's cpu seconds by what it was doing
	// (Wait's activities: "user", "fault", "read", "write", "sync", "aio",
	// ...) in proportion to the on-CPU samples that fell on it
	// (ActivitySamples, at TimeAccounting.ActivityHz); a thread no sample
	// fell on has its cpu time under ActivityUnsampled. It adds up to
	// Seconds["cpu"]. Nil when the source did not sample (procfs, older
	// records).
	CPUByActivity   map[string]float64 `json:"cpu_by_activity,omitempty"`
	ActivitySamples int64              `json:"activity_samples,omitempty"`
	// UnchargedSec is the part of the thread's cpu seconds that its CPU's
	// run queue did not charge to it: time the hypervisor ran something
	// else on the virtual CPU (steal) and, on kernels built with
	// IRQ_TIME_ACCOUNTING, interrupts. perfsleuth counts a thread on a CPU
	// from its switch-in to its switch-out; the kernel's run time
	// (schedstat, utime + stime) leaves this out. StealSec is the steal in
	// it. Both are in Seconds["cpu"], not beside it.
	UnchargedSec float64 `json:"uncharged_sec,omitempty"`
	StealSec     float64 `json:"steal_sec,omitempty"`
	// CutLagSec is the part of the thread's cpu seconds that came, at the
	// end of each of CutLags runs that blocked it, after the kernel had
	// ended the run: the kernel stops a run at its run queue's clock, read
	// when __schedule begins, and then picks the next task; perfsleuth
	// stops it at the switch tracepoint, after the pick. The kernel's run
	// time (schedstat) leaves it out. In Seconds["cpu"], not beside it.
	CutLagSec float64 `json:"cut_lag_sec,omitempty"`
	CutLags   int64   `json:"cut_lags,omitempty"`
	// KernelStaleSec is how much of the thread's sleeps the kernel's
	// schedstat counts as run-queue wait, over KernelStaleWakeups
	// wake-ups: at each, the kernel's run_delay had grown since the
	// switch-out that blocked it, or its record of its queueing
	// (sched_info.last_queued, from which run_delay is counted) was older
	// than the wake-up, set while it slept or stamped at the enqueue with
	// a run queue clock not updated for it. Measured at
	// the wake-up (probes.md, "The kernel's stale queueing"); taken off
	// the kernel's figure before the two are compared.
	KernelStaleSec     float64 `json:"kernel_stale_sec,omitempty"`
	KernelStaleWakeups int64   `json:"kernel_stale_wakeups,omitempty"`
}

// ActivityUnsampled is CPUByActivity's key for the cpu time of a thread
// that no on-CPU sample fell on (it ran less than a sampling period or two).
const ActivityUnsampled = "unsampled"

// Verdict names the bottleneck.
type Verdict struct {
	// Primary is the category id that took the largest share of the
	// critical path's time (or the busy threads', Basis), the time on a
	// CPU and waiting for one inside IO calls that waited on storage
	// counted in the storage category they waited in (analyze;
	// docs/findings.md, the verdict).
	Primary string `json:"primary"`
	// Secondary is a category with nearly as much time (80% or more of the
	// primary's), when there is one: the accounting cannot rank them.
	Secondary string `json:"secondary,omitempty"`
	Summary   string `json:"summary"`
	// Sensitivity maps each resource an experiment tested ("cpu", "io",
	// "cache", "memory") to how much taking it away moved the workload.
	Sensitivity map[string]Sensitivity `json:"sensitivity,omitempty"`
	// Conclusion combines the accounting with the experiments, and says so
	// when they disagree (diagnose only).
	Conclusion string `json:"conclusion,omitempty"`
	// Bottleneck is the resource the conclusion names: "cpu", "io",
	// "cache", "memory", or "" when the experiments did not show one.
	Bottleneck string `json:"bottleneck,omitempty"`
	// Basis is what the shares are of: "critical path" (the busy threads'
	// time, each wait for another thread of the workload charged to what
	// that thread was doing), "busy threads" (without the waits), or
	// "idle threads" when every thread waited the whole window for
	// something that did not come.
	Basis string `json:"basis,omitempty"`
	// Activity is what the primary category's time was mostly spent
	// doing, when that is a kind of IO call whose time on a CPU counts
	// toward it ("sync", "read", "write", "aio"); Split is that activity's
	// time in the primary by state, as shares of the basis's time (41%
	// "storage-sync", 31% "cpu" of the critical path). Empty otherwise.
	Activity string             `json:"activity,omitempty"`
	Split    map[string]float64 `json:"split,omitempty"`
}

// Finding is one thing the analysis noticed, with its evidence.
type Finding struct {
	// ID is a stable dotted id documented in docs/findings.md.
	ID string `json:"id"`
	// Severity is "info", "warning" or "critical".
	Severity string   `json:"severity"`
	Summary  string   `json:"summary"`
	Evidence []string `json:"evidence"`
	// Test is the figure the rule's threshold was held against, as the
	// finding prints it: perfsleuth's own consistency check holds it again,
	// so that a finding never contradicts its own number. Nil for a rule
	// without one threshold.
	Test *FindingTest `json:"test,omitempty"`
	// Share is the share of the busy threads' time the finding's cause
	// costs, when the rule knows it: a warning's must be material.
	Share *float64 `json:"share,omitempty"`
}

// FindingTest is a finding's threshold and the figure it was applied to:
// the finding holds when Value Op Threshold (Op ">=", ">", "<" or "<=").
type FindingTest struct {
	Name      string  `json:"name"`
	Value     float64 `json:"value"`
	Op        string  `json:"op"`
	Threshold float64 `json:"threshold"`
}

// SyncCalls is one kind of sync call (fsync, fdatasync, msync, an O_SYNC or
// O_DSYNC write, other): how many, how long.
type SyncCalls struct {
	Kind     string  `json:"kind"`
	Count    int64   `json:"count"`
	TotalSec float64 `json:"total_sec"`
	// Buckets is a log2 latency histogram: Count calls in [LowNs, HighNs].
	Buckets []Bucket `json:"buckets"`
	// Split is the calls' time by accounting category: cpu (on a CPU in
	// the kernel's sync path), cpu-wait (woken and waiting for a CPU),
	// storage-sync (blocked on the device or the journal), lock, ...: it
	// adds up to SplitSec, the summed latency of the SplitCount calls split
	// (those of threads the accounting followed at both ends: all but a
	// few at the window's edges). The time accounting's storage-sync is
	// the blocked part, summed with the other blocked sync time.
	Split      map[string]float64 `json:"split,omitempty"`
	SplitCount int64              `json:"split_count,omitempty"`
	SplitSec   float64            `json:"split_sec,omitempty"`
}

// ProgramCost is one eBPF program's share of the probe's cost: runs about
// the workload's threads and other runs (which only filter), and the cost
// of each kind of run measured by calibration on this host.
type ProgramCost struct {
	Name        string  `json:"name"`
	Runs        int64   `json:"runs"`
	TrackedRuns int64   `json:"tracked_runs"`
	UntrackedNs float64 `json:"untracked_ns_per_run"`
	TrackedNs   float64 `json:"tracked_ns_per_run"`
}

// SyncedFile is one file synced in the window.
type SyncedFile struct {
	Path string `json:"path"`
	// Dev is the filesystem's device as "major:minor", Ino the inode.
	Dev string `json:"dev"`
	Ino uint64 `json:"ino"`
	// Folded: this entry is a directory's, and holds the sync calls on
	// its files that came after the list of synced files was full
	// (it keeps 1,024 files one by one): Path is the directory ("(other directories)" for
	// files whose directory found the list of directories full too),
	// FoldedFiles how many files.
	Folded      bool  `json:"folded,omitempty"`
	FoldedFiles int64 `json:"folded_files,omitempty"`
	// FirstPath is the name it had when first synced, when it was renamed
	// during the run (PostgreSQL's pg_wal/xlogtemp.N became a WAL
	// segment): Path is its name at the end. Gone: no name led to it at
	// the end (deleted, or moved to another directory).
	FirstPath string `json:"first_path,omitempty"`
	Gone      bool   `json:"gone,omitempty"`
	// PID is the first process that synced it.
	PID   int   `json:"pid"`
	Count int64 `json:"count"`
	// DataSync counts the calls that synced data only (fdatasync, O_DSYNC).
	DataSync int64   `json:"datasync"`
	TotalSec float64 `json:"total_sec"`
	MaxSec   float64 `json:"max_sec"`
}

// SyscallStat is one thread's calls of one syscall.
type SyscallStat struct {
	PID      int     `json:"pid"`
	TID      int     `json:"tid"`
	Name     string  `json:"name"`
	Nr       int     `json:"nr"`
	Count    int64   `json:"count"`
	Errors   int64   `json:"errors"`
	TotalSec float64 `json:"total_sec"`
	MaxSec   float64 `json:"max_sec"`
	// Buckets is a log2 latency histogram.
	Buckets []Bucket `json:"buckets"`
}

// OffCPUStack is the time one thread slept in one category with one kernel
// and user stack (innermost frame first, symbolised).
type OffCPUStack struct {
	PID      int      `json:"pid"`
	TID      int      `json:"tid"`
	Category string   `json:"category"`
	Seconds  float64  `json:"seconds"`
	Count    int64    `json:"count"`
	Kernel   []string `json:"kernel"`
	User     []string `json:"user"`
	// KernelNote and UserNote say why a stack is missing or cut short.
	KernelNote string `json:"kernel_note,omitempty"`
	UserNote   string `json:"user_note,omitempty"`
}

// OnCPUStack is how often one thread was sampled running with one kernel
// and user stack (innermost frame first, symbolised). Seconds is Samples
// divided by the sampling frequency: an estimate of the CPU time.
type OnCPUStack struct {
	PID     int      `json:"pid"`
	TID     int      `json:"tid"`
	Comm    string   `json:"comm"`
	Samples int64    `json:"samples"`
	Seconds float64  `json:"seconds"`
	Kernel  []string `json:"kernel"`
	User    []string `json:"user"`
	// KernelNote and UserNote say why a stack is missing or cut short.
	KernelNote string `json:"kernel_note,omitempty"`
	UserNote   string `json:"user_note,omitempty"`
}

// Steal (when StealMeasured; zeros otherwise) is the steal in the on-CPU time of the threads that do the
// workload's work (not idle, not a poller, not a runtime's housekeeping)
// and that on-CPU time (ThreadTime.StealSec).
func (ta *TimeAccounting) Steal() (steal, cpu float64) {
	if ta == nil || !ta.StealMeasured {
		return 0, 0
	}
	for _, t := range ta.Threads {
		if t.Idle || t.Poller || t.Role == "runtime" {
			continue
		}
		steal += t.StealSec
		cpu += t.Seconds[CatCPU]
	}
	return steal, cpu
}

// UnseenSwitches are context switches the sched_switch tracepoint did not
// fire for (some kernels leave out some switches: on the Firecracker guests
// perfsleuth was made on, every switch away from a thread of the guest's
// init process). The probe finds them by the run queue's own count of its
// switches (rq->nr_switches) and, for a thread of the workload, times the
// run or the wait it did not see begin from the kernel's per-task
// schedstat record (sched_info.last_arrival, last_queued).
type UnseenSwitches struct {
	// Switches is every switch on the machine in the window with no
	// event; most are other processes'.
	Switches int64 `json:"switches"`
	// Ins are runs of the workload's threads whose switch-in had no event;
	// InsTimed of those, the start read from the kernel (the others are
	// counted in the state the thread was in before).
	Ins      int64 `json:"ins,omitempty"`
	InsTimed int64 `json:"ins_timed,omitempty"`
	// Outs are switch-ins of the workload's threads whose switch-out had
	// no event; OutsTimed of those, the run-queue wait read from the
	// kernel (what the thread did between is counted on the CPU).
	Outs      int64 `json:"outs,omitempty"`
	OutsTimed int64 `json:"outs_timed,omitempty"`
}

// WakerWords names what ended the wait, in a few words: "the disk
// (read)", "timer", "fio 1234" (a thread of the workload), "kernel
// thread jbd2/vda1-8 219", "outside: sshd 99", "softirq net_rx", "irq
// 24", "not ended in the window".
func (w Wait) WakerWords() string {
	name := func() string {
		if w.WakerComm == "" {
			return fmt.Sprint(w.WakerTID)
		}
		return fmt.Sprintf("%s %d", w.WakerComm, w.WakerTID)
	}
	switch w.Waker {
	case WakerDevice:
		return "the disk (" + w.Op + ")"
	case WakerTimer:
		return "timer"
	case WakerPeer:
		if w.WakerTID == 0 && w.WakerPID != 0 {
			return "process " + OrNum(w.WakerComm, w.WakerPID)
		}
		if w.WakerComm == "" {
			return fmt.Sprintf("thread %d", w.WakerTID)
		}
		return name()
	case WakerKthread:
		return "kernel thread " + name()
	case WakerOutside:
		if w.WakerTID == 0 && w.WakerPID != 0 {
			return "outside: process " + OrNum(w.WakerComm, w.WakerPID)
		}
		return "outside: " + name()
	case WakerSoftirq:
		return "softirq " + w.Softirq
	case WakerIRQ:
		if w.IRQ == 0 {
			return "an interrupt"
		}
		return fmt.Sprintf("irq %d", w.IRQ)
	}
	return "not ended in the window"
}

// ProgramNames names the program of each process the threads belong to, by
// pid: the first word of its title (proctree.Program), or without one its
// main thread's comm (a process's threads may name themselves).
func (ta *TimeAccounting) ProgramNames() map[int]string {
	out := map[int]string{}
	for _, t := range ta.Threads {
		if t.TID == t.PID || out[t.PID] == "" {
			p := proctree.Program(t.Comm, t.Title)
			if t.Title == "" && t.TID != t.PID {
				p = t.Comm // until its main thread is seen
			}
			out[t.PID] = p
		}
	}
	return out
}

// ProgramCPU is one program's busy threads and their time on a CPU.
type ProgramCPU struct {
	Name string
	// Processes and Threads count its processes and busy threads (a
	// folded entry counts its threads).
	Processes, Threads int
	CPUSec             float64
}

// ProgramsCPU sums the busy (not idle) threads' time on a CPU by program
// (ProgramNames), most first, then by name: how a server and its client
// (-p PID -- CMD) shared the CPUs.
func (ta *TimeAccounting) ProgramsCPU() []ProgramCPU {
	names := ta.ProgramNames()
	at := map[string]int{}
	pids := map[string]map[int]bool{}
	var out []ProgramCPU
	for _, t := range ta.Threads {
		if t.Idle {
			continue
		}
		p := names[t.PID]
		i, ok := at[p]
		if !ok {
			i = len(out)
			at[p] = i
			out = append(out, ProgramCPU{Name: p})
			pids[p] = map[int]bool{}
		}
		pids[p][t.PID] = true
		out[i].Threads += max(t.Folded, 1)
		out[i].CPUSec += t.Seconds[CatCPU]
	}
	for i := range out {
		out[i].Processes = len(pids[out[i].Name])
	}
	slices.SortFunc(out, func(a, b ProgramCPU) int {
		return cmp.Or(cmp.Compare(b.CPUSec, a.CPUSec), strings.Compare(a.Name, b.Name))
	})
	return out
}

// OrNum is "name id", or the id alone when the name is not known.
func OrNum(name string, id int) string {
	if name == "" {
		return fmt.Sprint(id)
	}
	return fmt.Sprintf("%s %d", name, id)
}
