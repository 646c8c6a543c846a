/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Types shared between bpf/timeacct.bpf.c and internal/probe/timeacct (via bpf2go).
 * Fixed-width fields only, laid out without padding holes. */
#ifndef __TIMEACCT_H
#define __TIMEACCT_H

/* Categories; the order is the Go package's Categories array. */
#define TA_CAT_CPU 0
#define TA_CAT_CPU_WAIT 1
#define TA_CAT_STORAGE_READ 2
#define TA_CAT_STORAGE_WRITE 3
#define TA_CAT_STORAGE_SYNC 4
#define TA_CAT_LOCK 5
#define TA_CAT_SLEEP 6
#define TA_CAT_OTHER 7
#define TA_NUM_CATS 8

/* What ended a blocked interval: the waker, told apart in sched_waking,
 * which runs in the waker's context (ta_edge_key.kind; id says which). */
#define TA_WAKER_NONE 0    /* no wake-up seen: the window's edge, or a cpu-wait interval */
#define TA_WAKER_PEER 1    /* a thread of the workload: id = its tid */
#define TA_WAKER_KTHREAD 2 /* a kernel thread (jbd2, kworker, ksoftirqd...): id = its pid */
#define TA_WAKER_OUTSIDE 3 /* a user thread outside the workload: id = its tid */
#define TA_WAKER_DEVICE 4  /* a block request's completion: id = TA_OP_* */
#define TA_WAKER_TIMER 5   /* a timer expiring (hrtimer, timer wheel) */
#define TA_WAKER_IRQ 6     /* another hardware interrupt: id = its irq, 0 if unknown */
#define TA_WAKER_SOFTIRQ 7 /* another softirq (network, tasklets, RCU): id = its vector */
#define TA_NUM_WAKERS 8

/* The op of the block completion that woke a thread (TA_WAKER_DEVICE). */
#define TA_OP_READ 0
#define TA_OP_WRITE 1
#define TA_OP_OTHER 2 /* flush, discard, ... */

/* What a thread was doing when it blocked or was preempted: the syscall
 * it was in, by class (ta_edge_key.act). */
#define TA_ACT_USER 0   /* user code (preempted outside a syscall) */
#define TA_ACT_FAULT 1  /* a page fault */
#define TA_ACT_READ 2   /* read, pread, readv, preadv */
#define TA_ACT_WRITE 3  /* write, pwrite, writev, pwritev */
#define TA_ACT_SYNC 4   /* fsync, fdatasync, sync_file_range, msync, syncfs, sync */
#define TA_ACT_OPEN 5   /* open, stat, rename, unlink, mkdir, ... (metadata) */
#define TA_ACT_FUTEX 6  /* futex */
#define TA_ACT_POLL 7   /* poll, select, epoll */
#define TA_ACT_SLEEP 8  /* nanosleep, clock_nanosleep, pause, sigsuspend */
#define TA_ACT_CHILD 9  /* wait4, waitid */
#define TA_ACT_NET 10   /* accept, connect, recv*, send* */
#define TA_ACT_AIO 11   /* io_submit, io_getevents, io_pgetevents, io_uring_enter */
#define TA_ACT_OTHER 12 /* any other syscall */
#define TA_NUM_ACTS 13
/* ta_thread.samples and ta_agg.samples have a slot per activity, rounded
 * up to an even count so the arrays end on an 8-byte boundary. */
#define TA_SAMPLE_SLOTS 14

/* The workload's waits and run-queue waits, by what the thread was doing,
 * the category of the interval and what ended it. */
struct ta_edge_key {
	__u32 tid;  /* the waiter */
	__u32 tgid;
	__u32 id;   /* the waker (see TA_WAKER_*): a thread's tid; for cpu-wait, the process (tgid) of the task that had the CPU */
	__u32 gen;  /* the waiter's first_ns, low bits: a tid reused in the window is another thread */
	__u8 act;   /* TA_ACT_* */
	__u8 cat;   /* TA_CAT_* of the interval: a blocked one, or cpu-wait */
	__u8 kind;  /* TA_WAKER_* */
	__u8 _pad;
};

struct ta_edge {
	__u64 ns;
	__u64 count;
};

/* Per CPU: what the CPU is running now besides its task (interrupt,
 * softirq, timer), for sched_waking to tell what woke a thread. The
 * generations tell whether a block completion happened inside the
 * current interrupt. */
struct ta_cpu_ctx {
	__u32 hardirq;     /* irq + 1 while in a hardware interrupt's handler, else 0 */
	__u32 softirq;     /* vector + 1 while in a softirq, else 0 */
	__u32 timer;       /* timers expiring now (hrtimer) */
	__u32 blk_op;      /* TA_OP_* of the last block completion */
	__u64 hard_gen;    /* hardware interrupts entered */
	__u64 soft_gen;    /* softirqs entered */
	__u64 blk_hard_gen; /* hard_gen of the last block completion in a hardirq */
	__u64 blk_soft_gen; /* soft_gen of the last block completion in a softirq */
	__u64 blk_task_ts;  /* time of the last block completion in task context (polled IO) */
	__u64 nr_switches;  /* the run queue's switch count at the last run of handle_switch here */
};

/* Thread states. */
#define TA_STATE_RUNNING 0
#define TA_STATE_RUNNABLE 1
#define TA_STATE_BLOCKED 2

/* Kernel-stack classes, in priority order (lower wins). */
#define TA_CLASS_NONE 0
#define TA_CLASS_LOCK 1
#define TA_CLASS_SYNC 2
#define TA_CLASS_WRITE 3
#define TA_CLASS_READ 4

#define TA_COMM_LEN 16
#define TA_MAX_RANGES 32
#define TA_MAX_FRAMES 32

/* A kind of lock wait of a process: on a file (an inode lock: dev and
 * ino of the file its read, write or sync call was on) or a futex (dev 0,
 * obj its user address), or another kernel lock (obj and dev 0), in the
 * syscall class act, by the waiter's kernel stack (kstack:
 * TA_LOCK_NOT_WALKED for the waits whose stacks were not walked, at most
 * one walk every 50 ms per thread; a negative errno when the stack map
 * could not keep it). The value keeps, walked once for the kind (again
 * while the walks fail), a waiter's user stack and a waker's stack (its
 * kernel stack for a kernel lock, its user stack for a futex: where the
 * holder let go), so that the map holds a few stacks per kind of wait
 * whatever the user stacks look like (code without frame pointers leaves
 * a different one at nearly every walk). */
#define TA_LOCK_NOT_WALKED -2000
struct ta_lock_key {
	__u64 obj;
	__u32 tgid;
	__u32 dev;
	__s32 kstack;
	__u32 act;
	__u32 tid;  /* the waiter: analysis leaves idle threads' waits out */
	__u32 _pad;
};

struct ta_lock {
	__u64 ns;
	__u64 count;
	__s32 ustack;
	__s32 hstack;
};

/* The stacks of the workload's threads at one in tick_stack_every of the
 * scheduler ticks that fall on them (per CPU): where their cpu time goes,
 * at a low rate, with no interrupt of its own. kstack is TA_LOCK_NOT_WALKED
 * for a thread the tick found in user code (its kernel stack would be the
 * tick's own). */
struct ta_tick_key {
	__u32 tgid;
	__u32 tid;
	__s32 kstack;
	__s32 ustack;
};

/* A file a lock wait was on: its path, as ta_file's (path.bpf.h). */
struct ta_lock_file {
	__u32 depth;
	__u32 truncated;
	__u8 names[8][64];
};

/* Slots of a thread's edges being accumulated (ta_thread.ek): the first
 * TA_EDGE_CPU_SLOTS for run-queue waits, the last for blocked intervals. */
#define TA_EDGE_CPU_SLOTS 4
#define TA_EDGE_SLOTS (TA_EDGE_CPU_SLOTS + 1)

/* A thread's edge being accumulated (ta_thread.edge, edge_add): its key,
 * count and time together, 32 bytes, so that a slot is half a cache line
 * to read and write, not a part of each of three arrays. edge_add sends a
 * slot to the map before its count can wrap. */
struct ta_edge_slot {
	struct ta_edge_key k;
	__u32 count;
	__u64 ns;
};

/* Per-thread accounting, in a slot of the threads array (threads.bpf.h).
 *
 * Laid out by what a context switch touches, each group a cache line (the
 * size a multiple of 64, so that in the array, whose values start on a
 * page, every entry starts on a line): under a server's load the entry is
 * out of the CPU's caches by the thread's next switch, and each line a
 * switch touches costs it a miss (eight random lines of a 1 MiB array
 * added about 200 ns to the switch program under MariaDB + sysbench).
 * Line 0: what every switch of the thread reads or writes; 1: the time
 * per category; 2-3: the switch's counters and the run queue's clocks;
 * 4-6: the edges, two slots a line, most used first; then what is read at
 * exit, by the other programs or by user space. */
struct ta_thread {
	/* line 0 */
	__u32 tid;
	__u32 tgid;
	__u32 state;            /* TA_STATE_* */
	__u32 cat;              /* TA_CAT_* while TA_STATE_BLOCKED */
	__u32 act;              /* TA_ACT_* at the switch-out that opened the interval */
	__u32 exited;
	__u32 wkind;            /* TA_WAKER_* of the wake-up under way (sched_waking to the switch-in) */
	__u32 wid;
	__u64 last_ns;          /* start of the open interval */
	/* When sched_waking woke the thread from the sleep under way (0: not
	 * seen): its sleep ends at its switch-in, at the kernel's queueing of
	 * it, and no earlier than this. */
	__u64 waking_ns;
	/* sched_info.run_delay at the switch-out that opened the blocked
	 * interval, plus 1 (0: that switch-out was not seen): what the kernel
	 * adds to it before the wake-up is sleep it counted as wait. */
	__u64 rd_block;
	__u32 rq_in;            /* the run queue's clocks were read at the switch-in (rq_unch_in, rq_steal_in) */
	__u32 lock_set;         /* lock_begin ran for the open wait (else it began before the window) */
	/* line 1 */
	__u64 ns[TA_NUM_CATS];  /* time per category, closed intervals only */
	/* line 2. Of the thread's on-CPU time, what its CPU's run queue did
	 * not charge to it (the growth of rq->clock - rq->clock_task while it
	 * ran: hypervisor steal time, and interrupt time on kernels with
	 * IRQ_TIME_ACCOUNTING), and of that the steal
	 * (rq->prev_steal_time_rq): schedstat's run time leaves both out.
	 * rq_unch_in and rq_steal_in are the run queue's at the switch-in
	 * (rq_in set). */
	__u64 rq_unch_in;
	__u64 rq_steal_in;
	__u64 uncharged_ns;
	__u64 steal_ns;
	__u64 switches;         /* switch-outs */
	__u64 involuntary;      /* switch-outs while runnable (preempted) */
	__u64 wakeups;          /* switch-ins of this thread after a sleep */
	__u64 utime_ns;         /* task->utime at the last switch-out or exit */
	/* line 3 */
	__u64 stime_ns;         /* task->stime at the last switch-out or exit */
	__u64 futex_lock_blocks;  /* blocks in futex classified as lock */
	__u64 futex_sleep_blocks; /* blocks in futex classified as sleep (FUTEX_WAIT_BITSET) */
	__u64 first_ns;         /* when the entry was created */
	__s32 kstack;           /* off-CPU stack ids of the open blocked interval (want_stacks) */
	__s32 ustack;
	__u64 exit_ns;          /* sched_process_exit time, 0 while alive */
	/* Of its switch-outs that blocked it, how long before each the
	 * kernel had ended its run (cut_lag): schedstat's run time stops at
	 * the run queue's clock, read at __schedule's start, this account at
	 * the tracepoint after the next task was picked. cut_lags counts the
	 * switch-outs measured. */
	__u64 cut_lag_ns;
	__u64 cut_lags;
	/* The edges being accumulated (see edge_add): TA_EDGE_CPU_SLOTS for
	 * run-queue waits (they end with what had the CPU, which alternates
	 * between a few processes) and the last for blocked intervals, as a
	 * thread alternates between the two: each goes to the edges map when
	 * an interval of its kind has a key no slot holds and it is the slot
	 * to give up, at exit, and is read by user space at the end. Lines
	 * 4-6: two slots a line, the blocked slot first in line 6. */
	struct ta_edge_slot edge[TA_EDGE_SLOTS];
	__u8 comm[TA_COMM_LEN];
	/* On-CPU samples of the thread in the window, by what it was doing
	 * (TA_ACT_*): they split its cpu time by activity. */
	__u32 samples[TA_SAMPLE_SLOTS];
	/* The kernel's own counters of the thread (schedstat's: its run
	 * time, run-queue wait and arrivals on a CPU) at sched_process_exit,
	 * where its time here ends: read later, a zombie's also hold its exit
	 * (closing and freeing its files and memory). */
	__u64 exit_run_ns;
	__u64 exit_wait_ns;
	__u64 exit_runs;
	/* Wake-ups at which the kernel's record of the thread's queueing
	 * (sched_info.last_queued) was older than the wake-up's enqueue, and
	 * by how much: schedstat will count that part of its sleep as
	 * run-queue wait (stale_wait). */
	__u64 stale_wakeups;
	__u64 stale_ns;
	/* A lock wait under way (cat TA_CAT_LOCK): what it waits on (see
	 * ta_lock_key) and its stacks; lock_walk_ns is the last walk of a
	 * lock wait's stacks (at most one every 50 ms). */
	__u64 lock_obj;
	__u32 lock_dev;
	__s32 lock_kstack;
	__s32 lock_ustack;
	__s32 lock_hstack;
	__u64 lock_walk_ns;
	__u64 _pad_end[2];      /* to 576 bytes, nine lines */
};

_Static_assert(sizeof(struct ta_edge_slot) == 32, "an edge slot is half a cache line");
_Static_assert(sizeof(struct ta_thread) % 64 == 0, "a thread entry is whole cache lines");
_Static_assert(__builtin_offsetof(struct ta_thread, edge) == 256, "the edges start line 4");

/* The exited threads of one process, folded together at exit so that a
 * thread-per-message workload cannot fill the threads map. */
struct ta_agg {
	__u64 ns[TA_NUM_CATS];
	__u64 wall_ns;
	__u64 utime_ns;
	__u64 stime_ns;
	__u64 switches;
	__u64 involuntary;
	__u64 wakeups;
	__u64 futex_lock_blocks;
	__u64 futex_sleep_blocks;
	__u64 threads;
	__u64 first_ns; /* earliest first_ns of a folded thread */
	__u64 last_ns;  /* latest exit */
	__u32 tgid;
	__u32 _pad;
	__u8 comm[TA_COMM_LEN];
	__u32 samples[TA_SAMPLE_SLOTS]; /* the folded threads' on-CPU samples by activity */
	__u64 uncharged_ns;
	__u64 steal_ns;
	__u64 cut_lag_ns;
	__u64 cut_lags;
};

/* Kernel text ranges [start, end) whose presence on the stack of a task going
 * to sleep in D state tells what it waits for. Unused slots are zero. */
struct ta_ranges {
	__u64 start[TA_MAX_RANGES];
	__u64 end[TA_MAX_RANGES];
	__u32 class[TA_MAX_RANGES]; /* TA_CLASS_* */
};

/* Programs, for the run counters that the overhead estimate multiplies by
 * each program's calibrated cost. */
#define TA_PROG_SWITCH 0
#define TA_PROG_WAKEUP 1 /* sched_wakeup: no longer attached (the switch-in ends a sleep); the index is kept */
#define TA_PROG_WAKEUP_NEW 2
#define TA_PROG_FORK 3
#define TA_PROG_EXIT 4
#define TA_PROG_SYNC_ENTER 5
#define TA_PROG_SYNC_EXIT 6
#define TA_PROG_SYS_ENTER 7
#define TA_PROG_SYS_EXIT 8
#define TA_PROG_CTX 9 /* the CPU-context markers: irq, softirq, hrtimer entry/exit, block completion */
#define TA_PROG_WAKING 10
#define TA_PROG_SAMPLE 11 /* the on-CPU activity samples, at the scheduler tick (in hrtimer_expire_entry) */
#define TA_PROG_ENQUEUE 12 /* a run queue's task count changed (sched_update_nr_running_tp) */
#define TA_NUM_PROGS 13

/* Counters of the probe as a whole. */
struct ta_counters {
	__u64 process_forks;  /* new processes created below the tracked tree */
	__u64 thread_creates; /* new threads in tracked processes */
	__u64 exits;          /* tracked threads that exited */
	__u64 dropped;        /* threads not accounted because the map was full */
	__u64 runs[TA_NUM_PROGS];    /* runs per program, machine-wide */
	__u64 tracked[TA_NUM_PROGS]; /* of those, runs about a tracked thread */
	__u64 stack_walks;           /* off-CPU stacks taken (want_stacks) */
	__u64 sys_dropped;           /* syscalls not counted: sys_stats full */
	__u64 file_dropped;          /* synced files not listed: files and sync_dirs full */
	__u64 file_folded;           /* sync calls counted in a directory's entry: files full */
	__u64 edge_dropped;          /* waits not in the edges map: full */
	__u64 rq_reads;              /* switch-ins whose run queue clocks were read (rq_clocks) */
	__u64 rq_misses;             /* switch-ins in the window where they could not be */
	__u64 unseen_switches;       /* switches a CPU's run queue made with no run of handle_switch */
	__u64 unseen_ins;            /* tracked threads switched out whose switch-in was not seen */
	__u64 unseen_ins_timed;      /* of those, the run's start read from the kernel (sched_info) */
	__u64 unseen_outs;           /* tracked threads switched in whose switch-out was not seen */
	__u64 unseen_outs_timed;     /* of those, the run-queue wait's start read from the kernel */
	__u64 wakeups_queued;        /* wake-ups whose sleep was ended where the kernel queued the thread (sched_info.last_queued) */
	__u64 wakeups_queued_ns;     /* their run-queue waits, from there to the switch-in */
	__u64 lock_dropped;          /* lock waits not in the locks map: full */
	__u64 lock_walks;            /* lock waits whose stacks were walked */
	__u64 tick_stacks;           /* ticks whose stacks were walked */
	__u64 tick_dropped;          /* of those, not counted: tick_counts full */
	__u64 edge_cpu_evictions;    /* run-queue waits whose key no slot of the thread held (edge_add): a hash update each */
};

/* Per CPU, indexed by the CPU of the run queue: its anchor, timed by
 * sched_update_nr_running_tp at an enqueue made on that CPU. A cache line
 * each. */
struct ta_enq {
	/* The ktime of an enqueue made on the run queue's own CPU and the
	 * run queue's clock then (a task's sched_info.last_queued is set
	 * from it): the CPU's anchor, which relates its sched_clock to ktime
	 * (another CPU updates a remote run queue's clock from its own, so a
	 * remote enqueue is no anchor). Taken again once the clock has moved
	 * TA_ANCHOR_REFRESH_NS past it, not at every enqueue. */
	__u64 local_ns;
	__u64 local_clock;
	/* Of the enqueues made on the run queue's own CPU, the least ktime -
	 * clock (ns, signed) and how many: that CPU's sched_clock against
	 * ktime. CPUs whose least offsets differ have scheduler clocks that
	 * disagree (a virtual machine's per-vCPU clocks), and the kernel's
	 * schedstat stamps a remote wake-up's queueing with the waker's. */
	__s64 off_min;
	__u64 off_n;
	__u64 _pad[4];
};

/* Sync calls, timed by the filesystem's fsync tracepoints (ext4:
 * ext4_sync_file_enter/exit), by the syscall the thread is in; the order is
 * the Go package's SyncKinds array. */
#define TA_SYNC_FSYNC 0
#define TA_SYNC_FDATASYNC 1
#define TA_SYNC_MSYNC 2
#define TA_SYNC_WRITE 3 /* a write to a file opened O_SYNC or O_DSYNC */
#define TA_SYNC_OTHER 4 /* any other way into the filesystem's fsync */
#define TA_NUM_SYNC 5
#define TA_MAX_SLOTS 32

/* A synced file: path components leaf first, up to the root of its
 * filesystem (user space prefixes the mount point). */
#define TA_PATH_DEPTH 8 /* PATH_DEPTH of path.bpf.h */
#define TA_NAME_LEN 64 /* PATH_NAME_LEN */
struct ta_file_key {
	__u64 ino;
	__u32 dev; /* the kernel's dev_t: major << 20 | minor */
	__u32 _pad;
};

struct ta_file {
	__u64 count;
	__u64 total_ns;
	__u64 max_ns;
	__u64 datasync; /* calls that synced data only (fdatasync, O_DSYNC) */
	__u32 tgid;     /* the first process that synced it */
	__u32 depth;    /* path components filled */
	__u32 truncated; /* the path is deeper than TA_PATH_DEPTH */
	__u32 files;    /* a directory's entry (sync_dirs): the files folded into it */
	__u32 generation; /* the inode's i_generation, which tells a file from a later one given its inode number */
	__u32 _pad;
	__u8 names[TA_PATH_DEPTH][TA_NAME_LEN];
};

/* Synced files that found files full are counted in their directory's
 * entry in sync_dirs (key {ino: the directory's inode, dev, _pad:
 * TA_FILE_DIR}); {0, 0, TA_FILE_DIR} is the entry of those whose
 * directory found it full too, made by user space at load. */
#define TA_FILE_DIR 1

/* Per-syscall statistics of one thread (want_syscalls). */
struct ta_sys_key {
	__u32 tid;
	__u32 nr;
};

struct ta_sys_stats {
	__u64 count;
	__u64 errors;   /* returned -4095..-1 */
	__u64 total_ns;
	__u64 max_ns;
	__u64 slots[TA_MAX_SLOTS]; /* slots[i]: latency in [2^i, 2^(i+1)) ns */
	__u32 tgid;
	__u32 _pad;
};

/* Off-CPU time by thread, category and stacks (want_stacks). */
struct ta_offcpu_key {
	__u32 tgid;
	__u32 tid;
	__u32 cat;
	__s32 kstack;
	__s32 ustack;
	__u32 _pad;
};

struct ta_offcpu {
	__u64 ns;
	__u64 count;
};

/* Per sync kind, in a per-CPU array indexed by TA_SYNC_*. */
struct ta_sync_stats {
	__u64 count;              /* completed calls */
	__u64 total_ns;           /* their summed latency */
	__u64 slots[TA_MAX_SLOTS]; /* slots[i]: latency in [2^i, 2^(i+1)) us; slot 0 from 0 */
	__u64 cat_ns[TA_NUM_CATS]; /* the calls' time by category: on CPU in the kernel, waiting for a CPU, blocked (storage-sync, lock, ...) */
	__u64 split;              /* of the calls, those split by category (the thread had an entry at both ends) */
	__u64 split_ns;           /* and their summed latency */
};

/* A sync call in progress, keyed by tid. */
struct ta_sync_start {
	__u64 ts;
	struct ta_file_key file;
	__u32 kind;
	__u32 datasync;
	__u64 cat_ns[TA_NUM_CATS]; /* the thread's time per category at entry, its running interval closed at ts */
	__u32 has_cats;
	__u32 _pad;
};

#endif /* __TIMEACCT_H */
