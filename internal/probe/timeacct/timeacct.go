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
	// RootPID is the root of the observed tree: this process, the processes
	// below it at Start and every process forked below it afterwards.
	RootPID int
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
	// Sync times the sync syscalls of the tree, indexed like SyncKinds.
	// SyncNote says why it is empty when its tracepoints could not be
	// attached (they need tracefs); the rest of the result is unaffected.
	// ProgramRuns and ProgramNs are how often the probe's programs ran and
	// the CPU time they took, as the kernel's BPF statistics measured them
	// (zero, with CostNote saying why, where the kernel would not).
	ProgramRuns, ProgramNs uint64
	CostNote               string
	Sync                   [NumSyncKinds]SyncStats
	SyncNote               string
}

// NumSyncKinds is the number of sync syscalls timed.
const NumSyncKinds = 6

// SyncKinds names the sync syscalls, indexed like Result.Sync; the order
// matches TA_SYNC_* in bpf/timeacct.h.
var SyncKinds = [NumSyncKinds]string{"fsync", "fdatasync", "sync_file_range", "msync", "syncfs", "sync"}

// NumLatencySlots is the size of SyncStats.LatencyLog2Us.
const NumLatencySlots = 32

// SyncStats counts the completed calls of one sync syscall in the window.
type SyncStats struct {
	Count, TotalNs uint64
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
	// as lock and as sleep (FUTEX_WAIT_BITSET, condition variables).
	FutexLockBlocks, FutexSleepBlocks uint64
	Exited                            bool
	// Folded > 0 marks the exited threads of process PID folded into one
	// entry (TID 0) when they exited: Folded threads, their times summed.
	Folded int
}

// userHZ is the unit of utime/stime in /proc/<pid>/stat: USER_HZ is 100 on
// every architecture Linux supports today (include/asm-generic/param.h).
const userHZ = 100
