// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* timeacct: per-thread wall-clock time accounting for a process tree.
 *
 * Every thread of the tracked processes is, at each moment, running,
 * runnable (waiting for a CPU) or blocked for a reason decided when it goes
 * to sleep: the syscall it is in (read from its saved user registers) and,
 * for uninterruptible sleeps, the kernel functions on its stack. The time
 * between two transitions is added to the category of the state it ends, so
 * a thread's categories add up to the time it was observed.
 *
 * Hooks: sched_switch, sched_waking, sched_wakeup_new, sched_process_fork,
 * sched_process_exit (all tp_btf), and an iter/task program run once to seed
 * threads that exist at attach time. Where the kernel has them, ext4's
 * fsync tracepoints (tp_btf ext4_sync_file_enter/exit) time each sync call
 * (count, total, log2 histogram, per file): they fire only when a file is
 * synced. The syscall tracepoints are not used by default: attaching any of
 * them sends every syscall of every task on the machine down the kernel's
 * slow syscall path. With --syscalls, tp_btf sys_enter/sys_exit count and
 * time every syscall of the tracked threads (per thread and syscall); with
 * --stacks, a thread going to sleep has its kernel and user stacks taken and
 * the sleep's length is added to them.
 *
 * OVERHEAD: every context switch and wake-up on the machine pays one hash
 * lookup per task involved (the tgid filter); those of tracked threads also
 * update their entry, and uninterruptible sleeps of tracked threads take a
 * kernel stack. Measured on the 2-vCPU development VM (BenchmarkSwitchCost,
 * two tracked threads ping-ponging through pipes on one CPU, BPF run-time
 * statistics on): ~330-360 ns per sched_switch run, ~260-300 ns per
 * sched_wakeup run (no longer hooked: the switch-in ends a sleep); a
 * round trip (2 switches) went from ~7.5 us to ~9.5 us,
 * i.e. about +1 us per context switch of a tracked thread. The runs of
 * each program are counted (per-CPU counters) and user space multiplies them
 * by each program's cost, calibrated once per process with the kernel's BPF
 * run-time statistics switched on (they are off while observing: they add
 * two clock reads to every run of every BPF program on the machine).
 *
 * Needs Linux 5.18+ (prev_state argument of sched_switch; bpf_loop 5.17,
 * bpf_task_pt_regs 5.15) with BTF, and x86-64 (syscall numbers, pt_regs).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "timeacct.h"
#include "bits.bpf.h"
#include "path.bpf.h"
#include "reset.bpf.h"
#include "tracked.bpf.h"
#include "threads.bpf.h"

#define PF_EXITING 0x00000004
#define TASK_RUNNING 0x0
#define TASK_INTERRUPTIBLE 0x1
#define TASK_UNINTERRUPTIBLE 0x2
#define __TASK_STOPPED 0x4
#define __TASK_TRACED 0x8

/* FUTEX_WAIT: glibc's mutexes wait here, and Go's idle threads. */
#define FUTEX_WAIT 0
/* FUTEX_WAIT_BITSET: glibc's condition variables and sem_wait wait here. */
#define FUTEX_WAIT_BITSET 9
#define FUTEX_CMD_MASK 127

/* x86-64 syscall numbers (arch/x86/entry/syscalls/syscall_64.tbl). */
#define NR_read 0
#define NR_write 1
#define NR_poll 7
#define NR_pread64 17
#define NR_pwrite64 18
#define NR_readv 19
#define NR_writev 20
#define NR_select 23
#define NR_msync 26
#define NR_pause 34
#define NR_nanosleep 35
#define NR_connect 42
#define NR_accept 43
#define NR_recvfrom 45
#define NR_recvmsg 47
#define NR_wait4 61
#define NR_fsync 74
#define NR_fdatasync 75
#define NR_rt_sigtimedwait 128
#define NR_rt_sigsuspend 130
#define NR_sync 162
#define NR_futex 202
#define NR_clock_nanosleep 230
#define NR_epoll_wait 232
#define NR_waitid 247
#define NR_pselect6 270
#define NR_ppoll 271
#define NR_sync_file_range 277
#define NR_epoll_pwait 281
#define NR_accept4 288
#define NR_preadv 295
#define NR_pwritev 296
#define NR_syncfs 306
#define NR_preadv2 327
#define NR_pwritev2 328
#define NR_epoll_pwait2 441
#define NR_open 2
#define NR_close 3
#define NR_stat 4
#define NR_fstat 5
#define NR_lstat 6
#define NR_access 21
#define NR_sendto 44
#define NR_sendmsg 46
#define NR_socket 41
#define NR_truncate 76
#define NR_ftruncate 77
#define NR_rename 82
#define NR_mkdir 83
#define NR_rmdir 84
#define NR_creat 85
#define NR_link 86
#define NR_unlink 87
#define NR_symlink 88
#define NR_readlink 89
#define NR_chmod 90
#define NR_fchmod 91
#define NR_chown 92
#define NR_io_getevents 208
#define NR_io_submit 209
#define NR_getdents64 217
#define NR_openat 257
#define NR_mkdirat 258
#define NR_newfstatat 262
#define NR_unlinkat 263
#define NR_renameat 264
#define NR_faccessat 269
#define NR_fallocate 285
#define NR_recvmmsg 299
#define NR_sendmmsg 307
#define NR_renameat2 316
#define NR_statx 332
#define NR_io_pgetevents 333
#define NR_io_uring_enter 426
#define NR_openat2 437
#define NR_futex_waitv 449
#define ENOSYS 38

/* Softirq vectors (include/linux/interrupt.h). */
#define TIMER_SOFTIRQ 1
#define BLOCK_SOFTIRQ 4
#define HRTIMER_SOFTIRQ 8
#define PF_KTHREAD 0x00200000

/* Block ops (REQ_OP_*). */
#define REQ_OP_MASK 0xff
#define REQ_OP_READ 0
#define REQ_OP_WRITE 1

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Settings, fixed before load. */
const volatile bool use_stacks = true;   /* refine D-state sleeps by kernel stack */
const volatile bool want_stacks = false; /* off-CPU stacks per category (--stacks) */

/* Set by user space at Stop: detaching takes a few hundred ms here (each
 * link waits for RCU grace periods), and the window ends when this is set,
 * not when the last program is gone. */
__u32 stopped = 0;

/* When the window opened (CLOCK_MONOTONIC): set by user space once every
 * probe has started and the workload is about to be let go, or at Start.
 * Before it the threads' states are followed but their time is not
 * counted; an interval that spans it counts from it. */
__u64 window_ns = ~0ULL;

/* An all-zero entry to insert from, so no program builds one on its stack. */
const struct ta_thread zero_thread = {};


/* Slots of threads never used yet are handed out from next_slot; a slot
 * freed goes to free_slots, which hands it out again. */
__u64 next_slot = 1;

struct {
	__uint(type, BPF_MAP_TYPE_QUEUE);
	__uint(max_entries, TA_THREAD_SLOTS);
	__type(value, __u32);
} free_slots SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32); /* tgid */
	__type(value, struct ta_agg);
} exited_agg SEC(".maps");

const struct ta_agg zero_agg = {};

/* Threads of the tree alive now, and the most alive at once (a racy max is
 * fine: it is a statistic). */
__u64 alive = 0;
__u64 peak = 0;

/* Entries in the threads map. Exited threads keep their own entry (the
 * report lists them) until the map holds FOLD_ABOVE entries; from then on
 * each exiting thread is folded into its process's aggregate, so thread
 * churn cannot fill the map (16384 entries). */
__s64 entries = 0;
#define FOLD_ABOVE 4096

static __always_inline void count_alive(__s64 delta)
{
	__u64 now_alive = __sync_add_and_fetch(&alive, delta);
	if (delta > 0 && now_alive > peak)
		peak = now_alive;
}

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ta_ranges);
} ranges SEC(".maps");

/* The wait-for edges (ta_edge_key), and the names of the wakers outside
 * the workload (kernel threads, other processes), by pid. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	/* Preallocated: edges are added in sched_switch,
	 * with interrupts off, where an allocating map fails when its per-CPU
	 * cache runs dry (8 threads exiting at once lost 2-3 edges here). */
	__uint(max_entries, 131072);
	__type(key, struct ta_edge_key);
	__type(value, struct ta_edge);
} edges SEC(".maps");

struct waker_name {
	__u32 tgid;
	__u32 kthread;
	__u8 comm[TA_COMM_LEN];
	__u32 ppid;  /* its process's parent (a server's backends: the postmaster) */
	__u32 _pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct waker_name);
} waker_names SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ta_cpu_ctx);
} cpu_ctx SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ta_counters);
} counters SEC(".maps");

struct stack_buf {
	__u64 ips[TA_MAX_FRAMES];
	__u32 best; /* TA_CLASS_* of the frames seen so far */
	__u32 _pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct stack_buf);
} stack_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, TA_NUM_SYNC);
	__type(key, __u32);
	__type(value, struct ta_sync_stats);
} sync_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32); /* tid */
	__type(value, struct ta_sync_start);
} sync_start SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 8192); /* set to 1 at load without want_stacks */
	__uint(key_size, sizeof(__u32));
	__uint(value_size, TA_MAX_FRAMES * 2 * sizeof(__u64));
} stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct ta_offcpu_key);
	__type(value, struct ta_offcpu);
} offcpu SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct ta_file_key);
	__type(value, struct ta_file);
} files SEC(".maps");

const struct ta_file zero_file = {};

/* Directories' entries of synced files that found files full
 * (TA_FILE_DIR), allocated as they come; sync_folded counts each file
 * once in its directory's files. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 1024);
	__type(key, struct ta_file_key);
	__type(value, struct ta_file);
} sync_dirs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 131072);
	__type(key, struct ta_file_key);
	__type(value, __u8);
} sync_folded SEC(".maps");

/* Lock waits by what they wait on (ta_lock_key), the files they were on,
 * and the stacks walked for them: a stack map of their own, as the
 * off-CPU stacks' is there only with --stacks. 4096 distinct stacks keep
 * a run of minutes of one workload's lock sites; a stack it cannot keep
 * is counted by its key (a negative id). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, struct ta_lock_key);
	__type(value, struct ta_lock);
} locks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct ta_file_key);
	__type(value, struct ta_lock_file);
} lock_files SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 4096);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, TA_MAX_FRAMES * 2 * sizeof(__u64));
} lock_stacks SEC(".maps");

const struct ta_lock_file zero_lock_file = {};

/* TA_LOCK_WALK_NS: a thread's lock waits have their stacks walked at most
 * once every 50 ms. A walk (bpf_get_stackid, kernel and user) cost 15-30
 * us here (BenchmarkNamedCausesCost: the switch program's time per
 * operation less the same without the walks, over the walks), so 16
 * threads contending on one file, walked at every wait, would spend a CPU
 * on it; at 20 walks a second per thread they spend 0.6% of one at most.
 * The waits between are counted with their file or futex, without
 * stacks: the kind of a wait is named by the walks of its kind. */
#define TA_LOCK_WALK_NS 50000000ULL

/* TA_LOCK_WALK_GAP_NS: and the machine's lock waits have theirs walked at
 * most once every 20 ms, 50 walks a second (0.15% of a CPU at 30 us a
 * walk) however many threads wait. Regression: MariaDB under sysbench
 * made 250 lock waits a second over its 30-odd threads, nearly all walked
 * (7.5 ms of CPU a second, 150 ns of every switch on average). Each kind
 * of lock wait needs one walk to be named; a kind whose waits are
 * frequent is walked soon. */
#define TA_LOCK_WALK_GAP_NS 20000000ULL
__u64 lock_walk_next = 0;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct ta_sys_key);
	__type(value, struct ta_sys_stats);
} sys_stats SEC(".maps");

const struct ta_sys_stats zero_sys = {};

/* The syscall in progress, per task (--syscalls). Task storage is found
 * from the task itself, so a thread that has none (every untracked one)
 * costs a pointer test instead of a hash lookup. */
struct ta_sys_start {
	__u64 ts;
	__s64 nr;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct ta_sys_start);
} sys_start SEC(".maps");

TASK_STORAGE_RESET(sys_start)

static __always_inline struct ta_counters *get_counters(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&counters, &zero);
}

/* count_run counts a run of program prog; tracked says it concerned a
 * tracked thread. */
static __always_inline struct ta_counters *count_run(__u32 prog)
{
	struct ta_counters *c = get_counters();

	if (c)
		c->runs[prog % TA_NUM_PROGS]++;
	return c;
}

static __always_inline void count_tracked(struct ta_counters *c, __u32 prog)
{
	if (c)
		c->tracked[prog % TA_NUM_PROGS]++;
}


/* slot_free zeroes slot and hands it out again. */
static __always_inline void slot_free(__u32 slot)
{
	bpf_map_update_elem(&threads, &slot, &zero_thread, BPF_ANY);
	bpf_map_push_elem(&free_slots, &slot, BPF_ANY);
}

/* slot_new is a slot for a new entry, 0 when every one is taken. */
static __always_inline __u32 slot_new(void)
{
	__u32 slot;
	__u64 next;

	if (bpf_map_pop_elem(&free_slots, &slot) == 0)
		return slot;
	if (next_slot >= TA_THREAD_SLOTS)
		return 0;
	next = __sync_fetch_and_add(&next_slot, 1);
	return next < TA_THREAD_SLOTS ? (__u32)next : 0;
}

/* get_or_create returns tid's entry, creating it (state, last = now) if
 * missing. A full map is counted as dropped. */
static __always_inline struct ta_thread *get_or_create(struct task_struct *task, __u32 state, __u64 now)
{
	__u32 tid = task->pid, slot, shift = (tid & 3) * 16;
	struct ta_thread *t = thread_of(tid);
	bool published = false;
	__u64 *w, old;

	if (t)
		return t;
	/* An exiting thread's entry was folded away at its exit; its last
	 * wake-ups and switches must not create it again. */
	if (task->flags & PF_EXITING)
		return NULL;
	w = thread_idx_word(tid);
	slot = w ? slot_new() : 0;
	if (!slot) {
		/* Every slot is taken, or a tid past the index (pid_max
		 * raised since load). */
		struct ta_counters *c = get_counters();

		if (c)
			c->dropped++;
		return NULL;
	}
	t = bpf_map_lookup_elem(&threads, &slot);
	if (!t || !w)
		return NULL;
	t->tid = tid;
	t->tgid = task->tgid;
	t->state = state;
	t->cat = TA_CAT_OTHER;
	t->first_ns = now;
	t->last_ns = now;
	t->kstack = -1;
	t->ustack = -1;
	bpf_probe_read_kernel_str(t->comm, sizeof(t->comm), task->comm);
	/* Published once made, unless another CPU made one first. The word
	 * holds three other threads' slots too: a compare-and-swap that
	 * failed because one of theirs changed is tried again. */
	for (int i = 0; i < 4; i++) {
		old = *w;
		if ((old >> shift) & 0xffff)
			break; /* made by another CPU */
		if (__sync_val_compare_and_swap(w, old, old | ((__u64)slot << shift)) == old) {
			published = true;
			break;
		}
	}
	if (!published) {
		slot_free(slot);
		return thread_of(tid);
	}
	__sync_fetch_and_add(&entries, 1);
	/* Alive from its first sight: a thread forked in the window, or one
	 * that was there at attach, whether the seed or a switch saw it
	 * first. Regression: threads a switch saw before the seed were never
	 * counted, and PostgreSQL's 14 processes read "at most 6 alive". */
	count_alive(1);
	return t;
}

/* thread_free frees tid's entry. */
static __always_inline void thread_free(__u32 tid)
{
	__u64 *w = thread_idx_word(tid);
	__u32 shift = (tid & 3) * 16, slot;
	__u64 old;

	if (!w)
		return;
	old = __sync_fetch_and_and(w, ~(0xffffULL << shift));
	slot = (old >> shift) & 0xffff;
	if (!slot)
		return;
	slot_free(slot);
	__sync_fetch_and_add(&entries, -1);
}

/* in_syscall says whether regs, a task's user-mode entry frame, are a
 * syscall's: the syscall entry stores -ENOSYS in ax until the call
 * returns, where an exception (a page fault) or an interrupt leaves the
 * user's rax there and puts its error code (>= 0) or ~vector (< 0) in
 * orig_ax. Regression: a user page fault's error code 7 (a write to a
 * present page) read as syscall 7, poll, and the fault as a sleep. */
static __always_inline bool in_syscall(struct pt_regs *regs)
{
	return (long)regs->ax == -ENOSYS && (long)regs->orig_ax >= 0;
}

/* TA_NR_TABLE: the syscall numbers the tables below cover (x86-64's are
 * below 512). */
#define TA_NR_TABLE 512

/* act_by_nr is each syscall's TA_ACT_* plus 1 (0: TA_ACT_OTHER). A table
 * read, not a switch: the switch was a tree of compares on every
 * switch-out of a tracked thread, and act_of with classify's switch cost
 * about 60 ns a run (BPF statistics, a pipe ping-pong). */
#define A(act) ((act) + 1)
static const __u8 act_by_nr[TA_NR_TABLE] = {
	[NR_read] = A(TA_ACT_READ), [NR_pread64] = A(TA_ACT_READ), [NR_readv] = A(TA_ACT_READ),
	[NR_preadv] = A(TA_ACT_READ), [NR_preadv2] = A(TA_ACT_READ),
	[NR_write] = A(TA_ACT_WRITE), [NR_pwrite64] = A(TA_ACT_WRITE), [NR_writev] = A(TA_ACT_WRITE),
	[NR_pwritev] = A(TA_ACT_WRITE), [NR_pwritev2] = A(TA_ACT_WRITE),
	[NR_fsync] = A(TA_ACT_SYNC), [NR_fdatasync] = A(TA_ACT_SYNC), [NR_sync_file_range] = A(TA_ACT_SYNC),
	[NR_msync] = A(TA_ACT_SYNC), [NR_syncfs] = A(TA_ACT_SYNC), [NR_sync] = A(TA_ACT_SYNC),
	[NR_open] = A(TA_ACT_OPEN), [NR_openat] = A(TA_ACT_OPEN), [NR_openat2] = A(TA_ACT_OPEN),
	[NR_creat] = A(TA_ACT_OPEN), [NR_close] = A(TA_ACT_OPEN), [NR_stat] = A(TA_ACT_OPEN),
	[NR_fstat] = A(TA_ACT_OPEN), [NR_lstat] = A(TA_ACT_OPEN), [NR_newfstatat] = A(TA_ACT_OPEN),
	[NR_statx] = A(TA_ACT_OPEN), [NR_access] = A(TA_ACT_OPEN), [NR_faccessat] = A(TA_ACT_OPEN),
	[NR_rename] = A(TA_ACT_OPEN), [NR_renameat] = A(TA_ACT_OPEN), [NR_renameat2] = A(TA_ACT_OPEN),
	[NR_mkdir] = A(TA_ACT_OPEN), [NR_mkdirat] = A(TA_ACT_OPEN), [NR_rmdir] = A(TA_ACT_OPEN),
	[NR_link] = A(TA_ACT_OPEN), [NR_unlink] = A(TA_ACT_OPEN), [NR_unlinkat] = A(TA_ACT_OPEN),
	[NR_symlink] = A(TA_ACT_OPEN), [NR_readlink] = A(TA_ACT_OPEN), [NR_chmod] = A(TA_ACT_OPEN),
	[NR_fchmod] = A(TA_ACT_OPEN), [NR_chown] = A(TA_ACT_OPEN), [NR_getdents64] = A(TA_ACT_OPEN),
	[NR_truncate] = A(TA_ACT_OPEN), [NR_ftruncate] = A(TA_ACT_OPEN), [NR_fallocate] = A(TA_ACT_OPEN),
	[NR_futex] = A(TA_ACT_FUTEX), [NR_futex_waitv] = A(TA_ACT_FUTEX),
	[NR_poll] = A(TA_ACT_POLL), [NR_ppoll] = A(TA_ACT_POLL), [NR_select] = A(TA_ACT_POLL),
	[NR_pselect6] = A(TA_ACT_POLL), [NR_epoll_wait] = A(TA_ACT_POLL), [NR_epoll_pwait] = A(TA_ACT_POLL),
	[NR_epoll_pwait2] = A(TA_ACT_POLL),
	[NR_nanosleep] = A(TA_ACT_SLEEP), [NR_clock_nanosleep] = A(TA_ACT_SLEEP), [NR_pause] = A(TA_ACT_SLEEP),
	[NR_rt_sigsuspend] = A(TA_ACT_SLEEP), [NR_rt_sigtimedwait] = A(TA_ACT_SLEEP),
	[NR_wait4] = A(TA_ACT_CHILD), [NR_waitid] = A(TA_ACT_CHILD),
	[NR_socket] = A(TA_ACT_NET), [NR_connect] = A(TA_ACT_NET), [NR_accept] = A(TA_ACT_NET),
	[NR_accept4] = A(TA_ACT_NET), [NR_sendto] = A(TA_ACT_NET), [NR_recvfrom] = A(TA_ACT_NET),
	[NR_sendmsg] = A(TA_ACT_NET), [NR_recvmsg] = A(TA_ACT_NET), [NR_sendmmsg] = A(TA_ACT_NET),
	[NR_recvmmsg] = A(TA_ACT_NET),
	[NR_io_submit] = A(TA_ACT_AIO), [NR_io_getevents] = A(TA_ACT_AIO), [NR_io_pgetevents] = A(TA_ACT_AIO),
	[NR_io_uring_enter] = A(TA_ACT_AIO),
};
#undef A

/* How classify reads a syscall a task sleeps in (wait_by_nr): */
#define TA_W_NONE 0  /* by its state and kernel stack */
#define TA_W_SYNC 1  /* storage-sync */
#define TA_W_FUTEX 2 /* lock, or sleep for FUTEX_WAIT_BITSET */
#define TA_W_SLEEP 3 /* sleep: waiting for an event, a peer, a child, time */
#define TA_W_READ 4  /* a read: storage-read in D state, else a pipe, socket or terminal */
#define TA_W_WRITE 5 /* a write: likewise */
static const __u8 wait_by_nr[TA_NR_TABLE] = {
	[NR_fsync] = TA_W_SYNC, [NR_fdatasync] = TA_W_SYNC, [NR_sync_file_range] = TA_W_SYNC,
	[NR_msync] = TA_W_SYNC, [NR_syncfs] = TA_W_SYNC, [NR_sync] = TA_W_SYNC,
	[NR_futex] = TA_W_FUTEX,
	[NR_poll] = TA_W_SLEEP, [NR_ppoll] = TA_W_SLEEP, [NR_select] = TA_W_SLEEP, [NR_pselect6] = TA_W_SLEEP,
	[NR_epoll_wait] = TA_W_SLEEP, [NR_epoll_pwait] = TA_W_SLEEP, [NR_epoll_pwait2] = TA_W_SLEEP,
	[NR_nanosleep] = TA_W_SLEEP, [NR_clock_nanosleep] = TA_W_SLEEP, [NR_wait4] = TA_W_SLEEP,
	[NR_waitid] = TA_W_SLEEP, [NR_pause] = TA_W_SLEEP, [NR_rt_sigsuspend] = TA_W_SLEEP,
	[NR_rt_sigtimedwait] = TA_W_SLEEP, [NR_accept] = TA_W_SLEEP, [NR_accept4] = TA_W_SLEEP,
	[NR_recvfrom] = TA_W_SLEEP, [NR_recvmsg] = TA_W_SLEEP, [NR_connect] = TA_W_SLEEP,
	[NR_read] = TA_W_READ, [NR_pread64] = TA_W_READ, [NR_readv] = TA_W_READ, [NR_preadv] = TA_W_READ,
	[NR_preadv2] = TA_W_READ,
	[NR_write] = TA_W_WRITE, [NR_pwrite64] = TA_W_WRITE, [NR_writev] = TA_W_WRITE, [NR_pwritev] = TA_W_WRITE,
	[NR_pwritev2] = TA_W_WRITE,
};

/* act_of is what the task was doing, from its user-mode entry frame. */
static __always_inline __u32 act_of(struct pt_regs *regs)
{
	long nr = (long)regs->orig_ax;
	__u32 a;

	/* Not in a syscall: a user page fault's error code has the user bit
	 * (4) and at most the write (2), present (1) and instruction-fetch
	 * (16) bits; a device interrupt's frame holds its vector (>= 32), a
	 * system interrupt's (timer, IPI) -1: user code interrupted. */
	if (!in_syscall(regs))
		return nr >= 0 && (nr & ~0x13L) == 4 ? TA_ACT_FAULT : TA_ACT_USER;
	if (nr >= TA_NR_TABLE)
		return TA_ACT_OTHER;
	a = act_by_nr[nr & (TA_NR_TABLE - 1)];
	/* Bounded for the verifier, which indexes by it (samples). */
	if (a == 0 || a > TA_ACT_OTHER + 1)
		return TA_ACT_OTHER;
	return a - 1;
}

/* Edges inserted into the edges map: user space, which takes out those of
 * threads gone (their time kept under their process, tid 0), knows from it
 * how full the map is without walking it. */
__u64 edge_inserts = 0;

/* edge_flush adds the thread's accumulated edge in slot i to the edges
 * map. */
static __always_inline void edge_flush(struct ta_thread *t, int i)
{
	struct ta_edge *e;

	if (i < 0 || i >= TA_EDGE_SLOTS)
		return;
	if (!t->edge[i].count)
		return;
	e = bpf_map_lookup_elem(&edges, &t->edge[i].k);
	if (!e) {
		struct ta_edge zero = {};

		if (bpf_map_update_elem(&edges, &t->edge[i].k, &zero, BPF_NOEXIST) == 0)
			__sync_fetch_and_add(&edge_inserts, 1);
		e = bpf_map_lookup_elem(&edges, &t->edge[i].k);
	}
	if (e) {
		__sync_fetch_and_add(&e->ns, t->edge[i].ns);
		__sync_fetch_and_add(&e->count, t->edge[i].count);
	} else {
		struct ta_counters *c = get_counters();

		if (c)
			c->edge_dropped++;
	}
	t->edge[i].ns = 0;
	t->edge[i].count = 0;
}

static __always_inline bool edge_is(struct ta_thread *t, int i, __u32 act, __u32 cat, __u32 kind, __u32 id)
{
	struct ta_edge_key *k = &t->edge[i].k;

	return t->edge[i].count && k->act == act && k->cat == cat && k->kind == kind && k->id == id;
}

/* edge_swap exchanges slots i and i - 1. */
static __always_inline void edge_swap(struct ta_thread *t, int i)
{
	struct ta_edge_slot s = t->edge[i];

	t->edge[i] = t->edge[i - 1];
	t->edge[i - 1] = s;
}

/* edge_add adds an interval of d ns to the thread's edge (act, cat, kind,
 * id). A thread repeats the same waits (a worker reading the same disk, a
 * stage waiting on the same peer), alternating with run-queue waits, so
 * the edge is kept in its entry, in a slot of its kind, and goes to the
 * map only when an interval's key is in no slot of its kind: one hash
 * update per change, not per wait (a ping-pong's every interval, with one
 * slot). A blocked interval has one slot (the last). Run-queue waits have
 * TA_EDGE_CPU_SLOTS: they end with the process that had the CPU and are
 * keyed by what the thread did (a server's thread waits for its own
 * process's CPUs and its clients' in turn, woken from a read, a futex, a
 * poll). A hit moves its slot one place forward, so the frequent keys
 * stay in front and a new key takes the last slot's place.
 * Regression: with one slot, MariaDB under sysbench flushed 0.6 edges a
 * switch (30,000 a second, 97% of them run-queue waits), each a hash
 * lookup and two atomic adds: 300 of the switch program's 850 ns. */
/* edge_cpu_slot is the slot of t's run-queue wait (act, kind, id), made
 * free for it if no slot holds its key (see edge_add). A global function,
 * which the verifier checks once, on its own: inlined, its search took
 * sched_switch from 38,430 instructions verified to 48,103 (with one slot
 * against four), as it is inlined at each of close_interval_by's sites. */
__noinline int edge_cpu_slot(struct ta_thread *t, __u32 act, __u32 kind, __u32 id)
{
	int i = TA_EDGE_CPU_SLOTS;

	if (!t)
		return -1;
#pragma unroll
	for (int j = 0; j < TA_EDGE_CPU_SLOTS; j++) {
		if (i == TA_EDGE_CPU_SLOTS && (edge_is(t, j, act, TA_CAT_CPU_WAIT, kind, id) || !t->edge[j].count))
			i = j;
	}
	if (i == TA_EDGE_CPU_SLOTS) {
		struct ta_counters *c = get_counters();

		if (c)
			c->edge_cpu_evictions++;
		i = TA_EDGE_CPU_SLOTS - 1;
		edge_flush(t, i);
	} else if (i > 0 && t->edge[i].count) {
		edge_swap(t, i);
		i--;
	}
	return i;
}

static __always_inline void edge_add(struct ta_thread *t, __u32 act, __u32 cat, __u32 kind, __u32 id, __u64 d)
{
	struct ta_edge_key *k;
	int i = TA_EDGE_CPU_SLOTS;

	if (cat != TA_CAT_CPU_WAIT) {
		if (t->edge[i].count && !edge_is(t, i, act, cat, kind, id))
			edge_flush(t, i);
	} else {
		i = edge_cpu_slot(t, act, kind, id);
		if (i < 0 || i >= TA_EDGE_CPU_SLOTS)
			return;
	}
	k = &t->edge[i].k;
	if (!t->edge[i].count) {
		k->tid = t->tid;
		k->tgid = t->tgid;
		k->gen = (__u32)t->first_ns;
		k->act = act;
		k->cat = cat;
		k->kind = kind;
		k->id = id;
	}
	t->edge[i].ns += d;
	/* A 32-bit count: sent to the map before it wraps (a thread that
	 * waits the same way 2^31 times, a day at 25,000 a second). */
	if (++t->edge[i].count >= (1U << 31))
		edge_flush(t, i);
}

/* add_offcpu adds a closed sleep of d ns to the stacks it began with. */
static __always_inline void add_offcpu(struct ta_thread *t, __u32 cat, __u64 d)
{
	struct ta_offcpu_key k = {
		.tgid = t->tgid, .tid = t->tid, .cat = cat, .kstack = t->kstack, .ustack = t->ustack,
	};
	struct ta_offcpu zero = {};
	struct ta_offcpu *v = lookup_or_init(&offcpu, &k, &zero);

	if (!v) {
		struct ta_counters *c = get_counters();
		if (c)
			c->dropped++;
		return;
	}
	__sync_fetch_and_add(&v->ns, d);
	__sync_fetch_and_add(&v->count, 1);
}

/* lock_key is the kind of lock wait t's open one is (ta_lock_key). */
static __always_inline struct ta_lock_key lock_key(struct ta_thread *t)
{
	struct ta_lock_key k = {
		.obj = t->lock_obj, .tgid = t->tgid, .dev = t->lock_dev, .kstack = t->lock_kstack, .act = t->act, .tid = t->tid,
	};

	/* A wait lock_begin did not see begin (it began before the window,
	 * or the thread was first seen asleep): nothing known of it. */
	if (!t->lock_set) {
		k.obj = 0;
		k.dev = 0;
		k.kstack = TA_LOCK_NOT_WALKED;
	}
	return k;
}

const struct ta_lock zero_lock = {.ustack = TA_LOCK_NOT_WALKED, .hstack = TA_LOCK_NOT_WALKED};

/* lock_end adds a lock wait of d ns to its kind, with the stacks walked
 * for it where the kind has none yet. A subprogram, not inlined:
 * close_interval_by inlines it at each of its eight call sites, and the
 * verifier took 0.25 s more per load with eight copies of its map update
 * (timeacct's Start: 0.41-0.56 s against 0.17-0.25 s). */
static __noinline void lock_end(struct ta_thread *t, __u64 d)
{
	struct ta_lock_key k = lock_key(t);
	struct ta_lock *l = lookup_or_init(&locks, &k, &zero_lock);

	if (!l) {
		struct ta_counters *c = get_counters();

		if (c)
			c->lock_dropped++;
		return;
	}
	__sync_fetch_and_add(&l->ns, d);
	__sync_fetch_and_add(&l->count, 1);
	if (t->lock_set && t->lock_ustack != TA_LOCK_NOT_WALKED && l->ustack < 0)
		l->ustack = t->lock_ustack;
	if (t->lock_set && t->lock_hstack != TA_LOCK_NOT_WALKED && l->hstack < 0)
		l->hstack = t->lock_hstack;
}

/* lock_wants says whether the kind of t's open lock wait has no good stack
 * of the waiter's user code (user) or of the holder's (!user) yet. */
static __always_inline bool lock_wants(struct ta_thread *t, bool user)
{
	struct ta_lock_key k = lock_key(t);
	struct ta_lock *l = bpf_map_lookup_elem(&locks, &k);

	return !l || (user ? l->ustack : l->hstack) < 0;
}

/* close_interval adds [last, now] to the category of the current state,
 * and a blocked or runnable interval to the thread's edges: ended by the
 * waker (kind, id; TA_WAKER_NONE when no wake-up was seen). */
static __always_inline void close_interval_by(struct ta_thread *t, __u64 now, __u32 kind, __u32 id)
{
	__u32 cat;

	if (t->state == TA_STATE_RUNNING)
		cat = TA_CAT_CPU;
	else if (t->state == TA_STATE_RUNNABLE)
		cat = TA_CAT_CPU_WAIT;
	else
		cat = t->cat;
	if (t->last_ns == 0) {
		/* Seen between another CPU's insert and its initialisation. */
		t->first_ns = t->first_ns ?: now;
		t->last_ns = now;
		return;
	}
	if (now > t->last_ns && now > window_ns) {
		__u64 d = now - (t->last_ns > window_ns ? t->last_ns : window_ns);

		t->ns[cat & (TA_NUM_CATS - 1)] += d;
		if (want_stacks && t->state == TA_STATE_BLOCKED)
			add_offcpu(t, cat, d);
		if (t->state == TA_STATE_BLOCKED && cat == TA_CAT_LOCK)
			lock_end(t, d);
		/* A blocked wait's waker; a run-queue wait's, the task that had
		 * the CPU until it got it (the switch-in's prev). */
		if (t->state != TA_STATE_RUNNING)
			edge_add(t, t->act, cat, kind, id, d);
	}
	t->last_ns = now;
}

static __always_inline void close_interval(struct ta_thread *t, __u64 now)
{
	close_interval_by(t, now, TA_WAKER_NONE, 0);
}

/* frame_class is bpf_loop's callback for frame idx of the stack in
 * stack_scratch: bpf_loop has the verifier check the body once instead of
 * once per frame. The best class so far lives in the map value, not on the
 * stack: a value the verifier knows exactly makes it follow each compare
 * separately (the first version, with best on the stack, took 350-500k
 * verified instructions of the 1M limit). */
static long frame_class(__u32 idx, void *unused)
{
	__u32 zero = 0;
	struct stack_buf *buf;
	struct ta_ranges *r;
	__u64 ip;

	buf = bpf_map_lookup_elem(&stack_scratch, &zero);
	r = bpf_map_lookup_elem(&ranges, &zero);
	if (!buf || !r)
		return 1;
	ip = buf->ips[idx & (TA_MAX_FRAMES - 1)];
	for (int j = 0; j < TA_MAX_RANGES; j++) {
		__u32 cls = r->class[j];
		if (cls == TA_CLASS_NONE)
			break;
		if (ip >= r->start[j] && ip < r->end[j] && (buf->best == TA_CLASS_NONE || cls < buf->best))
			buf->best = cls;
	}
	return 0;
}

/* stack_class takes the current kernel stack and returns the highest-priority
 * TA_CLASS_* whose range contains a frame. */
static __always_inline __u32 stack_class(void *ctx)
{
	__u32 zero = 0;
	struct stack_buf *buf;
	long n;

	buf = bpf_map_lookup_elem(&stack_scratch, &zero);
	if (!buf)
		return TA_CLASS_NONE;
	buf->best = TA_CLASS_NONE;
	n = bpf_get_stack(ctx, buf->ips, sizeof(buf->ips), 0);
	if (n <= 0)
		return TA_CLASS_NONE;
	n /= sizeof(__u64);
	if (n > TA_MAX_FRAMES)
		n = TA_MAX_FRAMES;
	bpf_loop(n, frame_class, NULL, 0);
	return buf->best;
}

/* wait_nr is the syscall number a task's entry frame regs shows (act is
 * act_of(regs)), -1 for a user page fault, -2 for neither, as for an
 * io_uring worker (io-wq), which has no user-mode entry frame of its own:
 * its wait is told by its kernel stack alone. Regression: an io-wq
 * worker's every wait in D state read as storage-read, its writes and
 * fsyncs included. */
static __always_inline long wait_nr(struct pt_regs *regs, __u32 act)
{
	return in_syscall(regs) ? (long)regs->orig_ax : act == TA_ACT_FAULT ? -1 : -2;
}

static __always_inline __u32 wait_of(long nr)
{
	return nr >= 0 && nr < TA_NR_TABLE ? wait_by_nr[nr & (TA_NR_TABLE - 1)] : TA_W_NONE;
}

/* kstack_decides says whether classify reads the kernel stack of a task
 * going to sleep in state with entry frame regs (act is act_of(regs)): an
 * uninterruptible sleep its syscall alone does not classify. */
static __always_inline bool kstack_decides(struct pt_regs *regs, __u32 act, __u32 state)
{
	__u32 w = wait_of(wait_nr(regs, act));

	return (state & TASK_UNINTERRUPTIBLE) && !(state & (__TASK_STOPPED | __TASK_TRACED)) &&
	       w != TA_W_SYNC && w != TA_W_FUTEX && w != TA_W_SLEEP;
}

/* classify decides what a task going to sleep in state (not TASK_RUNNING)
 * waits for; regs is its user-mode entry frame (bpf_task_pt_regs), act
 * act_of(regs), and cls the class of its kernel stack (stack_class) where
 * kstack_decides, else TA_CLASS_NONE (no stack read). */
static __always_inline __u32 classify(struct pt_regs *regs, __u32 act, __u32 state, struct ta_thread *t, __u32 cls)
{
	long nr = wait_nr(regs, act);
	__u32 w = wait_of(nr);
	bool dstate = state & TASK_UNINTERRUPTIBLE;

	if (state & (__TASK_STOPPED | __TASK_TRACED))
		return TA_CAT_OTHER;

	switch (w) {
	case TA_W_SYNC:
		return TA_CAT_STORAGE_SYNC;
	case TA_W_FUTEX:
		/* A FUTEX_WAIT for the word to leave 0 waits for an event, not
		 * a lock: a held lock's word is not 0 (glibc's mutexes wait on
		 * 2), an event's flag is 0 until set. Go parks its idle
		 * threads so (runtime.notesleep), and a Go program that slept
		 * on timers read "lock-bound" before. */
		if (((long)regs->si & FUTEX_CMD_MASK) == FUTEX_WAIT_BITSET ||
		    (nr == NR_futex && ((long)regs->si & FUTEX_CMD_MASK) == FUTEX_WAIT && (__u32)regs->dx == 0)) {
			if (t)
				t->futex_sleep_blocks++;
			return TA_CAT_SLEEP;
		}
		if (t)
			t->futex_lock_blocks++;
		return TA_CAT_LOCK;
	case TA_W_SLEEP:
		return TA_CAT_SLEEP;
	}

	if (!dstate) /* pipes, sockets, terminals */
		return w == TA_W_READ || w == TA_W_WRITE ? TA_CAT_SLEEP : TA_CAT_OTHER;

	if (nr == -1 || w == TA_W_READ) /* -1: not in a syscall: a page fault */
		return cls == TA_CLASS_LOCK ? TA_CAT_LOCK : TA_CAT_STORAGE_READ;
	if (w == TA_W_WRITE) {
		if (cls == TA_CLASS_LOCK)
			return TA_CAT_LOCK;
		if (cls == TA_CLASS_SYNC)
			return TA_CAT_STORAGE_SYNC; /* O_SYNC / O_DSYNC */
		return TA_CAT_STORAGE_WRITE;
	}
	switch (cls) {
	case TA_CLASS_LOCK:
		return TA_CAT_LOCK;
	case TA_CLASS_SYNC:
		return TA_CAT_STORAGE_SYNC;
	case TA_CLASS_WRITE:
		return TA_CAT_STORAGE_WRITE;
	case TA_CLASS_READ:
		return TA_CAT_STORAGE_READ;
	}
	return TA_CAT_OTHER;
}

/* rq_of is task p's run queue, read through its CFS run queue, or NULL
 * (the idle task has none; a kernel without CFS group scheduling has no
 * sched_entity.cfs_rq). */
static __always_inline struct rq *rq_of(struct task_struct *p)
{
	struct cfs_rq *cfs;

	if (!bpf_core_field_exists(p->se.cfs_rq))
		return NULL;
	cfs = p->se.cfs_rq;
	return cfs ? cfs->rq : NULL;
}

/* this_rq_of is this CPU's run queue, read through the CFS run queue of
 * task a, else of b (the idle task has none), or NULL. */
static __always_inline struct rq *this_rq_of(struct task_struct *a, struct task_struct *b)
{
	int cpu = (int)bpf_get_smp_processor_id();
	struct rq *rq;

	rq = rq_of(a);
	if (rq && rq->cpu == cpu)
		return rq;
	rq = rq_of(b);
	if (rq && rq->cpu == cpu)
		return rq;
	return NULL;
}

/* rq_clocks reads from rq, this CPU's run queue (this_rq_of), how much of
 * its clock its task clock has not had (the steal and interrupt time taken
 * off what tasks are charged) and the steal in it. false when they cannot
 * be read here. */
static __always_inline bool rq_clocks(struct rq *rq, __u64 *unch, __u64 *steal)
{
	__u64 clock, clock_task;

	if (!rq)
		return false;
	clock = rq->clock;
	clock_task = rq->clock_task;
	if (clock < clock_task)
		return false;
	*unch = clock - clock_task;
	*steal = 0;
	if (bpf_core_field_exists(rq->prev_steal_time_rq))
		*steal = rq->prev_steal_time_rq;
	return true;
}

/* charge_out adds to t what its run queue did not charge it since its
 * switch-in (rq_clocks), at its switch-out or exit. */
static __always_inline void charge_out(struct ta_thread *t, struct rq *rq)
{
	__u64 u, st;

	if (t->rq_in && rq_clocks(rq, &u, &st) && u >= t->rq_unch_in) {
		u -= t->rq_unch_in;
		t->uncharged_ns += u;
		/* The steal taken off the task clock is at most what the
		 * clock advanced: update_rq_clock_task clamps it to that and
		 * still moves prev_steal_time_rq to the hypervisor's whole
		 * count (14.60 ms of "steal" for 14.50 ms uncharged in a test
		 * here). */
		if (st >= t->rq_steal_in)
			t->steal_ns += st - t->rq_steal_in < u ? st - t->rq_steal_in : u;
	}
	t->rq_in = 0;
}

/* cpu_ctx_get is this CPU's context markers. */
static __always_inline struct ta_cpu_ctx *cpu_ctx_get(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&cpu_ctx, &zero);
}

/* count_unseen counts the switches this CPU's run queue (rq) made since
 * the last run of handle_switch here that it did not run for: the
 * tracepoint does not fire for every switch on every kernel (on the
 * Firecracker guests this was made on, a switch away from a thread of its
 * init process, the sandbox's agent, fires none; ftrace sees none either). */
static __always_inline void count_unseen(struct rq *rq, struct ta_counters *c)
{
	struct ta_cpu_ctx *m = cpu_ctx_get();
	__u64 n;

	if (!m || !rq)
		return;
	n = rq->nr_switches;
	if (m->nr_switches && n > m->nr_switches + 1 && c)
		c->unseen_switches += n - m->nr_switches - 1;
	m->nr_switches = n;
}

/* unseen_run is how long task, switched out now, has been on this CPU,
 * from the kernel's own record of its arrival (sched_info.last_arrival,
 * on the run queue's clock, which the scheduler updated for this switch):
 * for a thread whose switch-in was not seen. 0 when it cannot be read. */
static __always_inline __u64 unseen_run(struct rq *rq, struct task_struct *task)
{
	__u64 clock, arrival;

	if (!rq || !bpf_core_field_exists(task->sched_info.last_arrival))
		return 0;
	clock = rq->clock;
	arrival = task->sched_info.last_arrival;
	return arrival && clock > arrival ? clock - arrival : 0;
}

/* kernel_wait is how long task has waited on rq, its run queue, by the
 * kernel's record of its queueing (sched_info.last_queued, cleared at its
 * arrival, which comes after sched_switch): the start of the wait of a
 * thread switched in now whose switch-out was not seen. 0 when it cannot
 * be read. */
static __always_inline __u64 kernel_wait(struct rq *rq, struct task_struct *task)
{
	__u64 clock, queued;

	if (!rq || !bpf_core_field_exists(task->sched_info.last_queued))
		return 0;
	clock = rq->clock;
	queued = task->sched_info.last_queued;
	return queued && clock > queued ? clock - queued : 0;
}

/* split_at closes t's open interval at now - d (d capped at the interval),
 * in its current state, and puts it in state from there. */
static __always_inline void split_at(struct ta_thread *t, __u64 now, __u64 d, __u32 state)
{
	if (t->last_ns && now > t->last_ns) {
		if (d > now - t->last_ns)
			d = now - t->last_ns;
		close_interval(t, now - d);
	}
	t->state = state;
}

/* seen_running puts t, which runs now (task, on rq) while perfsleuth has
 * it off the CPU, on the CPU from the kernel's arrival time: its switch-in
 * was not seen, and before that it was in the state it is in. */
static __always_inline void seen_running(struct ta_thread *t, struct rq *rq, struct task_struct *task, __u64 now, struct ta_counters *c)
{
	__u64 ran = unseen_run(rq, task);

	if (c) {
		c->unseen_ins++;
		if (ran)
			c->unseen_ins_timed++;
	}
	split_at(t, now, ran, TA_STATE_RUNNING);
}

/* lock_begin notes what a thread going to sleep on a lock waits on: the
 * file of the fd its read, write or sync call is on (on a file system's
 * write path, its inode lock), or the futex's address; and, at most once
 * every TA_LOCK_WALK_NS, its kernel and user stacks. */
static __always_inline void lock_begin(void *ctx, struct task_struct *task, struct pt_regs *regs, struct ta_thread *t, __u64 now, struct ta_counters *c)
{
	t->lock_set = 1;
	t->lock_obj = 0;
	t->lock_dev = 0;
	t->lock_kstack = TA_LOCK_NOT_WALKED;
	t->lock_ustack = TA_LOCK_NOT_WALKED;
	t->lock_hstack = TA_LOCK_NOT_WALKED;
	if (t->act == TA_ACT_FUTEX) {
		t->lock_obj = BPF_CORE_READ(regs, di); /* the futex word */
	} else if (t->act == TA_ACT_READ || t->act == TA_ACT_WRITE || t->act == TA_ACT_SYNC) {
		struct file *f = fd_file(task, (int)BPF_CORE_READ(regs, di));

		if (f) {
			struct inode *inode = BPF_CORE_READ(f, f_inode);
			struct ta_file_key k = {};

			k.ino = BPF_CORE_READ(inode, i_ino);
			k.dev = BPF_CORE_READ(inode, i_sb, s_dev);
			t->lock_obj = k.ino;
			t->lock_dev = k.dev;
			if (k.ino && !bpf_map_lookup_elem(&lock_files, &k)) {
				bpf_map_update_elem(&lock_files, &k, &zero_lock_file, BPF_NOEXIST);
				struct ta_lock_file *lf = bpf_map_lookup_elem(&lock_files, &k);

				if (lf)
					fill_names(lf->names, &lf->depth, &lf->truncated, BPF_CORE_READ(f, f_path.dentry));
			}
		}
	}
	if (now - t->lock_walk_ns >= TA_LOCK_WALK_NS && now >= lock_walk_next) {
		/* Two CPUs may both pass: the spacing is a bound within a
		 * walk or two, not a lock. */
		lock_walk_next = now + TA_LOCK_WALK_GAP_NS;
		t->lock_walk_ns = now;
		t->lock_kstack = bpf_get_stackid(ctx, &lock_stacks, 0);
		if (lock_wants(t, true))
			t->lock_ustack = bpf_get_stackid(ctx, &lock_stacks, BPF_F_USER_STACK);
		if (c)
			c->lock_walks++;
	}
}

static __always_inline void name_waker(struct task_struct *cur, __u32 kthread, bool process);

/* cpu_holder is the kind of task prev is, which had the CPU a runnable
 * thread of the workload gets now: another of its threads, a kernel
 * thread, another process (named), or the idle task (none: the thread
 * waited with a CPU idle). */
static __always_inline __u32 cpu_holder(struct task_struct *prev, bool prev_tracked)
{
	if (prev->pid == 0)
		return TA_WAKER_NONE;
	if (prev_tracked)
		return TA_WAKER_PEER;
	if (prev->flags & PF_KTHREAD) {
		name_waker(prev, 1, true);
		return TA_WAKER_KTHREAD;
	}
	name_waker(prev, 0, true);
	return TA_WAKER_OUTSIDE;
}

/* Each CPU's anchor (struct ta_enq), sized to the possible CPUs at load. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ta_enq);
} rq_enq SEC(".maps");

/* TA_CUT_ANCHOR_MAX_NS: an enqueue older than this is not used to relate
 * the two clocks (their rates may differ by an NTP correction's few ppm). */
#define TA_CUT_ANCHOR_MAX_NS 20000000ULL
/* TA_ANCHOR_REFRESH_NS: the enqueue program takes a new anchor once the
 * run queue's clock is this far past the last one, not at every enqueue
 * (MariaDB under sysbench made 58,000 enqueues a second here). At the 500
 * ppm an NTP correction may slew ktime by at most, an anchor 1 ms old is
 * 0.5 us off; the CPUs' anchors here agree within 0.3 us. */
#define TA_ANCHOR_REFRESH_NS 1000000ULL
/* TA_CUT_LAG_MAX_NS: a longer lag is not a pick's (a clock update the
 * kernel skipped after a wake-up long ago, or clocks that jumped). */
#define TA_CUT_LAG_MAX_NS 1000000LL

/* cut_lag is how long before now (ktime, at sched_switch) the kernel ended
 * the run of the task switching out: at rq->clock, which __schedule
 * updates at its start (or left at the wake-up's update, when it skipped
 * it), before it picks the next task. The run queue's clock is
 * sched_clock's, not ktime's: the CPU's anchor, an enqueue on it, gives
 * both at one moment (handle_enqueue, right after the clock's update), so
 * the lag is (now - rq->clock) - (the anchor's ns - its clock). 0 when it cannot be
 * told. */
/* anchor_of is ktime - sched_clock on e's CPU at its anchor, an enqueue
 * made on that CPU (its clock is then that CPU's sched_clock), into *off; false
 * when there is none or it is older than TA_CUT_ANCHOR_MAX_NS at now. */
static __always_inline bool anchor_of(struct ta_enq *e, __u64 now, __s64 *off)
{
	if (!e->local_clock || now < e->local_ns || now - e->local_ns > TA_CUT_ANCHOR_MAX_NS)
		return false;
	*off = (__s64)(e->local_ns - e->local_clock);
	return true;
}

static __always_inline __u64 cut_lag(struct rq *rq, __u64 now)
{
	struct ta_enq *e;
	__s64 lag, off;
	__u32 cpu;

	if (!rq)
		return 0;
	cpu = rq->cpu;
	e = bpf_map_lookup_elem(&rq_enq, &cpu);
	/* The anchor is an enqueue made on this CPU: its clock is this CPU's
	 * sched_clock, as rq->clock is here. */
	if (!e || !anchor_of(e, now, &off))
		return 0;
	lag = (__s64)(now - rq->clock) - off;
	return lag > 0 && lag < TA_CUT_LAG_MAX_NS ? (__u64)lag : 0;
}

/* woken ends the sleep of t, blocked until task's switch-in now on rq,
 * where the kernel queued it to run: its run-queue wait since then is
 * cpu-wait, and schedstat's run_delay counts the same wait
 * (sched_info.last_queued to the arrival, which comes after this
 * tracepoint). last_queued is on the run queue's clock: put in ktime by
 * this CPU's anchor (cut_lag's, an enqueue made on it), else by the
 * clock now, which the switch updated (or left at the wake-up's update,
 * when it skipped it: the wait then runs to now, as the anchor's does). A
 * wait the kernel closed early, in what run_delay grew since the
 * switch-out that blocked it (a move to another CPU's queue dequeues the
 * thread, adding its wait so far, and enqueues it anew), moves the start
 * back by as much. It is never earlier than sched_waking: a thread that
 * blocked under delayed dequeue (EEVDF, 6.12+) stays on its run queue,
 * and a move while it sleeps sets last_queued in the sleep; the kernel
 * counts that part of the sleep as run-queue wait, counted here as stale
 * (stale_ns; docs/probes.md, "The kernel's stale queueing"). Without
 * sched_info the sleep ends at sched_waking, else now.
 *
 * Ended at sched_wakeup before: a program on every wake-up on the
 * machine (250-340 ns a run under MariaDB + sysbench here, a fifth of the
 * probe's time), which needed the enqueue's time as well. What moved here
 * and the clock read added to sched_waking (90 ns a run there) cost
 * back about half of that: the probe's programs took 186-191 ms in 3 s
 * of that run, against 196-211 ms with sched_wakeup (BPF statistics). */
static __always_inline void woken(struct task_struct *task, struct ta_thread *t, struct rq *rq, __u64 now, struct ta_counters *c)
{
	__u64 end = t->waking_ns && t->waking_ns < now ? t->waking_ns : now;
	__u64 queued, qend = 0, stale = 0;
	struct ta_enq *e;
	__s64 off;
	__u32 cpu;

	if (rq && bpf_core_field_exists(task->sched_info.last_queued) && (queued = task->sched_info.last_queued)) {
		cpu = rq->cpu;
		e = bpf_map_lookup_elem(&rq_enq, &cpu);
		if (e && anchor_of(e, now, &off) && (__s64)queued + off > 0 && (__u64)((__s64)queued + off) <= now)
			qend = (__u64)((__s64)queued + off);
		else if (rq->clock >= queued && rq->clock - queued < now)
			qend = now - (rq->clock - queued);
		if (qend && t->rd_block && bpf_core_field_exists(task->sched_info.run_delay)) {
			__u64 rd = task->sched_info.run_delay;

			if (rd + 1 > t->rd_block)
				qend = qend > rd + 1 - t->rd_block ? qend - (rd + 1 - t->rd_block) : 1;
		}
		if (qend) {
			if (t->waking_ns && qend < t->waking_ns) {
				stale = t->waking_ns - qend;
				qend = t->waking_ns;
			}
			end = qend;
			if (c) {
				c->wakeups_queued++;
				c->wakeups_queued_ns += now - end;
			}
		}
	}
	if (end < t->last_ns)
		end = t->last_ns;
	/* Any of it: a remote wake-up's enqueue may stamp last_queued with a
	 * run queue clock not updated for it, several us behind, and the
	 * self-check allows 5 us a run. */
	if (stale) {
		t->stale_wakeups++;
		t->stale_ns += stale;
	}
	/* What woke it, as sched_waking saw it in the waker's context. */
	close_interval_by(t, end, t->wkind, t->wid);
	t->wkind = TA_WAKER_NONE;
	t->wid = 0;
	t->waking_ns = 0;
	t->state = TA_STATE_RUNNABLE;
	t->rd_block = 0;
	t->wakeups++;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(handle_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	bool prev_tracked, next_tracked;
	__u32 kcls = TA_CLASS_NONE, act;
	struct pt_regs *regs;
	struct ta_thread *t;
	__u64 now;

	struct ta_counters *c;
	struct rq *rq;

	if (stopped)
		return 0;
	c = count_run(TA_PROG_SWITCH);
	rq = this_rq_of(prev, next);
	count_unseen(rq, c);
	/* Every switch on the machine runs this: filter before reading the
	 * clock, so untracked switches pay the two lookups only. */
	prev_tracked = is_tracked(prev->tgid);
	next_tracked = is_tracked(next->tgid);
	if (!prev_tracked && !next_tracked)
		return 0;
	count_tracked(c, TA_PROG_SWITCH);
	now = bpf_ktime_get_ns();
	if (prev_tracked) {
		regs = (struct pt_regs *)bpf_task_pt_regs(prev);
		act = act_of(regs);
		/* An uninterruptible sleep's kernel stack is walked and
		 * classified first, before the accounting's branches, not in
		 * classify: the verifier checks bpf_loop's callback again for
		 * every state that reaches the call, and 81 did there (133,556
		 * instructions verified, most of the probe's load). */
		if (use_stacks && !preempt && prev_state != TASK_RUNNING && kstack_decides(regs, act, prev_state))
			kcls = stack_class(ctx);
		t = get_or_create(prev, TA_STATE_RUNNING, now);
		if (t && !t->exited) {
			if (t->state != TA_STATE_RUNNING)
				seen_running(t, rq, prev, now, c);
			close_interval(t, now);
			charge_out(t, rq);
			t->switches++;
			t->utime_ns = prev->utime;
			t->stime_ns = prev->stime;
			/* comm is read at creation and exit only, not per switch:
			 * user space reads live threads' comm from /proc. */
			t->act = act;
			t->wkind = TA_WAKER_NONE;
			t->wid = 0;
			t->rd_block = 0;
			t->lock_set = 0;
			if (preempt || prev_state == TASK_RUNNING) {
				t->state = TA_STATE_RUNNABLE;
				t->involuntary++;
			} else {
				t->state = TA_STATE_BLOCKED;
				t->waking_ns = 0;
				{
					__u64 lag = cut_lag(rq, now);

					if (lag) {
						t->cut_lag_ns += lag;
						t->cut_lags++;
					}
				}
				if (bpf_core_field_exists(prev->sched_info.run_delay))
					t->rd_block = prev->sched_info.run_delay + 1;
				t->cat = classify(regs, t->act, prev_state, t, kcls);
				if (t->cat == TA_CAT_LOCK)
					lock_begin(ctx, prev, regs, t, now, c);
				if (want_stacks) {
					t->kstack = bpf_get_stackid(ctx, &stacks, 0);
					t->ustack = bpf_get_stackid(ctx, &stacks, BPF_F_USER_STACK);
					if (c)
						c->stack_walks++;
				}
			}
		}
	}

	if (next_tracked) {
		t = get_or_create(next, TA_STATE_RUNNABLE, now);
		if (t && !t->exited) {
			if (t->state == TA_STATE_RUNNING) {
				/* Its switch-out was not seen: it has waited
				 * since the kernel queued it (when it was
				 * preempted or woken); before that it is left
				 * on the CPU, what it did there unknown. */
				__u64 waited = kernel_wait(rq, next);

				if (c) {
					c->unseen_outs++;
					if (waited)
						c->unseen_outs_timed++;
				}
				split_at(t, now, waited, TA_STATE_RUNNABLE);
			} else if (t->state == TA_STATE_BLOCKED) {
				woken(next, t, rq, now, c);
			}
			/* Runnable now, whatever it was: its wait ends with the
			 * task that had the CPU (prev): on a busy machine, what
			 * took the CPUs it waited for. */
			close_interval_by(t, now, cpu_holder(prev, prev_tracked), prev->tgid);
			t->state = TA_STATE_RUNNING;
			/* Counted from the window's opening: a run under way
			 * then is left out (what it was not charged is a
			 * fraction of one run). */
			t->rq_in = 0;
			if (now >= window_ns) {
				t->rq_in = rq_clocks(rq, &t->rq_unch_in, &t->rq_steal_in);
				if (c) {
					if (t->rq_in)
						c->rq_reads++;
					else
						c->rq_misses++;
				}
			}
		}
	}
	return 0;
}

/* fold_exited adds an exited thread to its process's aggregate and frees its
 * entry. Two threads of a process may exit at once on two CPUs: the sums are
 * atomic. */
static __always_inline void fold_exited(struct ta_thread *t, __u64 now)
{
	__u32 tgid = t->tgid, tid = t->tid;
	struct ta_agg *a = bpf_map_lookup_elem(&exited_agg, &tgid);

	if (!a) {
		bpf_map_update_elem(&exited_agg, &tgid, &zero_agg, BPF_NOEXIST);
		a = bpf_map_lookup_elem(&exited_agg, &tgid);
		if (a) {
			a->tgid = tgid;
			a->first_ns = t->first_ns;
			__builtin_memcpy(a->comm, t->comm, sizeof(a->comm));
		} else {
			/* The aggregates are full (a workload that starts
			 * processes by the thousand): the thread goes to the
			 * catch-all of tgid 0, which user space made, so that
			 * its own entry still goes and thread churn cannot fill
			 * threads, where every thread of the run must fit. */
			__u32 rest = 0;

			a = bpf_map_lookup_elem(&exited_agg, &rest);
			if (!a)
				return; /* keep the thread's own entry */
		}
	}
	for (int i = 0; i < TA_NUM_CATS; i++)
		__sync_fetch_and_add(&a->ns[i], t->ns[i]);
	{
		__u64 from = t->first_ns > window_ns ? t->first_ns : window_ns;

		if (now > from)
			__sync_fetch_and_add(&a->wall_ns, now - from);
	}
	__sync_fetch_and_add(&a->utime_ns, t->utime_ns);
	__sync_fetch_and_add(&a->stime_ns, t->stime_ns);
	__sync_fetch_and_add(&a->switches, t->switches);
	__sync_fetch_and_add(&a->involuntary, t->involuntary);
	__sync_fetch_and_add(&a->wakeups, t->wakeups);
	__sync_fetch_and_add(&a->futex_lock_blocks, t->futex_lock_blocks);
	__sync_fetch_and_add(&a->futex_sleep_blocks, t->futex_sleep_blocks);
	__sync_fetch_and_add(&a->uncharged_ns, t->uncharged_ns);
	__sync_fetch_and_add(&a->steal_ns, t->steal_ns);
	__sync_fetch_and_add(&a->cut_lag_ns, t->cut_lag_ns);
	__sync_fetch_and_add(&a->cut_lags, t->cut_lags);
	__sync_fetch_and_add(&a->threads, 1);
	for (int i = 0; i < TA_SAMPLE_SLOTS; i++)
		__sync_fetch_and_add(&a->samples[i], t->samples[i]);
	if (!a->first_ns || t->first_ns < a->first_ns)
		a->first_ns = t->first_ns;
	if (now > a->last_ns)
		a->last_ns = now;
	thread_free(tid);
}

/* name_waker keeps the name of a waker outside the workload. */
static __always_inline void name_waker(struct task_struct *cur, __u32 kthread, bool process)
{
	__u32 pid = process ? cur->tgid : cur->pid;
	struct waker_name n = {};

	if (bpf_map_lookup_elem(&waker_names, &pid))
		return;
	n.tgid = cur->tgid;
	n.kthread = kthread;
	n.ppid = BPF_CORE_READ(cur, real_parent, tgid);
	/* A process is named as its main thread is (whose tid is the
	 * process's id, the key either way). */
	if (process)
		bpf_probe_read_kernel_str(n.comm, sizeof(n.comm), BPF_CORE_READ(cur, group_leader, comm));
	else
		bpf_probe_read_kernel_str(n.comm, sizeof(n.comm), cur->comm);
	bpf_map_update_elem(&waker_names, &pid, &n, BPF_NOEXIST);
}

/* waker_of tells what is waking a thread now, from sched_waking, which
 * runs in the waker's context: a timer expiring, a block completion (in
 * the interrupt or softirq that completed it), another interrupt or
 * softirq, else the current task: a thread of the workload, a kernel
 * thread, or another process. */
static __always_inline __u32 waker_of(__u32 *id)
{
	struct ta_cpu_ctx *m = cpu_ctx_get();
	struct task_struct *cur;

	*id = 0;
	if (m) {
		if (m->timer)
			return TA_WAKER_TIMER;
		if (m->hardirq) {
			if (m->blk_hard_gen == m->hard_gen) {
				*id = m->blk_op;
				return TA_WAKER_DEVICE;
			}
			*id = m->hardirq - 1;
			return TA_WAKER_IRQ;
		}
		if (m->softirq) {
			__u32 vec = m->softirq - 1;

			if (m->blk_soft_gen == m->soft_gen) {
				*id = m->blk_op;
				return TA_WAKER_DEVICE;
			}
			if (vec == TIMER_SOFTIRQ || vec == HRTIMER_SOFTIRQ)
				return TA_WAKER_TIMER;
			/* A softirq run on a workload thread's way out of a
			 * bottom-half section (TCP over loopback: the sender's
			 * send runs the receive path): that thread woke it. */
			cur = bpf_get_current_task_btf();
			if (cur->pid != 0 && is_tracked(cur->tgid)) {
				*id = cur->pid;
				return TA_WAKER_PEER;
			}
			*id = vec;
			return TA_WAKER_SOFTIRQ;
		}
	}
	cur = bpf_get_current_task_btf();
	if (cur->pid == 0) /* the idle task, in a context no marker covers (an IPI) */
		return TA_WAKER_IRQ;
	*id = cur->pid;
	if (is_tracked(cur->tgid))
		return TA_WAKER_PEER;
	if (cur->flags & PF_KTHREAD) {
		name_waker(cur, 1, false);
		return TA_WAKER_KTHREAD;
	}
	name_waker(cur, 0, false);
	return TA_WAKER_OUTSIDE;
}


/* handle_enqueue times an enqueue made on a run queue's own CPU: the ktime
 * and the run queue's clock at one moment, which anchor the two clocks
 * (anchor_of) for the cut lag and a woken thread's queueing (woken). It
 * runs under the run queue's lock, inside enqueue_task, after the run
 * queue's clock was updated for it. A remote enqueue returns before the
 * clock read, and so does a local one while the anchor is less than
 * TA_ANCHOR_REFRESH_NS old: BPF statistics under MariaDB + sysbench, 136
 * and 159 ns a run before, 119 after (the statistics' own clock reads are
 * about 90 of those). */
SEC("tp_btf/sched_update_nr_running_tp")
int BPF_PROG(handle_enqueue, struct rq *rq, int change)
{
	struct ta_enq *e;
	__u64 clock, ns;
	__s64 off;
	__u32 cpu;

	if (stopped)
		return 0;
	/* Counted whatever the change: the calibrated cost is per run. */
	count_run(TA_PROG_ENQUEUE);
	if (change <= 0)
		return 0;
	cpu = rq->cpu;
	if (bpf_get_smp_processor_id() != cpu)
		return 0;
	e = bpf_map_lookup_elem(&rq_enq, &cpu);
	if (!e)
		return 0;
	clock = rq->clock;
	if (e->local_clock && clock >= e->local_clock && clock - e->local_clock < TA_ANCHOR_REFRESH_NS)
		return 0;
	ns = bpf_ktime_get_ns();
	off = (__s64)(ns - clock);
	e->local_ns = ns;
	e->local_clock = clock;
	if (!e->off_n || off < e->off_min)
		e->off_min = off;
	e->off_n++;
	return 0;
}

/* wakeup_new makes the entry of a thread the workload starts, runnable
 * from now (sched_wakeup_new). A woken thread's sleep ends at its
 * switch-in (woken), not at sched_wakeup, which no program hooks. */
static __always_inline void wakeup_new(struct task_struct *p)
{
	struct ta_counters *c;
	struct ta_thread *t;
	__u64 now;

	if (stopped)
		return;
	c = count_run(TA_PROG_WAKEUP_NEW);
	if (!is_tracked(p->tgid))
		return;
	count_tracked(c, TA_PROG_WAKEUP_NEW);
	now = bpf_ktime_get_ns();
	t = get_or_create(p, TA_STATE_RUNNABLE, now);
	if (!t)
		return;
	if (t->exited) {
		/* The tid was reused within the window (pid_max is 32768 on
		 * many machines: a workload that makes threads by the
		 * thousand wraps it in a second). The thread that exited is
		 * folded into its process's aggregate, and the new one gets
		 * an entry of its own. */
		fold_exited(t, t->exit_ns);
		t = get_or_create(p, TA_STATE_RUNNABLE, now);
		if (!t)
			return;
	}
	if (t->exited && c) {
		/* Still the exited thread's entry (the aggregates are full):
		 * the new thread is not accounted. */
		c->dropped++;
	}
}

SEC("tp_btf/sched_waking")
int BPF_PROG(handle_waking, struct task_struct *p)
{
	struct ta_counters *c;
	struct ta_thread *t;
	__u32 kind, id;

	if (stopped)
		return 0;
	c = count_run(TA_PROG_WAKING);
	if (!is_tracked(p->tgid))
		return 0;
	count_tracked(c, TA_PROG_WAKING);
	t = thread_of(p->pid);
	if (!t || t->state != TA_STATE_BLOCKED)
		return 0;
	t->waking_ns = bpf_ktime_get_ns();
	kind = waker_of(&id);
	/* A wait for asynchronous IO (io_getevents, io_uring_enter) or an
	 * unclassified kernel wait that a block completion ends is a wait for
	 * storage, by the completed request's op. Regression: fio's libaio
	 * worker read "other 38%, storage-read 0%" while the device served
	 * 574k reads. */
	if (kind == TA_WAKER_DEVICE &&
	    (t->cat == TA_CAT_OTHER || (t->act == TA_ACT_AIO && t->cat == TA_CAT_SLEEP)))
		t->cat = id == TA_OP_READ ? TA_CAT_STORAGE_READ : id == TA_OP_WRITE ? TA_CAT_STORAGE_WRITE : TA_CAT_STORAGE_SYNC;
	t->wkind = kind;
	t->wid = id;
	/* The lock's holder letting go, where the waiter's stacks were
	 * walked: its kernel stack for a kernel lock, its user stack for a
	 * futex. */
	if (t->cat == TA_CAT_LOCK && t->lock_set && t->lock_kstack != TA_LOCK_NOT_WALKED && kind == TA_WAKER_PEER && lock_wants(t, false))
		t->lock_hstack = bpf_get_stackid(ctx, &lock_stacks, t->act == TA_ACT_FUTEX ? BPF_F_USER_STACK : 0);
	return 0;
}

/* The CPU-context markers waker_of reads. Each run stores a field or two
 * in a per-CPU array: they fire at every interrupt, softirq and hrtimer
 * on the machine. */
SEC("tp_btf/irq_handler_entry")
int BPF_PROG(ctx_irq_entry, int irq, struct irqaction *action)
{
	struct ta_cpu_ctx *m;

	count_run(TA_PROG_CTX);
	m = cpu_ctx_get();
	if (m) {
		m->hardirq = irq + 1;
		m->hard_gen++;
	}
	return 0;
}

SEC("tp_btf/irq_handler_exit")
int BPF_PROG(ctx_irq_exit, int irq, struct irqaction *action, int ret)
{
	struct ta_cpu_ctx *m;

	count_run(TA_PROG_CTX);
	m = cpu_ctx_get();
	if (m)
		m->hardirq = 0;
	return 0;
}

SEC("tp_btf/softirq_entry")
int BPF_PROG(ctx_softirq_entry, unsigned int vec)
{
	struct ta_cpu_ctx *m;

	count_run(TA_PROG_CTX);
	m = cpu_ctx_get();
	if (m) {
		m->softirq = vec + 1;
		m->soft_gen++;
	}
	return 0;
}

SEC("tp_btf/softirq_exit")
int BPF_PROG(ctx_softirq_exit, unsigned int vec)
{
	struct ta_cpu_ctx *m;

	count_run(TA_PROG_CTX);
	m = cpu_ctx_get();
	if (m)
		m->softirq = 0;
	return 0;
}

/* The ticks whose stacks were walked, by stack (ta_tick_key), and the
 * stacks: 4,096 distinct (kernel, user) pairs. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, struct ta_tick_key);
	__type(value, __u64);
} tick_counts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 4096);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, TA_MAX_FRAMES * 2 * sizeof(__u64));
} tick_stacks SEC(".maps");

/* The workload's ticks per CPU, for one in tick_stack_every. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} tick_seq SEC(".maps");

/* Walk the stacks at one in tick_stack_every of the workload's ticks on a
 * CPU (user space sets it for ~50 a second); 0: never. */
const volatile __u32 tick_stack_every = 0;

/* tick_stack counts the stacks of the workload's thread the tick fell on,
 * at one in tick_stack_every of its ticks on this CPU. In the hrtimer's
 * tracepoint the kernel stack starts with the interrupt's frames, then the
 * code it interrupted (user space strips the first); in user code there is
 * no kernel code of the thread's to walk. */
static __always_inline void tick_stack(void *ctx, __u64 id, __u32 act, struct ta_counters *c)
{
	__u32 zero = 0;
	__u64 *seq = bpf_map_lookup_elem(&tick_seq, &zero);
	struct ta_tick_key k = {.tgid = id >> 32, .tid = (__u32)id, .kstack = TA_LOCK_NOT_WALKED};
	__u64 zero_n = 0, *n;

	if (!tick_stack_every || !seq || (*seq)++ % tick_stack_every)
		return;
	if (act != TA_ACT_USER)
		k.kstack = bpf_get_stackid(ctx, &tick_stacks, 0);
	k.ustack = bpf_get_stackid(ctx, &tick_stacks, BPF_F_USER_STACK);
	if (c)
		c->tick_stacks++;
	n = lookup_or_init(&tick_counts, &k, &zero_n);
	if (n)
		__sync_fetch_and_add(n, 1);
	else if (c)
		c->tick_dropped++;
}

/* The scheduler tick's hrtimer function (tick_nohz_handler, or
 * tick_sched_timer before 6.10), from /proc/kallsyms; 0: not found, and no
 * activity is sampled. */
const volatile __u64 tick_fn = 0;

/* sample_tick counts, at a scheduler tick on a CPU running a thread of the
 * workload, what the thread was doing: the activity its user-mode entry
 * frame says (an interrupt taken in user code left its own frame there:
 * user; a syscall's: its class; a page fault's: fault). The tick runs at HZ
 * on every CPU that is not idle, so it samples the workload's time on a
 * CPU with no interrupt of its own: a cpu-clock perf event on every CPU,
 * tried first, made a pipe ping-pong 1.8x faster on this VM (a periodic
 * event keeps the haltpoll idle driver polling, whatever its rate). The
 * thread's exact cpu time (sched_switch) is split in proportion. */
static __always_inline void sample_tick(void *ctx)
{
	struct ta_counters *c = count_run(TA_PROG_SAMPLE);
	struct task_struct *task;
	struct ta_thread *t;
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id, act;

	if (!is_tracked(id >> 32))
		return;
	count_tracked(c, TA_PROG_SAMPLE);
	if (bpf_ktime_get_ns() < window_ns)
		return;
	t = thread_of(tid);
	if (!t || t->exited)
		return;
	task = bpf_get_current_task_btf();
	act = act_of((struct pt_regs *)bpf_task_pt_regs(task));
	if (act < TA_SAMPLE_SLOTS)
		__sync_fetch_and_add(&t->samples[act], 1);
	tick_stack(ctx, id, act, c);
}

SEC("tp_btf/hrtimer_expire_entry")
int BPF_PROG(ctx_hrtimer_entry, struct hrtimer *timer, ktime_t *now)
{
	struct ta_cpu_ctx *m;

	count_run(TA_PROG_CTX);
	m = cpu_ctx_get();
	if (m && m->timer < 8)
		m->timer++;
	if (tick_fn && !stopped && (__u64)timer->function == tick_fn)
		sample_tick(ctx);
	return 0;
}

SEC("tp_btf/hrtimer_expire_exit")
int BPF_PROG(ctx_hrtimer_exit, struct hrtimer *timer)
{
	struct ta_cpu_ctx *m;

	count_run(TA_PROG_CTX);
	m = cpu_ctx_get();
	if (m && m->timer)
		m->timer--;
	return 0;
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(ctx_block_complete, struct request *rq, blk_status_t error, unsigned int nr_bytes)
{
	struct ta_cpu_ctx *m;
	__u32 op;

	count_run(TA_PROG_CTX);
	m = cpu_ctx_get();
	if (!m)
		return 0;
	op = BPF_CORE_READ(rq, cmd_flags) & REQ_OP_MASK;
	m->blk_op = op == REQ_OP_READ ? TA_OP_READ : op == REQ_OP_WRITE ? TA_OP_WRITE : TA_OP_OTHER;
	if (m->hardirq)
		m->blk_hard_gen = m->hard_gen;
	else if (m->softirq)
		m->blk_soft_gen = m->soft_gen;
	return 0;
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(handle_wakeup_new, struct task_struct *p)
{
	/* The entry is created runnable here; a new thread is never blocked. */
	wakeup_new(p);
	return 0;
}

/* The workload's processes that start or exec, a tgid each, for the
 * mappings keeper (symbolize.Keeper), which reads their maps then instead
 * of looking for them five times a second. The reader is woken at most
 * once every TA_PROC_WAKE_NS: the keeper reads the processes it found
 * again that long after (symbolize.MapsEvery), and finds then those whose
 * events did not wake it. A full buffer drops an event; the next read
 * finds its process all the same. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} proc_events SEC(".maps");

#define TA_PROC_WAKE_NS 200000000ULL
__u64 proc_wake_ns = 0;

static __always_inline void proc_event(__u32 tgid)
{
	__u64 now = bpf_ktime_get_ns();
	__u64 flags = BPF_RB_NO_WAKEUP;

	if (now - proc_wake_ns >= TA_PROC_WAKE_NS) {
		proc_wake_ns = now;
		flags = BPF_RB_FORCE_WAKEUP;
	}
	bpf_ringbuf_output(&proc_events, &tgid, sizeof(tgid), flags);
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(handle_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = parent->tgid;
	__u32 ctgid = child->tgid;
	struct ta_counters *c;

	if (stopped)
		return 0;
	c = count_run(TA_PROG_FORK);
	if (!is_tracked(ptgid))
		return 0;
	count_tracked(c, TA_PROG_FORK);
	if (ctgid == ptgid) {
		if (c)
			c->thread_creates++;
		return 0;
	}
	if (!track(ctgid)) {
		if (c)
			c->dropped++; /* a pid past the map's range: the new process is not followed */
	} else {
		proc_event(ctgid);
	}
	if (c)
		c->process_forks++;
	return 0;
}

/* A process of the workload execs: its mappings are another program's
 * (proc_events). Runs at every exec on the machine; not counted with the
 * others' runs (execs are rare against switches). */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(handle_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	if (stopped)
		return 0;
	if (is_tracked(p->tgid))
		proc_event(p->tgid);
	return 0;
}

/* A process of the tree is gone: its leader's task is freed only once
 * every thread of it has exited and it has been reaped (after its
 * parent's wait woke: that wake-up still names it as the workload's), so
 * its tgid leaves tracked, which holds the processes alive at once
 * rather than every process the run started (a workload starting ten
 * processes a second filled its 4,096 entries in 7 minutes), and a pid
 * the kernel hands out again later is not taken for the workload's.
 * Runs for every task freed on the machine; counted with the exits. */
SEC("tp_btf/sched_process_free")
int BPF_PROG(handle_free, struct task_struct *p)
{
	__u32 tgid = p->tgid;

	if (stopped)
		return 0;
	count_run(TA_PROG_EXIT);
	/* The leader, with no thread of it alive: a thread that execs takes
	 * the leader's pid and the old leader is freed, its process going on
	 * (live counts the threads that have not exited). */
	if (p->pid != tgid || p->signal->live.counter != 0 || !is_tracked(tgid))
		return 0;
	untrack(tgid);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(handle_exit, struct task_struct *p)
{
	__u64 now;
	struct ta_thread *t;
	struct ta_counters *c;
	struct rq *rq;

	if (stopped)
		return 0;
	c = count_run(TA_PROG_EXIT);
	if (!is_tracked(p->tgid))
		return 0;
	count_tracked(c, TA_PROG_EXIT);
	now = bpf_ktime_get_ns();
	t = get_or_create(p, TA_STATE_RUNNING, now);
	if (!t || t->exited)
		return 0;
	rq = this_rq_of(p, p);
	/* It runs (this is its own exit): a switch-in not seen is taken as
	 * handle_switch takes it at a switch-out, as its final switch-out
	 * comes after this exit and is not looked at. Regression: a shell
	 * loop that got its CPU as the programs were attached and never left
	 * it was accounted 17 ms of cpu for its 430 ms, the rest cpu-wait. */
	if (t->state != TA_STATE_RUNNING)
		seen_running(t, rq, p, now, c);
	close_interval(t, now);
	charge_out(t, rq);
	/* A thread folded into its process's aggregate has its last edge
	 * kept there too (tid 0), so that thread churn fills the map with
	 * one key per kind of wait, not one per thread. */
	for (int i = 0; i < TA_EDGE_SLOTS; i++) {
		if (entries > FOLD_ABOVE && t->edge[i].count) {
			t->edge[i].k.tid = 0;
			t->edge[i].k.gen = 0;
		}
		edge_flush(t, i);
	}
	t->exited = 1;
	t->exit_ns = now;
	t->exit_run_ns = p->se.sum_exec_runtime;
	t->exit_wait_ns = p->sched_info.run_delay;
	t->exit_runs = p->sched_info.pcount;
	t->utime_ns = p->utime;
	bpf_probe_read_kernel_str(t->comm, sizeof(t->comm), p->comm);
	t->stime_ns = p->stime;
	if (c)
		c->exits++;
	count_alive(-1);
	if (entries > FOLD_ABOVE)
		fold_exited(t, now);
	return 0;
}

/* seed creates entries for threads of tracked processes that have none yet,
 * with the state they are in now. Run once after attaching. */
SEC("iter/task")
int seed(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct ta_thread *t;
	__u32 tid, state, tstate;
	__u64 now;

	if (!task || !is_tracked(task->tgid))
		return 0;
	tid = task->pid;
	if (thread_of(tid))
		return 0;
	tstate = task->__state;
	state = tstate == TASK_RUNNING ? (task->on_cpu ? TA_STATE_RUNNING : TA_STATE_RUNNABLE)
				       : TA_STATE_BLOCKED;
	now = bpf_ktime_get_ns();
	t = get_or_create(task, state, now);
	if (!t)
		return 0;
	if (state != TA_STATE_RUNNING) {
		struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);

		t->act = act_of(regs);
		if (state == TA_STATE_BLOCKED)
			t->cat = classify(regs, t->act, tstate, t, TA_CLASS_NONE);
	}
	t->utime_ns = task->utime;
	t->stime_ns = task->stime;
	return 0;
}


/* sync_kind tells, from the syscall the current thread is in, how it came
 * into the filesystem's fsync. */
static __always_inline __u32 sync_kind(struct task_struct *task)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);

	switch ((long)regs->orig_ax) {
	case NR_fsync:
		return TA_SYNC_FSYNC;
	case NR_fdatasync:
		return TA_SYNC_FDATASYNC;
	case NR_msync:
		return TA_SYNC_MSYNC;
	case NR_write:
	case NR_pwrite64:
	case NR_writev:
	case NR_pwritev:
	case NR_pwritev2:
		return TA_SYNC_WRITE;
	}
	return TA_SYNC_OTHER;
}

/* fill_path names f after d (path.bpf.h). */
static __always_inline void fill_path(struct ta_file *f, struct dentry *d)
{
	fill_names(f->names, &f->depth, &f->truncated, d);
}

/* thread_cats copies a running thread's time per category to out, as if
 * its running interval were closed at now: the difference of two copies
 * taken at a sync call's entry and exit is the call's time by category (on
 * CPU, waiting for a CPU, blocked), adding up to its latency. */
static __always_inline bool thread_cats(__u32 tid, __u64 now, __u64 *out)
{
	struct ta_thread *t = thread_of(tid);

	if (!t || t->last_ns == 0)
		return false;
	for (int i = 0; i < TA_NUM_CATS; i++)
		out[i] = t->ns[i];
	if (t->state == TA_STATE_RUNNING && now > t->last_ns)
		out[TA_CAT_CPU] += now - t->last_ns;
	return true;
}

/* sync_fold charges a sync call on a file that found files full to its
 * directory's entry in sync_dirs (the catch-all when that is full too):
 * st's key becomes the entry's. */
static __noinline void sync_fold(struct ta_sync_start *st, struct file *file, __u32 tgid, struct ta_counters *c)
{
	struct dentry *d = file->f_path.dentry;
	struct dentry *parent = d ? d->d_parent : NULL;
	struct ta_file_key k = st->file;
	struct ta_file *f = NULL;
	__u8 one = 1;

	st->file._pad = TA_FILE_DIR;
	if (parent && parent != d) {
		st->file.ino = BPF_CORE_READ(parent, d_inode, i_ino);
		f = bpf_map_lookup_elem(&sync_dirs, &st->file);
		if (!f) {
			bpf_map_update_elem(&sync_dirs, &st->file, &zero_file, BPF_NOEXIST);
			f = bpf_map_lookup_elem(&sync_dirs, &st->file);
			if (f && f->depth == 0) {
				f->tgid = tgid;
				fill_path(f, parent);
			}
		}
	}
	if (!f) {
		st->file.ino = 0;
		st->file.dev = 0;
		f = bpf_map_lookup_elem(&sync_dirs, &st->file);
	}
	if (!f) {
		if (c)
			c->file_dropped++;
		return;
	}
	if (c)
		c->file_folded++;
	if (bpf_map_update_elem(&sync_folded, &k, &one, BPF_NOEXIST) == 0)
		__sync_fetch_and_add(&f->files, 1);
}

SEC("tp_btf/ext4_sync_file_enter")
int BPF_PROG(ext4_sync_enter, struct file *file, int datasync)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct ta_sync_start st = {};
	struct ta_counters *c;
	struct inode *inode;
	__u32 tid = task->pid;

	if (stopped)
		return 0;
	c = count_run(TA_PROG_SYNC_ENTER);
	if (!is_tracked(task->tgid))
		return 0;
	count_tracked(c, TA_PROG_SYNC_ENTER);
	inode = file->f_inode;
	st.file.ino = inode->i_ino;
	st.file.dev = inode->i_sb->s_dev;
	st.kind = sync_kind(task);
	st.datasync = datasync != 0;
	if (!bpf_map_lookup_elem(&files, &st.file)) {
		struct ta_file *f = NULL;

		if (!bpf_map_lookup_elem(&sync_folded, &st.file)) {
			bpf_map_update_elem(&files, &st.file, &zero_file, BPF_NOEXIST);
			f = bpf_map_lookup_elem(&files, &st.file);
			if (f) {
				f->tgid = task->tgid;
				f->generation = inode->i_generation;
				fill_path(f, file->f_path.dentry);
			}
		}
		if (!f)
			sync_fold(&st, file, task->tgid, c);
	}
	st.ts = bpf_ktime_get_ns();
	st.has_cats = thread_cats(tid, st.ts, st.cat_ns);
	if (bpf_map_update_elem(&sync_start, &tid, &st, BPF_ANY) != 0 && c)
		c->dropped++;
	return 0;
}

/* How far a sync call's split may differ from its latency: the two are
 * read from the same clock at the same two moments, less rounding. */
#define SPLIT_SLACK_NS 1000

SEC("tp_btf/ext4_sync_file_exit")
int BPF_PROG(ext4_sync_exit, struct inode *inode, int ret)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct ta_sync_start *st;
	struct ta_sync_stats *s;
	struct ta_counters *c;
	struct ta_file *f;
	__u64 delta, slot, now, cats[TA_NUM_CATS];
	bool split;
	__u32 k;

	if (stopped)
		return 0;
	c = count_run(TA_PROG_SYNC_EXIT);
	st = bpf_map_lookup_elem(&sync_start, &tid);
	if (!st)
		return 0; /* entered before attach, or not tracked */
	count_tracked(c, TA_PROG_SYNC_EXIT);
	now = bpf_ktime_get_ns();
	delta = now - st->ts;
	split = st->has_cats && thread_cats(tid, now, cats);
	if (split) {
		__u64 sum = 0;

		for (int i = 0; i < TA_NUM_CATS; i++) {
			cats[i] = cats[i] > st->cat_ns[i] ? cats[i] - st->cat_ns[i] : 0;
			sum += cats[i];
		}
		/* A call's split adds up to its latency, or it is not split (it
		 * stays counted, with split < count). Now and then one came to
		 * several ms more than the call took (6 ms over 3,087 SQLite
		 * fdatasyncs beside two CPU burners, in one run of three), from
		 * the thread's entry changed in a way not found yet. */
		if (sum > delta + SPLIT_SLACK_NS || sum + SPLIT_SLACK_NS < delta)
			split = false;
	}
	k = st->kind;
	if (st->file._pad == TA_FILE_DIR)
		f = bpf_map_lookup_elem(&sync_dirs, &st->file);
	else
		f = bpf_map_lookup_elem(&files, &st->file);
	if (f) {
		__sync_fetch_and_add(&f->count, 1);
		__sync_fetch_and_add(&f->total_ns, delta);
		if (st->datasync)
			__sync_fetch_and_add(&f->datasync, 1);
		if (delta > f->max_ns)
			f->max_ns = delta;
	}
	bpf_map_delete_elem(&sync_start, &tid);
	s = bpf_map_lookup_elem(&sync_stats, &k);
	if (!s)
		return 0;
	s->count++;
	s->total_ns += delta;
	slot = log2_u64(delta / 1000);
	if (slot >= TA_MAX_SLOTS)
		slot = TA_MAX_SLOTS - 1;
	s->slots[slot]++;
	if (split) {
		s->split++;
		s->split_ns += delta;
		for (int i = 0; i < TA_NUM_CATS; i++)
			s->cat_ns[i] += cats[i];
	}
	return 0;
}

SEC("tp_btf/sys_enter")
int BPF_PROG(sys_enter, struct pt_regs *regs, long id)
{
	struct task_struct *task;
	struct ta_sys_start *st;
	struct ta_counters *c;

	if (stopped)
		return 0;
	c = count_run(TA_PROG_SYS_ENTER);
	task = bpf_get_current_task_btf();
	/* Storage is made only for tracked threads, and a tracked process
	 * stays tracked: a thread that has it skips the hash lookup, which
	 * is most of a tracked run's filter. */
	st = bpf_task_storage_get(&sys_start, task, 0, 0);
	if (!st) {
		if (!is_tracked(task->tgid))
			return 0;
		st = bpf_task_storage_get(&sys_start, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (!st)
			return 0;
	}
	count_tracked(c, TA_PROG_SYS_ENTER);
	st->nr = id;
	st->ts = bpf_ktime_get_ns();
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(sys_exit, struct pt_regs *regs, long ret)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct ta_sys_stats *s;
	struct ta_sys_start *st;
	struct ta_sys_key key;
	struct ta_counters *c;
	__u64 delta, slot;

	if (stopped)
		return 0;
	c = count_run(TA_PROG_SYS_EXIT);
	st = bpf_task_storage_get(&sys_start, task, 0, 0);
	if (!st || !st->ts)
		return 0;
	count_tracked(c, TA_PROG_SYS_EXIT);
	delta = bpf_ktime_get_ns() - st->ts;
	st->ts = 0;
	key.tid = task->pid;
	key.nr = (__u32)st->nr;
	s = bpf_map_lookup_elem(&sys_stats, &key);
	if (!s) {
		bpf_map_update_elem(&sys_stats, &key, &zero_sys, BPF_NOEXIST);
		s = bpf_map_lookup_elem(&sys_stats, &key);
		if (!s) {
			if (c)
				c->sys_dropped++;
			return 0;
		}
		s->tgid = task->tgid;
	}
	/* Only the thread itself updates its entries: no atomics needed. */
	s->count++;
	if (ret < 0 && ret >= -4095)
		s->errors++;
	s->total_ns += delta;
	if (delta > s->max_ns)
		s->max_ns = delta;
	slot = log2_u64(delta);
	if (slot >= TA_MAX_SLOTS)
		slot = TA_MAX_SLOTS - 1;
	s->slots[slot]++;
	return 0;
}
