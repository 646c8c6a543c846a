package model

// Observation is what perfsleuth saw of the workload while it ran.
type Observation struct {
	// Source names the observer: "procfs" (sampling /proc and /sys).
	Source      string  `json:"source"`
	IntervalSec float64 `json:"interval_sec"`
	DurationSec float64 `json:"duration_sec"`
	// Missing lists, in plain words, what this observer cannot see.
	Missing []string `json:"missing,omitempty"`
	// Timeline holds one sample per interval; each is a delta over that interval.
	Timeline []Sample `json:"timeline"`
	// Totals are the deltas over the whole observation window.
	Totals Totals `json:"totals"`
	// ObserverCPUSec is the CPU time the observer itself used in the window
	// (for procfs, its sampling thread), so its cost can be weighed.
	ObserverCPUSec float64 `json:"observer_cpu_sec"`
	// DelayAcct is the kernel's delay accounting (sysctl
	// kernel.task_delayacct) over the window, which decides whether the
	// block-IO delays (IODelaySec) mean anything: "on", "off", "unavailable"
	// (no such sysctl: a kernel without CONFIG_TASK_DELAY_ACCT, or one older
	// than 5.14, where it cannot be read), or "changed" (switched during the
	// window, so the delays cover only part of it), or "unreliable" (on,
	// on a kernel whose block-IO delays are wrong in some runs). Empty in
	// records made before it was recorded.
	DelayAcct string `json:"delay_acct,omitempty"`
}

// Delay accounting states (Observation.DelayAcct).
const (
	DelayAcctOn          = "on"
	DelayAcctOff         = "off"
	DelayAcctUnavailable = "unavailable"
	DelayAcctChanged     = "changed"
	// DelayAcctUnreliable: on, on a kernel whose block-IO delays are
	// wrong in some runs (late dequeue of sleepers, Linux 6.12+:
	// sysinfo.DelayedDequeue), so they are not used.
	DelayAcctUnreliable = "unreliable"
)

// Sample is the change over one interval, ending TSec seconds after the window began.
type Sample struct {
	TSec    float64    `json:"t_sec"`
	CPUs    []CPUUse   `json:"cpus"`
	Process ProcessUse `json:"process"`
	Disks   []DiskUse  `json:"disks"`
}

// Totals are the deltas over the whole observation window.
type Totals struct {
	CPUs    []CPUUse    `json:"cpus"`
	Process ProcessUse  `json:"process"`
	Threads []ThreadUse `json:"threads"`
	Disks   []DiskUse   `json:"disks"`
}

// CPUUse is one CPU's time split, in percent of the interval (top's per-CPU view).
// CPU is -1 for the all-CPU average.
type CPUUse struct {
	CPU     int     `json:"cpu"`
	User    float64 `json:"user_pct"`
	Nice    float64 `json:"nice_pct"`
	System  float64 `json:"system_pct"`
	IOWait  float64 `json:"iowait_pct"`
	IRQ     float64 `json:"irq_pct"`
	SoftIRQ float64 `json:"softirq_pct"`
	Steal   float64 `json:"steal_pct"`
	Idle    float64 `json:"idle_pct"`
}

// ProcessUse aggregates the workload's processes (the whole tree).
// Processes and Threads count those alive at the end of a Sample's interval,
// and every one seen in the window in Totals.
type ProcessUse struct {
	Processes           int     `json:"processes"`
	Threads             int     `json:"threads"`
	UserSec             float64 `json:"user_sec"`
	SystemSec           float64 `json:"system_sec"`
	VolCtxSw            int64   `json:"voluntary_ctxt_switches"`
	InvolCtxSw          int64   `json:"nonvoluntary_ctxt_switches"`
	RChar               int64   `json:"rchar"`
	WChar               int64   `json:"wchar"`
	SyscR               int64   `json:"syscr"`
	SyscW               int64   `json:"syscw"`
	ReadBytes           int64   `json:"read_bytes"`
	WriteBytes          int64   `json:"write_bytes"`
	CancelledWriteBytes int64   `json:"cancelled_write_bytes"`
	// IODelaySec is the block-IO delay from delay accounting (/proc/PID/stat
	// field 42), when the kernel has it on.
	IODelaySec float64 `json:"io_delay_sec"`
	// RunDelaySec is the time threads waited on a run queue, runnable but
	// not running (schedstat's run_delay), summed over the threads whose
	// schedstat could be read (ThreadUse.SchedStat).
	RunDelaySec float64 `json:"run_delay_sec"`
}

// ThreadUse is one thread of the workload over the window.
type ThreadUse struct {
	PID  int    `json:"pid"`
	TID  int    `json:"tid"`
	Comm string `json:"comm"`
	// Title is the process's title when it sets one in its command line
	// (PostgreSQL's "postgres: walwriter", nginx's "nginx: worker
	// process") or runs a script ("python3 app.py": app.py), as last read;
	// "" otherwise (Comm names it).
	Title      string  `json:"title,omitempty"`
	UserSec    float64 `json:"user_sec"`
	SystemSec  float64 `json:"system_sec"`
	VolCtxSw   int64   `json:"voluntary_ctxt_switches"`
	InvolCtxSw int64   `json:"nonvoluntary_ctxt_switches"`
	// RunDelaySec is the time the thread waited on a run queue, runnable
	// but not running: the second field of /proc/PID/task/TID/schedstat
	// (sched_info.run_delay). Valid only when SchedStat is true.
	RunDelaySec float64 `json:"run_delay_sec"`
	// SchedStat is true when the thread's schedstat was read at its first
	// sample; false when the kernel keeps none (no CONFIG_SCHED_INFO, or an
	// old kernel that keeps it only with delay accounting on: it then reads
	// "0 0 0") or the file could not be read.
	SchedStat bool `json:"schedstat"`
	// IODelaySec is the time the thread waited for block IO, from delay
	// accounting (/proc/PID/task/TID/stat field 42, delayacct_blkio_ticks):
	// reads, writeback and syncs alike, as the kernel does not split it.
	// Meaningful only when Observation.DelayAcct is "on"; 10 ms ticks.
	IODelaySec float64 `json:"io_delay_sec"`
	// IO is the thread's own block-IO byte counts (/proc/PID/task/TID/io),
	// read only while delay accounting is on, to tell what its IO delay
	// waited for. Nil when not read.
	IO *ThreadIO `json:"io,omitempty"`
	// Exited is true when the thread was gone at the end of the window; its
	// figures are from the last sample that saw it.
	Exited bool `json:"exited"`
}

// ThreadIO is a thread's block-IO byte counts over the window, as in
// /proc/PID/io: ReadBytes is what it asked the block layer to read,
// WriteBytes the page-cache pages it dirtied (and its direct writes),
// CancelledWriteBytes dirty pages it dropped (truncate, unlink).
type ThreadIO struct {
	ReadBytes           int64 `json:"read_bytes"`
	WriteBytes          int64 `json:"write_bytes"`
	CancelledWriteBytes int64 `json:"cancelled_write_bytes"`
}

// DiskUse is iostat -x for one block device over an interval.
type DiskUse struct {
	Device        string  `json:"device"`
	ReadsPerSec   float64 `json:"r_per_sec"`
	WritesPerSec  float64 `json:"w_per_sec"`
	ReadMBps      float64 `json:"rmb_per_sec"`
	WriteMBps     float64 `json:"wmb_per_sec"`
	RMergedPerSec float64 `json:"rrqm_per_sec"`
	WMergedPerSec float64 `json:"wrqm_per_sec"`
	// AvgRqKiB is the average request size (reads and writes), KiB.
	AvgRqKiB float64 `json:"avg_rq_kib"`
	AvgQueue float64 `json:"avg_qu_sz"`
	RAwaitMs float64 `json:"r_await_ms"`
	WAwaitMs float64 `json:"w_await_ms"`
	UtilPct  float64 `json:"util_pct"`
	// Raw counts over the interval, so figures can be recomputed and compared.
	Reads      int64 `json:"reads"`
	Writes     int64 `json:"writes"`
	ReadBytes  int64 `json:"read_bytes"`
	WriteBytes int64 `json:"write_bytes"`
}
