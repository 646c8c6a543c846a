// Package timeacct splits the wall-clock time of every thread of a process
// tree into categories (cpu, waiting for a CPU, storage read/write/sync, lock,
// sleep, other), counted in the kernel by eBPF programs on the scheduler's
// tracepoints (bpf/timeacct.bpf.c).
//
// The category of a sleep is decided when the thread goes to sleep, from the
// syscall it is in (its saved user registers) and, for uninterruptible
// sleeps, the kernel functions on its stack, so no syscall is hooked: the
// probe costs per context switch, not per syscall.
package timeacct

// NumCategories is the number of time categories; a thread's categories add
// up to its wall time in the window.
const NumCategories = 8

// Categories names the categories, indexed like Thread.Ns. The order matches
// the TA_CAT_* constants in bpf/timeacct.h.
var Categories = [NumCategories]string{"cpu", "cpu-wait", "storage-read", "storage-write", "storage-sync", "lock", "sleep", "other"}

// Category indexes into Thread.Ns.
const (
	CatCPU = iota
	CatCPUWait
	CatStorageRead
	CatStorageWrite
	CatStorageSync
	CatLock
	CatSleep
	CatOther
)

// Config selects what to observe.
type Config struct {
	// Roots are the roots of the observed trees: these processes, the
	// processes below them at Start and every process forked below them
	// afterwards.
	Roots []int
	// Syscalls counts and times every syscall of the tree, per thread
	// (tp_btf sys_enter/sys_exit: every syscall on the machine then takes
	// the kernel's slow path, so it is off by default).
	Syscalls bool
	// Stacks takes the kernel and user stacks of every sleep of the tree's
	// threads and sums the time slept per stack and category.
	Stacks bool
	// Costs, from Calibrate, turn the programs' run counts into the
	// probe's estimated CPU time; nil leaves it unestimated.
	Costs *Costs
	// DeferWindow leaves the window shut at Start: the threads are
	// followed, their time counted only from Probe.Open (the runner's,
	// once every probe has started).
	DeferWindow bool
	// aggEntries, for the tests, sizes exited_agg (0: as built, 4,096):
	// a few entries make its catch-all reachable.
	aggEntries uint32
}

// Program ids, TA_PROG_* in bpf/timeacct.h: the per-program run counters and
// calibrated costs are indexed by them.
const (
	ProgSwitch = iota
	ProgWakeup
	ProgWakeupNew
	ProgFork
	ProgExit
	ProgSyncEnter
	ProgSyncExit
	ProgSysEnter
	ProgSysExit
	// ProgCtx: the CPU-context markers together (irq_handler_entry/exit,
	// softirq_entry/exit, hrtimer_expire_entry/exit, block_rq_complete).
	ProgCtx
	// ProgWaking tells what woke a thread (sched_waking, in the waker's
	// context). ProgWakeup (sched_wakeup) is no longer attached: the
	// switch-in ends a sleep, at the kernel's queueing of the thread.
	ProgWaking
	// ProgSample samples what the threads do on a CPU at the scheduler
	// tick (in hrtimer_expire_entry, one of ProgCtx's programs: its runs
	// are counted apart, and costed with ProgCtx's).
	ProgSample
	// ProgEnqueue times each enqueue on a run queue
	// (sched_update_nr_running_tp), where a woken thread's sleep ends.
	ProgEnqueue
	NumPrograms
)

// ProgramNames names the programs, indexed by Prog*.
var ProgramNames = [NumPrograms]string{"sched_switch", "sched_wakeup", "sched_wakeup_new", "sched_process_fork", "sched_process_exit", "ext4_sync_file_enter", "ext4_sync_file_exit", "sys_enter", "sys_exit", "cpu_context", "sched_waking", "activity_sample", "sched_update_nr_running_tp"}

// ctxHooks are the CPU-context markers' tracepoints (ProgCtx), by program.
var ctxHooks = map[string]string{
	"ctx_irq_entry": "irq_handler_entry", "ctx_irq_exit": "irq_handler_exit",
	"ctx_softirq_entry": "softirq_entry", "ctx_softirq_exit": "softirq_exit",
	"ctx_hrtimer_entry": "hrtimer_expire_entry", "ctx_hrtimer_exit": "hrtimer_expire_exit",
	"ctx_block_complete": "block_rq_complete",
}

// WakerKinds name what ended a wait, TA_WAKER_* in bpf/timeacct.h.
var WakerKinds = [...]string{"none", "peer", "kthread", "outside", "device", "timer", "irq", "softirq"}

// Waker kinds, indexes of WakerKinds.
const (
	WakerNone = iota
	WakerPeer
	WakerKthread
	WakerOutside
	WakerDevice
	WakerTimer
	WakerIRQ
	WakerSoftirq
)

// Activities name what a thread was doing when it blocked or was
// preempted, TA_ACT_* in bpf/timeacct.h.
var Activities = [...]string{"user", "fault", "read", "write", "sync", "open", "futex", "poll", "sleep", "child", "net", "aio", "other"}

// Activity ids, indexes of Activities (TA_ACT_*).
const (
	ActUser = iota
	ActFault
	ActRead
	ActWrite
	ActSync
	ActOpen
	ActFutex
	ActPoll
	ActSleep
	ActChild
	ActNet
	ActAIO
	ActOther
)

// DeviceOps name a block completion's op (an Edge of kind WakerDevice's ID).
var DeviceOps = [...]string{"read", "write", "other"}

// Softirqs name the softirq vectors (an Edge of kind WakerSoftirq's ID).
var Softirqs = [...]string{"hi", "timer", "net_tx", "net_rx", "block", "irq_poll", "tasklet", "sched", "hrtimer", "rcu"}

// Edge is a thread's time in one kind of wait: what it was doing (Act),
// the interval's category (Cat: a blocked category, or CatCPUWait), and
// what ended it (Kind and ID: the waker's tid for peer, kthread and outside,
// the op for device, the irq or softirq vector). Count intervals, Ns in all.
type Edge struct {
	PID, TID int
	// Gen is the waiter's first sight (FromNs), low 32 bits: a thread
	// whose tid an earlier one of the window had.
	Gen            uint32
	Act, Cat, Kind int
	ID             uint32
	Ns, Count      uint64
}

// WakerName names a waker outside the workload, by its pid.
type WakerName struct {
	// PPID is its process's parent's pid.
	PID, PPID int
	Comm      string
	Kthread   bool
}

// Result is what the probe counted between Start and Stop.
type Result struct {
	// StartNs and EndNs bound the window, in CLOCK_MONOTONIC nanoseconds
	// (the clock of bpf_ktime_get_ns).
	StartNs, EndNs uint64
	Threads        []Thread
	// Forks counts new processes created in the tree during the window,
	// ThreadCreates new threads in processes of the tree.
	Forks, ThreadCreates uint64
	// Exits counts threads of the tree that exited.
	Exits uint64
	// PeakThreads is the most threads of the tree alive at once.
	PeakThreads int
	// Dropped counts what could not be accounted: failed inserts into a
	// full map (each event of a thread without an entry, a process not
	// followed, a sync call not timed) and threads whose tid was reused
	// within the window. Non-zero means the result is incomplete.
	Dropped uint64
	// DroppedBy splits Dropped (model.TimeAccounting.DroppedBy's keys);
	// nil when nothing was dropped.
	DroppedBy map[string]uint64
	// FoldedSyncs counts the sync calls counted in a directory's entry of
	// Files: their files came after MaxSyncedFiles.
	FoldedSyncs uint64
	// FoldedProcesses: processes exited past those whose threads are kept
	// together per process, and their threads are in one Thread of PID 0
	// (bpf/timeacct.bpf.c fold_exited).
	FoldedProcesses bool
	// EdgeNote says what the compaction of the wait-for graph's map did
	// (compact_amd64.go), "" when it did not run.
	EdgeNote string
	// Runs counts each program's runs (indexed by Prog*), machine-wide;
	// TrackedRuns those about a thread of the tree. StackWalks counts the
	// off-CPU stacks taken (Config.Stacks).
	Runs, TrackedRuns [NumPrograms]uint64
	StackWalks        uint64
	// EstimatedNs is the CPU time the programs took, estimated from their
	// run counts and the calibrated cost of each (Config.Costs); CostNote
	// says what the estimate leaves out, or why there is none.
	EstimatedNs uint64
	CostNote    string
	// Costs are Config.Costs, the per-run costs the estimate used.
	Costs *Costs
	// Sync times the sync calls of the tree, indexed like SyncKinds, and
	// Files lists the files they synced. SyncNote says why both are empty
	// when the hooks they need are missing; the rest of the result is
	// unaffected.
	Sync     [NumSyncKinds]SyncStats
	Files    []SyncedFile
	SyncNote string
	// Syscalls and Stacks say whether Config asked for them;
	// SyscallStats and OffCPU hold what they counted.
	Syscalls, Stacks bool
	SyscallStats     []SyscallStats
	OffCPU           []OffCPUStack
	// Edges are the threads' waits and run-queue waits by what they were
	// doing and what ended them: each thread's add up to its time off the
	// CPU (Ns less CatCPU). WakerNames names the wakers outside the
	// workload. CtxNote says why interrupts' wake-ups are not told apart,
	// when the CPU-context markers are missing.
	Edges      []Edge
	WakerNames map[uint32]WakerName
	CtxNote    string
	// EdgeCPUEvictions counts the run-queue waits whose key no slot of
	// their thread held: each sent a slot's edge to the map, a hash
	// update, what the slots are there to save.
	EdgeCPUEvictions uint64
	// Locks are the lock waits by what they waited on, most time first.
	// LockWalks counts the lock waits whose stacks were walked,
	// LockDropped those not counted because the map was full.
	Locks                  []LockWait
	LockWalks, LockDropped uint64
	// TickStacks are the workload's stacks at one in TickStackEvery of
	// the scheduler ticks on its threads (with Sampled), most samples
	// first: where its cpu time went, at SampleHz / TickStackEvery per
	// busy CPU. TickStackRuns counts the walks, TickDropped the samples
	// not counted (the map was full).
	TickStacks                 []TickStack
	TickStackEvery             int
	TickStackRuns, TickDropped uint64
	// Sampled says the threads' on-CPU samples were taken (at the
	// scheduler tick: SampleHz, CONFIG_HZ, 0 when the kernel's config
	// does not say); SampleNote says why not.
	Sampled    bool
	SampleHz   int
	SampleNote string
	// RQReads and RQMisses count the switch-ins in the window where the
	// run queue's clocks were read, and could not be (Thread.UnchargedNs).
	RQReads, RQMisses uint64
	// Unseen counts the context switches the tracepoint did not fire
	// for, and what was made of them.
	Unseen Unseen
	// QueuedWakeups are the wake-ups whose sleep ended where the kernel
	// queued the thread (sched_info.last_queued, read at its switch-in),
	// as schedstat's run-queue wait starts there; QueuedWakeupsNs is their
	// run-queue wait, cpu-wait. QueuedNote says why wake-ups are not
	// timed so, or timed less exactly, when they are not.
	QueuedWakeups, QueuedWakeupsNs uint64
	QueuedNote                     string
	// ClockSkewNs is how far apart the CPUs' scheduler clocks were
	// against ktime: the largest less the least of each CPU's least
	// ktime - rq->clock at enqueues made on the run queue's own CPU
	// (ClockCPUs of them had one). The kernel stamps a remote wake-up's
	// queueing with the waker's CPU's clock and its arrival with the
	// wakee's, so schedstat's run-queue wait of each such wake-up is off
	// by up to this. 0 with fewer than two CPUs measured.
	ClockSkewNs uint64
	ClockCPUs   int
	// MissedRuns counts, per program, the runs the kernel skipped (its
	// recursion misses); nil when none.
	MissedRuns map[string]int64
}

// Unseen counts context switches the sched_switch tracepoint did not fire
// for (model.UnseenSwitches): Switches on every CPU; Ins, the workload's
// runs whose switch-in had none (InsTimed of them, timed from the kernel's
// arrival time); Outs, its switch-ins whose switch-out had none (OutsTimed,
// the wait timed from the kernel's queueing time).
type Unseen struct {
	Switches, Ins, InsTimed, Outs, OutsTimed uint64
}

// TickStack is one (kernel, user) stack pair of a thread at the ticks
// that walked it: Kernel starts with the tick interrupt's own frames
// (empty when the thread was in user code); KernelErr and UserErr say why
// a stack is missing.
type TickStack struct {
	PID, TID           int
	Samples            uint64
	Kernel, User       []uint64
	KernelErr, UserErr string
}

// TickStackHz is the rate at which the ticks on a busy CPU walk the
// workload's stacks, by default: low enough to cost ~0.05% of a CPU (two
// stack walks of a few microseconds, 50 a second per CPU), high enough to
// name a path that takes a tenth of a second of cpu time.
const TickStackHz = 50

// tickStackEvery is 1 in how many ticks walk the stacks at a tick rate
// of hz (250 when unknown), for TickStackHz.
func tickStackEvery(hz int) uint32 {
	if hz <= 0 {
		hz = 250
	}
	return uint32(max(1, hz/TickStackHz))
}

// LockWait is a process's time waiting on one lock, as one kind of wait:
// on a file's inode (Dev, Obj its inode number, Path) in a read, write or
// sync call, or on a futex (Futex, Obj its user address), from the syscall
// class Act. Walked waits (at most one stack walk every 50 ms per
// thread) have the waiter's kernel and user stacks and the waker's
// (Holder: its kernel stack for a kernel lock, its user stack for a
// futex), as addresses, the user and holder stacks one per kind of wait
// (walked once); KernelErr says why a walked kernel stack is missing
// (the stack map could not keep it).
type LockWait struct {
	PID, TID             int
	Act                  int
	Dev                  string
	Obj                  uint64
	Path                 string
	Futex, Walked        bool
	Kernel, User, Holder []uint64
	KernelErr            string
	Ns, Count            uint64
}

// NumSyncKinds is the number of kinds of sync calls.
const NumSyncKinds = 5

// SyncKinds names the ways into a filesystem's fsync, indexed like
// Result.Sync; the order matches TA_SYNC_* in bpf/timeacct.h. "write" is a
// write to a file opened with O_SYNC or O_DSYNC; "other" any other way
// (io_uring, a syscall not listed). sync_file_range, syncfs and sync do not
// pass through it: their time is in storage-sync, and Config.Syscalls
// counts them.
var SyncKinds = [NumSyncKinds]string{"fsync", "fdatasync", "msync", "write", "other"}

// SyncedFile is one file synced in the window.
type SyncedFile struct {
	// Path is the file's path (its mount point, then its names up to the
	// root of its filesystem as the dentry cache had them). Dev is the
	// device as "major:minor", Ino the inode number.
	Path string
	Dev  string
	Ino  uint64
	// PID is the first process of the tree that synced it.
	PID int
	// Count syncs took TotalNs in all, MaxNs the longest; DataSync of
	// them synced data only (fdatasync, O_DSYNC).
	Count, DataSync, TotalNs, MaxNs uint64
	// Folded: a directory's entry, for files synced after the map of
	// files was full (MaxSyncedFiles); FoldedFiles counts them.
	Folded      bool
	FoldedFiles uint64
	// FirstPath is the name the file had when first synced, when it was
	// renamed after (Path is its name at the end); Gone: no name led to it
	// at the end (probe.FinalPaths).
	FirstPath string
	Gone      bool
	gen       uint32
}

// MaxSyncedFiles is how many synced files the probe lists one by one:
// past them, a file's syncs are counted in its directory's entry.
const MaxSyncedFiles = 1024

// SyscallStats is one thread's use of one syscall (Config.Syscalls).
type SyscallStats struct {
	PID, TID int
	Nr       int
	Name     string
	// Count calls, Errors of them returning an error, taking TotalNs in
	// all and MaxNs the longest.
	Count, Errors, TotalNs, MaxNs uint64
	// LatencyLog2Ns[i] counts calls that took [2^i, 2^(i+1)) ns; the last
	// slot everything above.
	LatencyLog2Ns [NumLatencySlots]uint64
}

// OffCPUStack is the time thread TID of process PID slept in one category
// with one pair of stacks (Config.Stacks). Stacks are raw
// addresses, innermost first; KernelErr and UserErr say why one is
// missing (the sleep began before the probe, or the stack could not be
// walked).
type OffCPUStack struct {
	PID, TID           int
	Category           int
	Ns, Count          uint64
	Kernel, User       []uint64
	KernelErr, UserErr string
}

// NumLatencySlots is the size of SyncStats.LatencyLog2Us.
const NumLatencySlots = 32

// SyncStats counts the completed calls of one sync syscall in the window.
type SyncStats struct {
	Count, TotalNs uint64
	// CatNs is the time of the Split calls (SplitNs in all) by category,
	// indexed like Thread.Ns.
	CatNs          [NumCategories]uint64
	Split, SplitNs uint64
	// LatencyLog2Us[i] counts calls that took [2^i, 2^(i+1)) microseconds;
	// slot 0 also holds those under 1 us, the last slot everything above.
	LatencyLog2Us [NumLatencySlots]uint64
}

// Thread is one thread's time in the window.
type Thread struct {
	PID, TID int
	Comm     string
	// Ns is the time per category; the categories add up to WallNs.
	Ns [NumCategories]uint64
	// FromNs and ToNs bound the thread's time in the window (CLOCK_MONOTONIC):
	// from when it was first seen (Start, or its creation) to Stop or its exit.
	FromNs, ToNs uint64
	// WallNs runs from when the thread was first seen (Start, or its
	// creation) to Stop, or to its exit.
	WallNs uint64
	// UserNs and SysNs are the kernel's task utime and stime at the last
	// switch-out (cumulative since the thread started, not per window);
	// UserTicks and SysTicks are the same in USER_HZ ticks as in
	// /proc/<pid>/task/<tid>/stat. They split cpu into user and system.
	UserNs, SysNs       uint64
	UserTicks, SysTicks uint64
	// Switches counts switch-outs, Involuntary those while still runnable
	// (preemptions), Wakeups the wake-ups from a sleep.
	Switches, Involuntary, Wakeups uint64
	// FutexLockBlocks and FutexSleepBlocks count sleeps in futex classified
	// as lock and as sleep (FUTEX_WAIT_BITSET, condition variables; a
	// FUTEX_WAIT for a word to leave 0, an event's flag).
	FutexLockBlocks, FutexSleepBlocks uint64
	Exited                            bool
	// Folded > 0 marks the exited threads of process PID folded into one
	// entry (TID 0) when they exited: Folded threads, their times summed.
	Folded int
	// Samples counts the on-CPU samples of the thread by activity
	// (Activities): they split its cpu time (Result.SampleHz).
	Samples [len(Activities)]uint64
	// ExitRunNs, ExitWaitNs and ExitRuns are the kernel's schedstat
	// counters of an exited thread at its exit (0 for a live one).
	ExitRunNs, ExitWaitNs, ExitRuns uint64
	// UnchargedNs is the part of its on-CPU time in the window that its
	// CPU's run queue did not charge to it (steal and, on kernels with
	// IRQ_TIME_ACCOUNTING, interrupt time: schedstat's run time leaves it
	// out), StealNs the hypervisor's steal in it.
	UnchargedNs, StealNs uint64
	// StaleWakeups are the wake-ups at which the kernel had counted, or
	// would count, part of the sleep they ended as run-queue wait (its
	// run_delay grew in the sleep, or its record of the thread's queueing,
	// sched_info.last_queued, was older than the wake-up), and StaleNs how
	// much (bpf stale_wait).
	StaleWakeups, StaleNs uint64
	// CutLagNs is, over CutLags of its switch-outs that blocked it, how
	// long before each the kernel had ended its run (at its run queue's
	// clock, read when __schedule begins, before it picks the next task;
	// this account ends it at the switch tracepoint, after the pick):
	// schedstat's run time leaves it out (bpf cut_lag).
	CutLagNs, CutLags uint64
}

// userHZ is the unit of utime/stime in /proc/<pid>/stat: USER_HZ is 100 on
// every architecture Linux supports today (include/asm-generic/param.h).
const userHZ = 100
