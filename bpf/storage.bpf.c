// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* storage: block devices, page cache and (want_files) per-file IO of the
 * workload, counted in the kernel.
 *
 * Block layer (always): block_io_start / block_rq_insert start a request,
 * block_rq_issue hands it to the driver, block_rq_complete ends it; per disk
 * and op the probe counts requests, bytes, merges, size / queue / service /
 * depth histograms and the time with a request in the driver (the
 * device's own busy time, which iostat's jiffy-counted %util overstates
 * for short requests), and attributes each request
 * to the workload (issued by one of its threads), to writeback on its
 * behalf (pages of a file it dirtied) or to others. The same requests are
 * what /proc/diskstats counts.
 *
 * Page cache (the workload's threads only). Always: mmap fault lookups,
 * readahead triggers, dirty throttling (balance_dirty_pages), and the
 * inodes it makes dirty (writeback_dirty_inode_enqueue and _start, a few
 * runs a second), so that their writeback is its. With want_files only,
 * as they run for every read call and every page on the machine: pages
 * looked up by buffered reads (mm_filemap_get_pages) against pages added
 * to the cache in read calls (mm_filemap_add_to_page_cache), and pages
 * dirtied (writeback_dirty_folio).
 *
 * Files (want_files): sys_enter / sys_exit of the read, write and sync calls;
 * per file (device, inode): calls, bytes, sizes, the time in the calls and
 * of it the time blocked on storage and on locks (from timeacct's per-thread
 * totals, whose maps are shared), and whether each call began where the
 * previous one on the same open file ended. Reads and writes of SQLite files
 * (told by their magic at offset 0) go to user space one by one. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "timeacct.h"
#include "storage.h"
#include "bits.bpf.h"
#include "path.bpf.h"
#include "reset.bpf.h"
#include "tracked.bpf.h"
#include "threads.bpf.h"
#include "sqlthread.bpf.h"

#define NR_read 0
#define NR_write 1
#define NR_pread64 17
#define NR_pwrite64 18
#define NR_readv 19
#define NR_writev 20
#define NR_fsync 74
#define NR_fdatasync 75
#define NR_sync_file_range 277
#define NR_preadv 295
#define NR_pwritev 296
#define NR_preadv2 327
#define NR_pwritev2 328
#define NR_io_getevents 208
#define NR_io_pgetevents 333

#define REQ_OP_MASK 0xff
#define REQ_FUA (1U << 17)      /* __REQ_FUA, include/linux/blk_types.h */
#define REQ_PREFLUSH (1U << 18) /* __REQ_PREFLUSH */
#define RQF_FLUSH_SEQ (1U << 1) /* __RQF_FLUSH_SEQ, include/linux/blk-mq.h (6.12+; 1 << 4 before) */
#define REQ_OP_READ 0
#define REQ_OP_WRITE 1
#define REQ_OP_FLUSH 2
#define REQ_OP_DISCARD 3
#define REQ_OP_WRITE_ZEROES 9
#define O_APPEND 02000
#define PAGE_MAPPING_ANON 0x1

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile bool want_files = false;
/* Set when the kernel has block_io_start: block_rq_insert then does not
 * start requests (it fires after io_start for the same request). */
const volatile bool have_io_start = true;
__u32 stopped = 0;
/* armed_ns is set by user space once every program is attached: requests
 * that started before it are not measured, only counted as unseen. */
__u64 armed_ns = 0;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct st_dev_key);
	__type(value, struct st_dev_stats);
} devs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, struct st_disk);
} disks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct st_rq);
} rqs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct st_cache);
} cache SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct st_counters);
} counters SEC(".maps");

/* Inodes the workload dirtied or wrote: their pages' writeback is on its
 * behalf. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, struct st_file_key);
	__type(value, __u8);
} written SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, ST_MAX_FILES);
	__type(key, struct st_file_key);
	__type(value, struct st_file);
} files SEC(".maps");

/* Directories' entries, for files that found files full (st_file_key):
 * allocated as they come, since most runs need none. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, ST_MAX_DIRS);
	__type(key, struct st_file_key);
	__type(value, struct st_file);
} dirs SEC(".maps");

/* The files folded into a directory's entry, each counted once in its
 * files. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, ST_MAX_FOLDED);
	__type(key, struct st_file_key);
	__type(value, __u8);
} folded SEC(".maps");

/* The last inode marked or found in written, per CPU: a writer dirties
 * page after page of the same file, and the LRU lookup costs ~100 ns. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct st_file_key);
} last_written SEC(".maps");

/* mark_written remembers that the workload dirtied or wrote inode k. */
static __always_inline void mark_written(struct st_file_key *k)
{
	__u32 zero = 0;
	struct st_file_key *last = bpf_map_lookup_elem(&last_written, &zero);
	__u8 one = 1;

	if (last && last->ino == k->ino && last->dev == k->dev)
		return;
	if (!bpf_map_lookup_elem(&written, k))
		bpf_map_update_elem(&written, k, &one, BPF_ANY);
	if (last)
		*last = *k;
}

/* Where the last call on an open file (struct file *) began and ended. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, __u64);
	__type(value, struct st_pos);
} positions SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, ST_RING_SIZE);
} events SEC(".maps");

/* A read, write or sync call in progress. */
struct st_call {
	__u64 ts;
	__u64 file;   /* struct file * */
	__u64 buf;    /* the user buffer (the first iovec's for vectored calls) */
	__s64 off;
	__u64 blocked0;
	__u64 lock0;
	struct st_file_key key;
	__u32 nr;
	__u32 op;     /* ST_EV_* */
	__u32 vectored;
	__u32 has_thread;
	/* The file the thread last read ([0]) and wrote ([1]): a thread
	 * that goes on with the same file skips thread_files. */
	__u64 tf_ino[2];
	__u32 tf_dev[2];
	/* An io_getevents call in progress: its events array (0: none). */
	__u64 aio_events;
	/* The call is counted in its file's inflight (the file was in files
	 * at entry). */
	__u32 inflight;
	__u32 _pad2;
};

/* The threads that read or wrote each file (or directory's entry: a
 * directory's inode is no regular file's), counted once each in the
 * file's threads[]: whether 16 threads write one file or one each is
 * what tells an inode lock's queue from spread-out IO. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct st_thread_file_key);
	__type(value, __u8);
} thread_files SEC(".maps");

#define ST_EEXIST 17

/* count_thread counts tid among the threads that read (i 0) or wrote (i
 * 1) the file of st's call, once. */
static __always_inline void count_thread(struct st_call *st, struct st_file *f, struct st_file_key *fk, __u32 tid, __u32 i, struct st_counters *c)
{
	struct st_thread_file_key k = {};
	__u8 one = 1;
	long err;

	i &= 1;
	if (st->tf_ino[i] == fk->ino && st->tf_dev[i] == fk->dev)
		return;
	st->tf_ino[i] = fk->ino;
	st->tf_dev[i] = fk->dev;
	k.ino = fk->ino;
	k.dev = fk->dev;
	k.tid_op = tid | (i << 31);
	err = bpf_map_update_elem(&thread_files, &k, &one, BPF_NOEXIST);
	if (err == 0)
		__sync_fetch_and_add(&f->threads[i], 1);
	else if (err != -ST_EEXIST && c)
		c->tf_dropped++;
}

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct st_call);
} calls SEC(".maps");

TASK_STORAGE_RESET(calls)

const struct st_dev_stats zero_dev = {};
/* Names st_event in the BTF for bpf2go: the ring buffer does not. */
const struct st_event *unused_event __attribute__((unused));
const struct st_file zero_file = {};

static __always_inline struct st_counters *count_run(__u32 prog)
{
	__u32 zero = 0;
	struct st_counters *c = bpf_map_lookup_elem(&counters, &zero);

	if (c)
		c->runs[prog % ST_NUM_PROGS]++;
	return c;
}

/* ST_TIME_MAX_NS: a timed run that took longer was stretched by what
 * it does not do (the hypervisor taking the vCPU, a long interrupt): a
 * program's own work here takes microseconds. Counted, it would weigh
 * ST_TIME_EVERY times in the estimate (worked x work_ns / timed).
 * Regression: a 4 ms stretch put 126 ms against the kernel's 64 ms. */
#define ST_TIME_MAX_NS 100000ULL

/* work_done counts a run past the filter in c (count_run's), and its
 * time if it began at t0 (0: not timed) and took at most ST_TIME_MAX_NS;
 * a longer one is estimated at the mean of the others. */
static __always_inline void work_done(struct st_counters *c, __u32 prog, __u64 t0)
{
	__u64 d;

	if (!c)
		return;
	c->worked[prog % ST_NUM_PROGS]++;
	if (!t0)
		return;
	d = bpf_ktime_get_ns() - t0;
	if (d > ST_TIME_MAX_NS)
		return;
	c->timed[prog % ST_NUM_PROGS]++;
	c->work_ns[prog % ST_NUM_PROGS] += d;
}

/* sampled tells whether this CPU's next run of prog past its filter is
 * one of the 1 in ST_TIME_EVERY that time themselves: two clock reads on
 * every run cost the frequent programs (page cache, syscalls) more than
 * their estimate gains. */
static __always_inline bool sampled(struct st_counters *c, __u32 prog)
{
	return c && (c->worked[prog % ST_NUM_PROGS] & (ST_TIME_EVERY - 1)) == 0;
}

/* time_start is the time a sampled run's work begins, 0 if it is not
 * timed (work_done's t0). */
static __always_inline __u64 time_start(struct st_counters *c, __u32 prog)
{
	return sampled(c, prog) ? bpf_ktime_get_ns() : 0;
}


static __always_inline bool current_tracked(void)
{
	return is_tracked(bpf_get_current_task_btf()->tgid);
}

/* ---- block layer ----
 *
 * The requests, bios and disks below come from the tracepoints' BTF
 * arguments, so their fields (and the pointers they lead to) load directly,
 * a faulting load giving 0, instead of a probe-read call each: a request's
 * start did ten of those (about 780 ns a run, measured with bpf_stats). A
 * request pointer taken from a map key (kernel_freed's) is a plain number
 * to the verifier and is still read by probe reads. */

/* disk_dev is a whole disk's dev_t, as the kernel keeps it inside. */
static __always_inline __u32 disk_dev(struct gendisk *disk)
{
	if (!disk)
		return 0;
	return ((__u32)disk->major << 20) | (__u32)disk->first_minor;
}

static __always_inline __u32 rq_dev(struct request *rq)
{
	return disk_dev(rq->q->disk);
}

static __always_inline __u32 op_of(__u32 opf)
{
	switch (opf & REQ_OP_MASK) {
	case REQ_OP_READ:
		return ST_OP_READ;
	case REQ_OP_WRITE:
		return ST_OP_WRITE;
	case REQ_OP_FLUSH:
		return ST_OP_FLUSH;
	case REQ_OP_DISCARD:
		return ST_OP_DISCARD;
	case REQ_OP_WRITE_ZEROES:
		return ST_OP_WRITE_ZEROES;
	}
	return ST_OP_OTHER;
}

static __always_inline struct st_dev_stats *dev_stats(__u32 dev, __u32 op)
{
	struct st_dev_key k = {.dev = dev, .op = op};
	struct st_dev_stats *s = bpf_map_lookup_elem(&devs, &k);

	if (s)
		return s;
	bpf_map_update_elem(&devs, &k, &zero_dev, BPF_NOEXIST);
	return bpf_map_lookup_elem(&devs, &k);
}

static __always_inline struct st_disk *disk_of(__u32 dev)
{
	struct st_disk zero = {};
	struct st_disk *d = bpf_map_lookup_elem(&disks, &dev);

	if (d)
		return d;
	bpf_map_update_elem(&disks, &dev, &zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(&disks, &dev);
}

/* owner_of tells for whom a request is: the submitting thread's process,
 * else the file its first page belongs to. */
static __always_inline __u32 owner_of(struct request *rq)
{
	struct address_space *mapping;
	struct st_file_key k = {};
	struct inode *host;
	struct page *pg;

	if (current_tracked())
		return ST_OWNER_WORKLOAD;
	/* Only writes are done on the workload's behalf by other tasks. */
	if ((rq->cmd_flags & REQ_OP_MASK) != REQ_OP_WRITE)
		return ST_OWNER_OTHER;
	pg = rq->bio->bi_io_vec->bv_page;
	if (!pg)
		return ST_OWNER_OTHER;
	/* Read, not loaded: its low bit (an anonymous page's mark) is
	 * tested, and the verifier allows no bit operations on a pointer. */
	mapping = BPF_CORE_READ(pg, mapping);
	if (!mapping || ((__u64)mapping & PAGE_MAPPING_ANON))
		return ST_OWNER_OTHER;
	host = BPF_CORE_READ(mapping, host);
	if (!host)
		return ST_OWNER_OTHER;
	k.ino = BPF_CORE_READ(host, i_ino);
	k.dev = BPF_CORE_READ(host, i_sb, s_dev);
	if (bpf_map_lookup_elem(&written, &k))
		return ST_OWNER_WRITEBACK;
	return ST_OWNER_OTHER;
}

/* rqf_flush_seq is RQF_FLUSH_SEQ of the running kernel (a bit of enum
 * rqf_flags since 6.12, 1 << 4 before). */
static __always_inline __u32 rqf_flush_seq(void)
{
	if (bpf_core_enum_value_exists(enum rqf_flags, __RQF_FLUSH_SEQ))
		return 1U << bpf_core_enum_value(enum rqf_flags, __RQF_FLUSH_SEQ);
	return 1U << 4;
}

/* add_busy adds a stay in the driver, [from, to), to the disk's busy time:
 * the part after the latest end of a stay so far. Stays end in the order
 * of their ends, so at depth 1 this is their union exactly; deeper, a
 * long stay over a gap between shorter ones that ended before it loses
 * the gap's part before their end (an undercount only). A completion the
 * probe misses adds nothing, where a count of requests in the driver
 * would stay up and hold the disk busy until the request was reused (2.5 s
 * of 4 here). A compare-and-swap loop, as the verifier allows no spin lock
 * in a tracing program; after 4 lost races the stay is dropped. */
static __always_inline void add_busy(struct st_disk *d, __u64 from, __u64 to)
{
	for (int i = 0; i < 4; i++) {
		__u64 until = d->busy_until, start = from > until ? from : until;

		if (!from || to <= start)
			return;
		if (__sync_val_compare_and_swap(&d->busy_until, until, to) == until) {
			__sync_fetch_and_add(&d->busy_ns, to - start);
			return;
		}
	}
}

/* leave_driver ends a request's stay in the driver (a completion, a
 * requeue): the disk's counts go down by what its flags say it added.
 * Two CPUs can end the same stay at once (the sweep, or check_recent,
 * taking a request for missed while the reuse of its struct finds the
 * entry stale), so the flags are cleared atomically and only the CPU that
 * cleared IN_DRIVER takes the stay out of the counts. Regression: beside
 * two CPU burners a disk's count ended one below its entries in the driver
 * (TestBlockJournalCommitOnce, 1 suite run in 3). The flags are set
 * atomically too, so that no plain write brings a cleared bit back. */
static __always_inline void leave_driver(struct st_rq *r, __u64 now)
{
	struct st_disk *d;
	__u64 issued = r->issue_ns, was;

	if (!(r->flags & ST_RQ_IN_DRIVER))
		return;
	was = __sync_fetch_and_and(&r->flags, ~(ST_RQ_IN_DRIVER | ST_RQ_OWN_IN_DRIVER));
	if (!(was & ST_RQ_IN_DRIVER))
		return;
	if (issued && now > issued)
		r->service_ns += now - issued;
	d = bpf_map_lookup_elem(&disks, &r->dev);
	if (d) {
		add_busy(d, issued, now);
		__sync_fetch_and_add(&d->issued, -1);
		if (was & ST_RQ_OWN_IN_DRIVER)
			__sync_fetch_and_add(&d->own_issued, -1);
	}
	r->issue_ns = 0;
}

/* forget drops a request's entry, taking it out of the driver's counts. */
static __always_inline void forget(__u64 key, struct st_rq *r, __u64 now)
{
	leave_driver(r, now);
	bpf_map_delete_elem(&rqs, &key);
}

/* missed takes out of the driver a request that completed without the
 * probe seeing it (check_recent finds them at the next issues, sweep at the
 * end; a struct request started again finds its own): block_rq_complete
 * did not reach the program for it (a classic tracepoint program of
 * bpftrace's, counting the same events, missed a few of 87,000 too). It is
 * counted as missed, once, so that measured + unseen + missed is what
 * diskstats counts. */
static __always_inline void missed(struct st_rq *r, __u64 now)
{
	struct st_dev_stats *s;
	/* Marked atomically: two CPUs can take the same entry for missed
	 * (see leave_driver), and it is counted once. */
	__u64 was = __sync_fetch_and_or(&r->flags, ST_RQ_SWEPT);

	if (!(was & (ST_RQ_PRE | ST_RQ_SWEPT))) {
		s = dev_stats(r->dev, r->op);
		if (s)
			__sync_fetch_and_add(&s->missed, 1);
	}
	r->issue_ns = 0; /* it left the driver unseen, at no known time */
	leave_driver(r, now);
}

/* stale forgets an entry whose request completed unseen (missed). */
static __always_inline void stale(__u64 key, struct st_rq *r, __u64 now)
{
	missed(r, now);
	bpf_map_delete_elem(&rqs, &key);
}

/* kernel_freed says whether the kernel has freed rq: idle, with no
 * hardware context (__blk_mq_free_request clears it after
 * block_rq_complete has run). Read before the request's entry: the
 * completion deletes the entry before the kernel frees the request, so an
 * entry still in the driver after this says true was never seen
 * completing. A request issued and not yet marked in flight still has its
 * hardware context, so it is never taken for one. */
static __always_inline bool kernel_freed(struct request *rq)
{
	return BPF_CORE_READ(rq, state) == MQ_RQ_IDLE && !BPF_CORE_READ(rq, mq_hctx);
}

/* new_rq makes a request's entry. */
static __always_inline struct st_rq *new_rq(__u64 key, struct st_rq *r, struct st_counters *c)
{
	if (bpf_map_update_elem(&rqs, &key, r, BPF_ANY) != 0) {
		if (c)
			c->rq_dropped++;
		return NULL;
	}
	return bpf_map_lookup_elem(&rqs, &key);
}

/* rq_start records a request's start: it is measured from here. */
static __always_inline void rq_start(struct request *rq, __u64 now, struct st_counters *c)
{
	__u64 key = (__u64)rq;
	struct st_rq r = {}, *old;
	__u32 opf;

	if (stopped || !armed_ns)
		return;
	old = bpf_map_lookup_elem(&rqs, &key);
	if (old)
		stale(key, old, now);
	opf = rq->cmd_flags;
	r.start_ns = now;
	r.dev = rq_dev(rq);
	r.owner = owner_of(rq);
	r.op = op_of(opf);
	if ((opf & REQ_PREFLUSH) && rq->__data_len == 0)
		r.op = ST_OP_PREFLUSH;
	else if (opf & REQ_PREFLUSH)
		r.flags |= ST_RQ_PREFLUSH;
	if (opf & REQ_FUA)
		r.flags |= ST_RQ_FUA;
	disk_of(r.dev);
	new_rq(key, &r, c);
}

SEC("tp_btf/block_io_start")
int BPF_PROG(block_io_start, struct request *rq)
{
	__u64 t0 = bpf_ktime_get_ns();

	struct st_counters *c = count_run(ST_PROG_IO_START);

	rq_start(rq, t0, c);
	work_done(c, ST_PROG_IO_START, t0);
	return 0;
}

SEC("tp_btf/block_rq_insert")
int BPF_PROG(block_rq_insert, struct request *rq)
{
	__u64 t0 = bpf_ktime_get_ns();

	struct st_counters *c = count_run(ST_PROG_INSERT);

	if (!have_io_start)
		rq_start(rq, t0, c);
	work_done(c, ST_PROG_INSERT, t0);
	return 0;
}

/* issued_entry finds the entry of a request being issued, or makes one for
 * a request that had no start: the flush machinery's FLUSH command, which
 * starts at its kick (its start_time_ns, as diskstats times it), and a
 * request that started before the probe was armed, tracked for the depth
 * only. */
static __always_inline struct st_rq *issued_entry(struct request *rq, __u64 now, struct st_counters *c)
{
	__u64 key = (__u64)rq, kick = 0;
	struct st_rq r = {}, *e;
	__u32 opf = rq->cmd_flags;
	bool flush = (opf & REQ_OP_MASK) == REQ_OP_FLUSH;

	if (flush)
		kick = rq->start_time_ns;
	e = bpf_map_lookup_elem(&rqs, &key);
	if (e && (!flush || e->kick_ns == kick))
		return e;
	if (e) /* the flush command reused for another flush */
		stale(key, e, now);
	r.dev = rq_dev(rq);
	r.op = op_of(opf);
	r.owner = owner_of(rq);
	r.start_ns = now;
	if (flush && kick >= armed_ns && kick <= now) {
		r.start_ns = kick;
		r.kick_ns = kick;
	} else {
		r.flags |= ST_RQ_PRE;
		r.kick_ns = kick;
	}
	disk_of(r.dev);
	return new_rq(key, &r, c);
}

/* check_recent finds, among the disk's last issued requests, one whose
 * completion the probe missed: freed by the kernel (idle, with no hardware
 * context: kernel_freed) while its entry still has it in the driver. Such
 * a completion is rare (8 of 30,000 reads at depth 1 here; bpftrace's own
 * tracepoint program, counting issues and completions, missed 11 of 87,000
 * in the same run, 9 of them in one 0.35 ms stretch), but each held the
 * disk's depth one too high until the request was reused. */
static __always_inline void check_recent(struct st_disk *d, __u64 key, __u64 now)
{
	for (int i = 0; i < ST_RECENT; i++) {
		__u64 prev = d->recent[i];
		struct request *old = (struct request *)prev;
		struct st_rq *r;

		if (!prev || prev == key)
			continue;
		if (!kernel_freed(old))
			continue;
		r = bpf_map_lookup_elem(&rqs, &prev);
		if (r && (r->flags & ST_RQ_IN_DRIVER)) {
			d->recent[i] = 0;
			stale(prev, r, now);
		}
	}
	d->recent[d->recent_next++ % ST_RECENT] = key;
}

/* sweep, run once over the requests' map as the probe stops (before its
 * programs stop counting), finds every request whose completion it missed
 * that check_recent could not: one no later request of its disk followed
 * closely enough (at depth 16, one of the last requests of a run: fio's
 * 97,603 reads against 97,571 seen + 29 found missed in one run). The test
 * is check_recent's, the kernel's state read first: an entry in the driver
 * whose request the kernel has freed. It is counted missed and taken out
 * of the driver's counts, and marked so that the struct's next start does
 * not count it again (entries are not deleted while the map is walked). */
SEC("iter/bpf_map_elem")
int sweep(struct bpf_iter__bpf_map_elem *ctx)
{
	__u64 *key = ctx->key;
	struct st_rq *r = ctx->value;

	if (!key || !r || !kernel_freed((struct request *)*key))
		return 0;
	if (!(r->flags & ST_RQ_IN_DRIVER) || (r->flags & (ST_RQ_PRE | ST_RQ_SWEPT)))
		return 0;
	missed(r, bpf_ktime_get_ns()); /* which marks it ST_RQ_SWEPT */
	return 0;
}

static __always_inline void rq_issue(struct request *rq, __u64 now, struct st_counters *c)
{
	struct st_disk *d;
	struct st_rq *r;
	__s64 depth;

	if (stopped || !armed_ns)
		return;
	r = issued_entry(rq, now, c);
	if (!r)
		return;
	leave_driver(r, now); /* issued again without a requeue seen */
	d = bpf_map_lookup_elem(&disks, &r->dev);
	if (!d)
		return;
	check_recent(d, (__u64)rq, now);
	r->issue_ns = now;
	__sync_fetch_and_or(&r->flags, ST_RQ_IN_DRIVER);
	depth = __sync_fetch_and_add(&d->issued, 1) + 1;
	if (r->owner == ST_OWNER_WORKLOAD) {
		__sync_fetch_and_or(&r->flags, ST_RQ_OWN_IN_DRIVER);
		if (!(r->flags & ST_RQ_ISSUED))
			r->own_depth = __sync_fetch_and_add(&d->own_issued, 1) + 1;
		else
			__sync_fetch_and_add(&d->own_issued, 1);
	}
	if (!(r->flags & ST_RQ_ISSUED)) {
		__sync_fetch_and_or(&r->flags, ST_RQ_ISSUED);
		r->queue_ns = now > r->start_ns ? now - r->start_ns : 0;
		r->depth = depth > 0 ? depth : 1;
	}
}

SEC("tp_btf/block_rq_issue")
int BPF_PROG(block_rq_issue, struct request *rq)
{
	__u64 t0 = bpf_ktime_get_ns();

	struct st_counters *c = count_run(ST_PROG_ISSUE);

	rq_issue(rq, t0, c);
	work_done(c, ST_PROG_ISSUE, t0);
	return 0;
}

/* A requeued request left the driver; its service restarts at its next
 * issue. */
SEC("tp_btf/block_rq_requeue")
int BPF_PROG(block_rq_requeue, struct request *rq)
{
	__u64 t0 = bpf_ktime_get_ns(), key = (__u64)rq;

	struct st_counters *c = count_run(ST_PROG_ISSUE);
	struct st_rq *r;

	if (!stopped) {
		r = bpf_map_lookup_elem(&rqs, &key);
		if (r)
			leave_driver(r, t0);
	}
	work_done(c, ST_PROG_ISSUE, t0);
	return 0;
}

/* commit adds a completed request to its disk and op. */
static __always_inline void commit(struct st_rq *r, __u64 now, bool failed)
{
	struct st_dev_stats *s = dev_stats(r->dev, r->op);
	__u64 lat = now > r->start_ns ? now - r->start_ns : 0, sv = r->service_ns;

	if (!s)
		return;
	if (!(r->flags & ST_RQ_ISSUED))
		sv = lat; /* served by the flush machinery on its behalf */
	__sync_fetch_and_add(&s->requests, 1);
	__sync_fetch_and_add(&s->bytes, r->bytes);
	__sync_fetch_and_add(&s->queue_ns, r->queue_ns);
	__sync_fetch_and_add(&s->service_ns, sv);
	__sync_fetch_and_add(&s->latency_ns, lat);
	__sync_fetch_and_add(&s->size_slots[slot_of(r->bytes, ST_SLOTS)], 1);
	__sync_fetch_and_add(&s->queue_slots[slot_of(r->queue_ns / 1000, ST_SLOTS)], 1);
	__sync_fetch_and_add(&s->service_slots[slot_of(sv / 1000, ST_SLOTS)], 1);
	if (r->flags & ST_RQ_ISSUED) {
		__sync_fetch_and_add(&s->issued, 1);
		__sync_fetch_and_add(&s->depth_slots[slot_of(r->depth, ST_SLOTS)], 1);
	}
	if (r->flags & ST_RQ_PREFLUSH)
		__sync_fetch_and_add(&s->preflush, 1);
	if (r->flags & ST_RQ_FUA)
		__sync_fetch_and_add(&s->fua, 1);
	if (failed)
		__sync_fetch_and_add(&s->errors, 1);
	if (r->owner == ST_OWNER_WORKLOAD) {
		__sync_fetch_and_add(&s->own_requests, 1);
		__sync_fetch_and_add(&s->own_bytes, r->bytes);
		__sync_fetch_and_add(&s->own_service_ns, sv);
		__sync_fetch_and_add(&s->own_latency_ns, lat);
		if (r->flags & ST_RQ_ISSUED)
			__sync_fetch_and_add(&s->own_depth_slots[slot_of(r->own_depth, ST_SLOTS)], 1);
	} else if (r->owner == ST_OWNER_WRITEBACK) {
		__sync_fetch_and_add(&s->wb_requests, 1);
		__sync_fetch_and_add(&s->wb_bytes, r->bytes);
	}
}

static __always_inline void rq_complete(struct request *rq, int error, unsigned int nr_bytes, __u64 now)
{
	__u64 key = (__u64)rq;
	struct st_dev_stats *s;
	struct st_rq *r;
	__u32 opf;

	if (stopped || !armed_ns)
		return;
	/* A partial completion leaves bytes to do: the request goes on. */
	if (rq->__data_len > nr_bytes) {
		r = bpf_map_lookup_elem(&rqs, &key);
		if (r)
			r->bytes += nr_bytes;
		return;
	}
	r = bpf_map_lookup_elem(&rqs, &key);
	if (!r || (r->flags & ST_RQ_PRE)) {
		/* Started before the probe was armed: counted as unseen, once
		 * (the data step of a flush sequence ends again, below). */
		opf = rq->cmd_flags;
		if (r)
			leave_driver(r, now);
		if ((opf & REQ_OP_MASK) != REQ_OP_FLUSH && (rq->rq_flags & rqf_flush_seq())) {
			if (r)
				r->bytes += nr_bytes;
			return;
		}
		s = dev_stats(r ? r->dev : rq_dev(rq), r ? r->op : op_of(opf));
		if (s) {
			__sync_fetch_and_add(&s->unseen, 1);
			__sync_fetch_and_add(&s->unseen_bytes, nr_bytes + (r ? r->bytes : 0));
		}
		if (r)
			forget(key, r, now);
		return;
	}
	r->bytes += nr_bytes;
	leave_driver(r, now);
	/* The data step of a write with a cache flush before or after it
	 * (REQ_PREFLUSH, REQ_FUA without FUA in the device): the flush
	 * machinery completes the request again, with 0 bytes, once its
	 * post-flush is done. It is counted then, once. */
	if (r->op != ST_OP_FLUSH && (rq->rq_flags & rqf_flush_seq()))
		return;
	commit(r, now, error != 0);
	bpf_map_delete_elem(&rqs, &key);
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(block_rq_complete, struct request *rq, blk_status_t error, unsigned int nr_bytes)
{
	__u64 t0 = bpf_ktime_get_ns();

	struct st_counters *c = count_run(ST_PROG_COMPLETE);

	rq_complete(rq, error, nr_bytes, t0);
	work_done(c, ST_PROG_COMPLETE, t0);
	return 0;
}

/* A request merged into another is freed without a completion: its entry
 * goes, and diskstats counts it as a merge. */
SEC("tp_btf/block_rq_merge")
int BPF_PROG(block_rq_merge, struct request *rq)
{
	__u64 t0 = bpf_ktime_get_ns(), key = (__u64)rq;

	struct st_counters *c = count_run(ST_PROG_MERGE);
	struct st_dev_stats *s;
	struct st_rq *r;

	if (!stopped) {
		r = bpf_map_lookup_elem(&rqs, &key);
		s = dev_stats(r ? r->dev : rq_dev(rq), r ? r->op : op_of(rq->cmd_flags));
		if (s)
			__sync_fetch_and_add(&s->merges, 1);
		if (r)
			forget(key, r, t0);
	}
	work_done(c, ST_PROG_MERGE, t0);
	return 0;
}

static __always_inline void bio_merge(struct bio *bio)
{
	struct gendisk *disk = bio->bi_bdev->bd_disk;
	struct st_dev_stats *s;
	__u32 dev;

	if (stopped || !disk)
		return;
	dev = disk_dev(disk);
	s = dev_stats(dev, op_of(bio->bi_opf));
	if (s)
		__sync_fetch_and_add(&s->merges, 1);
}

SEC("tp_btf/block_bio_backmerge")
int BPF_PROG(block_bio_backmerge, struct bio *bio)
{
	__u64 t0 = bpf_ktime_get_ns();

	struct st_counters *c = count_run(ST_PROG_MERGE);

	bio_merge(bio);
	work_done(c, ST_PROG_MERGE, t0);
	return 0;
}

SEC("tp_btf/block_bio_frontmerge")
int BPF_PROG(block_bio_frontmerge, struct bio *bio)
{
	__u64 t0 = bpf_ktime_get_ns();

	struct st_counters *c = count_run(ST_PROG_MERGE);

	bio_merge(bio);
	work_done(c, ST_PROG_MERGE, t0);
	return 0;
}

/* ---- page cache ---- */

/* current_sql is the current thread's entry of sql_threads (the
 * statement it runs), NULL without one (or without the statement probe). */
static __always_inline struct sq_thread *current_sql(void)
{
	return bpf_task_storage_get(&sql_threads, bpf_get_current_task_btf(), 0, 0);
}

/* stmt_io_of is the stmt_io entry of the statement sq runs, NULL if
 * none. */
static __always_inline struct sq_io *stmt_io_of(struct sq_thread *sq)
{
	__u32 id;

	if (!sq || !sq->stmt_id)
		return NULL;
	id = sq->stmt_id;
	return bpf_map_lookup_elem(&stmt_io, &id);
}

/* cache_run counts a run of a page-cache program and returns the per-CPU
 * counts if the current task is the workload's, NULL otherwise; cnt, if
 * not NULL, gets count_run's counters (for the programs that time their
 * work). */
static __always_inline struct st_cache *cache_run(struct st_counters **cnt)
{
	__u32 zero = 0;
	struct st_cache *c = bpf_map_lookup_elem(&cache, &zero);
	struct st_counters *r = count_run(ST_PROG_CACHE);

	if (cnt)
		*cnt = r;
	if (stopped || !current_tracked())
		return NULL;
	return c;
}

/* folio_pages is folio_nr_pages(): 1 unless the folio is large.
 * f is the tracepoint's BTF pointer, so its fields load directly (a
 * faulting load gives 0) instead of a probe-read call each. flags is an
 * unsigned long, or (6.18+) memdesc_flags_t wrapping one: it is loaded by
 * its offset as an unsigned long, which fits both. */
static __always_inline __u64 folio_pages(struct folio *f)
{
	unsigned long flags = *(unsigned long *)((void *)f + bpf_core_field_offset(f->flags));

	if (!(flags & (1UL << bpf_core_enum_value(enum pageflags, PG_head))))
		return 1;
	if (bpf_core_field_exists(f->_nr_pages))
		return f->_nr_pages;
	return 1UL << (f->_flags_1 & 0xff);
}

/* in_read tells whether the current thread is in a read call: its pages
 * added to the cache are read misses (or their readahead). */
static __always_inline bool in_read(void)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());

	switch ((long)regs->orig_ax) {
	case NR_read:
	case NR_pread64:
	case NR_readv:
	case NR_preadv:
	case NR_preadv2:
		return true;
	}
	return false;
}

SEC("tp_btf/mm_filemap_get_pages")
int BPF_PROG(filemap_get_pages, struct address_space *mapping, unsigned long index, unsigned long last)
{
	struct st_cache *c = cache_run(NULL);

	if (c && last >= index)
		c->lookups += last - index + 1;
	return 0;
}

SEC("tp_btf/mm_filemap_add_to_page_cache")
int BPF_PROG(filemap_add, struct folio *folio)
{
	struct st_counters *cnt = NULL;
	struct st_cache *c = cache_run(&cnt);
	__u64 t0;

	if (!c)
		return 0;
	t0 = time_start(cnt, ST_PROG_CACHE);
	if (in_read()) {
		__u64 n = folio_pages(folio);
		struct sq_io *io = stmt_io_of(current_sql());

		c->read_added += n;
		if (io)
			io->read_added += n;
	} else {
		c->other_added += folio_pages(folio);
	}
	work_done(cnt, ST_PROG_CACHE, t0);
	return 0;
}

SEC("tp_btf/mm_filemap_fault")
int BPF_PROG(filemap_fault, struct address_space *mapping, unsigned long index)
{
	struct st_cache *c = cache_run(NULL);
	struct sq_io *io;

	if (!c)
		return 0;
	c->fault_lookups++;
	io = stmt_io_of(current_sql());
	if (io)
		io->faults++;
	return 0;
}

SEC("tp_btf/page_cache_sync_ra")
int BPF_PROG(sync_ra, struct inode *inode, unsigned long index)
{
	struct st_cache *c = cache_run(NULL);

	if (c)
		c->ra_sync++;
	return 0;
}

SEC("tp_btf/page_cache_async_ra")
int BPF_PROG(async_ra, struct inode *inode, unsigned long index)
{
	struct st_cache *c = cache_run(NULL);

	if (c)
		c->ra_async++;
	return 0;
}

/* mark_mapping_written remembers that the workload dirtied mapping's
 * inode. */
static __always_inline void mark_mapping_written(struct address_space *mapping)
{
	struct st_file_key k = {};
	struct inode *host;

	if (!mapping)
		return;
	/* mapping is the tracepoint's BTF pointer: its fields load directly
	 * (a faulting load gives 0), no probe-read call each. */
	host = mapping->host;
	if (!host)
		return;
	k.ino = host->i_ino;
	k.dev = host->i_sb->s_dev;
	mark_written(&k);
}

SEC("tp_btf/writeback_dirty_folio")
int BPF_PROG(dirty_folio, struct folio *folio, struct address_space *mapping)
{
	struct st_counters *cnt = NULL;
	struct st_cache *c = cache_run(&cnt);
	__u64 t0;

	if (!c)
		return 0;
	t0 = time_start(cnt, ST_PROG_CACHE);
	c->dirtied += folio_pages(folio);
	mark_mapping_written(mapping);
	work_done(cnt, ST_PROG_CACHE, t0);
	return 0;
}

/* mark_inode_written remembers inode as written by the workload when the
 * current thread is its. */
static __always_inline void mark_inode_written(struct inode *inode)
{
	struct st_file_key k = {};

	if (!cache_run(NULL) || !inode)
		return;
	/* inode is the tracepoint's BTF pointer: its fields load directly. */
	k.ino = inode->i_ino;
	k.dev = inode->i_sb->s_dev;
	mark_written(&k);
}

/* A clean inode became dirty (__mark_inode_dirty, in the dirtying
 * thread): once per inode until writeback cleans it, where
 * writeback_dirty_folio runs for every page. Without want_files this is
 * what marks the workload's files for the attribution of their
 * writeback. */
SEC("tp_btf/writeback_dirty_inode_enqueue")
int BPF_PROG(dirty_inode_enqueue, struct inode *inode)
{
	mark_inode_written(inode);
	return 0;
}

/* The inode's own fields were dirtied (a write's time or size update): at
 * most once a clock tick per file for a steady writer, so a file that
 * stays dirty across writeback passes (enqueue does not run again) is
 * still marked. */
SEC("tp_btf/writeback_dirty_inode_start")
int BPF_PROG(dirty_inode_start, struct inode *inode, int flags)
{
	mark_inode_written(inode);
	return 0;
}

SEC("tp_btf/balance_dirty_pages")
int BPF_PROG(balance_dirty_pages, struct bdi_writeback *wb, struct dirty_throttle_control *dtc,
	     unsigned long dirty_ratelimit, unsigned long task_ratelimit, unsigned long dirtied,
	     unsigned long period, long pause, unsigned long start_time)
{
	struct st_cache *c = cache_run(NULL);

	if (!c)
		return 0;
	c->throttled++;
	if (pause > 0)
		c->pause_jiffies += pause;
	return 0;
}

/* ---- files (want_files) ---- */

/* bpf_rdonly_cast (6.2+) makes a plain pointer one the verifier lets a
 * tp_btf program load from directly, each load a plain instruction with an
 * exception-table fixup instead of a bpf_probe_read_kernel call: the file
 * lookup below took ~400 ns a call with CO-RE probe reads and about a fifth
 * of that this way (BenchmarkFileCallCost). Without it the probe reads stay. */
extern void *bpf_rdonly_cast(const void *obj__ign, __u32 btf_id__k) __ksym __weak;
#ifndef bpf_ksym_exists
/* As libbpf 1.2's bpf_helpers.h defines it (the vendored one predates it). */
#define bpf_ksym_exists(sym) ({ _Static_assert(!__builtin_constant_p(!!sym), #sym " should be marked as __weak"); !!sym; })
#endif

/* fileinfo is what sys_enter needs of an open file. */
struct fileinfo {
	__u64 ino;
	__s64 pos;
	__s64 size;
	__u32 dev;
	__u32 mode;
	__u32 flags;
};

static __always_inline void file_info(struct file *f, struct fileinfo *fi)
{
	if (bpf_ksym_exists(bpf_rdonly_cast)) {
		struct file *file = bpf_rdonly_cast(f, bpf_core_type_id_kernel(struct file));
		struct inode *inode = file->f_inode;

		fi->mode = inode->i_mode;
		fi->ino = inode->i_ino;
		fi->dev = inode->i_sb->s_dev;
		fi->size = inode->i_size;
		fi->flags = file->f_flags;
		fi->pos = file->f_pos;
		return;
	}
	fi->mode = BPF_CORE_READ(f, f_inode, i_mode);
	fi->ino = BPF_CORE_READ(f, f_inode, i_ino);
	fi->dev = BPF_CORE_READ(f, f_inode, i_sb, s_dev);
	fi->size = BPF_CORE_READ(f, f_inode, i_size);
	fi->flags = BPF_CORE_READ(f, f_flags);
	fi->pos = BPF_CORE_READ(f, f_pos);
}

static __always_inline __u64 blocked_ns(struct ta_thread *t)
{
	return t->ns[TA_CAT_STORAGE_READ] + t->ns[TA_CAT_STORAGE_WRITE] + t->ns[TA_CAT_STORAGE_SYNC];
}

/* kind_by_name tells a SQLite journal or WAL by its name's suffix: a
 * journal's header holds no magic until SQLite syncs it, and in DELETE
 * mode every transaction writes a new journal file. */
static __always_inline __u32 kind_by_name(__u8 *name)
{
	int n = 0;

	for (int i = 0; i < ST_NAME_LEN; i++) {
		if (name[i] == 0)
			break;
		n = i + 1;
	}
	if (n >= 8 && n <= ST_NAME_LEN) {
		__u8 *e = name + ((n - 8) & (ST_NAME_LEN - 1));

		if ((n - 8) <= ST_NAME_LEN - 8 && e[0] == '-' && e[1] == 'j' && e[2] == 'o' && e[3] == 'u' && e[4] == 'r' &&
		    e[5] == 'n' && e[6] == 'a' && e[7] == 'l')
			return ST_KIND_JOURNAL;
	}
	if (n >= 4 && n <= ST_NAME_LEN) {
		__u8 *e = name + ((n - 4) & (ST_NAME_LEN - 1));

		if ((n - 4) <= ST_NAME_LEN - 4 && e[0] == '-' && e[1] == 'w' && e[2] == 'a' && e[3] == 'l')
			return ST_KIND_WAL;
	}
	return ST_KIND_NONE;
}

/* fold_entry is the entry of the directory that file is in, for a file
 * that found files full, with its key in *dk; the catch-all {0, 0} when
 * dirs is full too. The file is counted in the entry's files once. */
static __noinline struct st_file *fold_entry(struct st_file_key *k, struct file *file, __u32 tgid, struct st_counters *c, struct st_file_key *dk)
{
	struct dentry *d = BPF_CORE_READ(file, f_path.dentry);
	struct dentry *parent = d ? BPF_CORE_READ(d, d_parent) : NULL;
	struct st_file *f = NULL;
	__u8 one = 1;
	long err;

	dk->ino = 0;
	dk->dev = 0;
	dk->_pad = 0;
	if (parent && parent != d) {
		dk->ino = BPF_CORE_READ(parent, d_inode, i_ino);
		dk->dev = k->dev;
		f = bpf_map_lookup_elem(&dirs, dk);
		if (!f) {
			bpf_map_update_elem(&dirs, dk, &zero_file, BPF_NOEXIST);
			f = bpf_map_lookup_elem(&dirs, dk);
			if (f && f->depth == 0) {
				f->tgid = tgid;
				fill_names(f->names, &f->depth, &f->truncated, parent);
			}
		}
	}
	if (!f) {
		dk->ino = 0;
		dk->dev = 0;
		f = bpf_map_lookup_elem(&dirs, dk);
		if (!f)
			return NULL;
	}
	err = bpf_map_update_elem(&folded, k, &one, BPF_NOEXIST);
	if (err == 0)
		__sync_fetch_and_add(&f->files, 1);
	else if (err != -ST_EEXIST && c)
		c->fold_uncounted++;
	return f;
}

/* file_entry is the entry that counts a call on file k, with its key in
 * *ek: the file's own, or its directory's when files is full. */
static __always_inline struct st_file *file_entry(struct st_file_key *k, struct file *file, __u32 tgid, struct st_counters *c, struct st_file_key *ek)
{
	struct st_file *f = bpf_map_lookup_elem(&files, k);
	struct dentry *d;

	*ek = *k;
	if (f)
		return f;
	if (bpf_map_lookup_elem(&folded, k)) {
		f = fold_entry(k, file, tgid, c, ek);
		goto folded;
	}
	bpf_map_update_elem(&files, k, &zero_file, BPF_NOEXIST);
	f = bpf_map_lookup_elem(&files, k);
	if (!f) {
		f = fold_entry(k, file, tgid, c, ek);
		goto folded;
	}
	f->tgid = tgid;
	d = BPF_CORE_READ(file, f_path.dentry);
	if (d) {
		fill_names(f->names, &f->depth, &f->truncated, d);
		f->unlinked = BPF_CORE_READ(file, f_inode, i_nlink) == 0;
		f->generation = BPF_CORE_READ(file, f_inode, i_generation);
		if (f->depth > 0)
			f->kind = kind_by_name(f->names[0]);
	}
	return f;
folded:
	if (c) {
		if (f)
			c->file_folded++;
		else
			c->file_dropped++;
	}
	return f;
}

/* enter_call notes a read, write or sync call of the workload on a
 * regular file in the thread's call state. */
static __always_inline void enter_call(struct task_struct *task, struct pt_regs *regs, long id, __u32 op, struct st_call *st)
{
	struct ta_thread *t;
	struct fileinfo fi = {};
	struct file *file;
	__s64 off = -1;
	__u32 tid;

	file = fd_file(task, (int)regs->di);
	if (!file)
		return;
	file_info(file, &fi);
	/* Regular files only: pipes, sockets and devices are not storage. */
	if ((fi.mode & 0170000) != 0100000)
		return;
	if (!st)
		st = bpf_task_storage_get(&calls, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!st)
		return;
	st->nr = id;
	st->op = op;
	st->file = (__u64)file;
	st->key.ino = fi.ino;
	st->key.dev = fi.dev;
	st->vectored = 0;
	st->buf = regs->si;
	switch (id) {
	case NR_pread64: case NR_pwrite64: case NR_preadv: case NR_pwritev:
		off = regs->r10;
		break;
	case NR_preadv2: case NR_pwritev2:
		off = regs->r10; /* -1: the file position */
		break;
	}
	if (id == NR_readv || id == NR_writev || id == NR_preadv || id == NR_pwritev || id == NR_preadv2 || id == NR_pwritev2) {
		struct iovec iov = {};

		bpf_probe_read_user(&iov, sizeof(iov), (void *)regs->si);
		st->buf = (__u64)iov.iov_base;
		st->vectored = 1;
	}
	if (off < 0 && op != ST_EV_SYNC) {
		if (op == ST_EV_WRITE && (fi.flags & O_APPEND))
			off = fi.size;
		else
			off = fi.pos;
	}
	st->off = off;
	tid = task->pid;
	t = thread_of(tid);
	st->has_thread = t != NULL;
	if (t) {
		st->blocked0 = blocked_ns(t);
		st->lock0 = t->ns[TA_CAT_LOCK];
	}
	st->ts = bpf_ktime_get_ns();
	/* Count the call among its file's in progress, when the file is in
	 * the map already (its first call is not: the entry is made at the
	 * first call's end, so that most calls cost one lookup). */
	st->inflight = 0;
	if (op != ST_EV_SYNC) {
		struct st_file *f = bpf_map_lookup_elem(&files, &st->key);
		__u32 i = op == ST_EV_WRITE;

		if (f) {
			if (__sync_fetch_and_add(&f->inflight[i], 1) == 0)
				f->busy_start[i] = st->ts;
			st->inflight = 1;
		}
	}
}

/* Asynchronous IO (bpf/storage.h st_aio). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, ST_AIO_KINDS);
	__type(key, __u32);
	__type(value, struct st_aio);
} aio SEC(".maps");

/* The opcodes of libaio's iocb and io_uring's SQE that read or write
 * (uapi: linux/aio_abi.h, linux/io_uring.h). */
#define IOCB_CMD_PREAD 0
#define IOCB_CMD_PWRITE 1
#define IOCB_CMD_PREADV 7
#define IOCB_CMD_PWRITEV 8
#define URING_READV 1
#define URING_WRITEV 2
#define URING_READ_FIXED 4
#define URING_WRITE_FIXED 5
#define URING_READ 22
#define URING_WRITE 23
#define URING_READ_MULTISHOT 49
#define URING_READV_FIXED 60
#define URING_WRITEV_FIXED 61

static __always_inline void aio_count(__u32 kind, int dir, __s64 res)
{
	struct st_aio *a = bpf_map_lookup_elem(&aio, &kind);

	if (!a || dir == 0)
		return;
	if (res < 0) {
		a->errors++;
		return;
	}
	if (dir < 0) {
		a->reads++;
		a->read_bytes += res;
	} else {
		a->writes++;
		a->write_bytes += res;
	}
}

/* async_file counts a completed asynchronous read or write (io_uring's,
 * libaio's) of file in its entry (want_files), as a read or write call is
 * counted: the files table holds the IO a workload makes so (MariaDB
 * writes its data files through io_uring). Calls and bytes only: the
 * request has no call time of a thread, and no sequential/random test. */
static __always_inline void async_file(struct file *file, __u32 tgid, int dir, __s64 res, struct st_counters *c)
{
	struct st_file_key k = {}, ek;
	struct st_file *f;
	__u32 i = dir > 0;

	if (!file || res < 0 || dir == 0)
		return;
	if ((BPF_CORE_READ(file, f_inode, i_mode) & 0170000) != 0100000)
		return; /* not a regular file */
	k.ino = BPF_CORE_READ(file, f_inode, i_ino);
	k.dev = BPF_CORE_READ(file, f_inode, i_sb, s_dev);
	f = file_entry(&k, file, tgid, c, &ek);
	if (!f)
		return;
	__sync_fetch_and_add(&f->ops[i], 1);
	__sync_fetch_and_add(&f->bytes[i], res);
	__sync_fetch_and_add(&f->size_slots[i][slot_of(res, ST_SLOTS)], 1);
	if (i == 1)
		mark_written(&k);
}

/* aio_reap is what aio_event needs of an io_getevents return. */
struct aio_reap {
	__u64 events; /* the events array, in the workload's memory */
	__u32 tgid;
	__u32 _pad;
};

/* aio_event is bpf_loop's callback for event idx of an io_getevents
 * return: its result and its iocb's opcode, and with want_files its file,
 * by the iocb's fd in the reaping thread's table (the fd it was submitted
 * on, unless the workload closed and reused it while the request was in
 * flight). bpf_loop has the verifier check the body once, with the file
 * lookup in it, instead of once per event. */
static long aio_event(__u32 idx, void *arg)
{
	struct aio_reap *x = arg;
	__u32 kind = ST_AIO_LIBAIO, zero = 0;
	struct io_event ev;
	struct st_aio *a;
	__u16 op;
	__u32 fd;
	int dir = 0;

	if (bpf_probe_read_user(&ev, sizeof(ev), (void *)(x->events + (__u64)idx * sizeof(ev))) ||
	    bpf_probe_read_user(&op, sizeof(op), (void *)(ev.obj + __builtin_offsetof(struct iocb, aio_lio_opcode)))) {
		a = bpf_map_lookup_elem(&aio, &kind);
		if (a)
			a->uncounted++;
		return 0;
	}
	if (op == IOCB_CMD_PREAD || op == IOCB_CMD_PREADV)
		dir = -1;
	else if (op == IOCB_CMD_PWRITE || op == IOCB_CMD_PWRITEV)
		dir = 1;
	aio_count(kind, dir, ev.res);
	if (want_files && dir != 0 && ev.res >= 0 &&
	    !bpf_probe_read_user(&fd, sizeof(fd), (void *)(ev.obj + __builtin_offsetof(struct iocb, aio_fildes))))
		async_file(fd_file(bpf_get_current_task_btf(), (int)fd), x->tgid, dir, ev.res, bpf_map_lookup_elem(&counters, &zero));
	return 0;
}

/* aio_reaped counts what the events an io_getevents call returned (ret of
 * them, at events in the workload's memory) moved, each event's with
 * aio_event; past ST_AIO_MAX_EVENTS they are counted as uncounted.
 * libaio's completions are seen nowhere else without kprobes. */
static __always_inline void aio_reaped(__u64 events, long ret)
{
	struct aio_reap x = {.events = events, .tgid = bpf_get_current_pid_tgid() >> 32};
	__u32 kind = ST_AIO_LIBAIO;
	struct st_aio *a;

	bpf_loop(ret < ST_AIO_MAX_EVENTS ? ret : ST_AIO_MAX_EVENTS, aio_event, &x, 0);
	if (ret > ST_AIO_MAX_EVENTS) {
		a = bpf_map_lookup_elem(&aio, &kind);
		if (a)
			a->uncounted += ret - ST_AIO_MAX_EVENTS;
	}
}

SEC("tp_btf/sys_enter")
int BPF_PROG(sys_enter, struct pt_regs *regs, long id)
{
	struct st_counters *c = count_run(ST_PROG_SYS_ENTER);
	struct task_struct *task;
	struct st_call *st;
	__u64 t0;
	__u32 op;

	switch (id) {
	case NR_read: case NR_pread64: case NR_readv: case NR_preadv: case NR_preadv2:
		op = ST_EV_READ;
		break;
	case NR_write: case NR_pwrite64: case NR_writev: case NR_pwritev: case NR_pwritev2:
		op = ST_EV_WRITE;
		break;
	case NR_fsync: case NR_fdatasync: case NR_sync_file_range:
		op = ST_EV_SYNC;
		break;
	case NR_io_getevents: case NR_io_pgetevents:
		if (stopped || !armed_ns)
			return 0;
		task = bpf_get_current_task_btf();
		if (!is_tracked(task->tgid))
			return 0;
		t0 = time_start(c, ST_PROG_SYS_ENTER);
		st = bpf_task_storage_get(&calls, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (st)
			st->aio_events = BPF_CORE_READ(regs, r10); /* the 4th argument */
		work_done(c, ST_PROG_SYS_ENTER, t0);
		return 0;
	default:
		return 0;
	}
	if (stopped)
		return 0;
	task = bpf_get_current_task_btf();
	/* Call state is made only for the workload's threads (a tracked
	 * process stays tracked): a thread that has it skips the hash
	 * lookup. */
	st = bpf_task_storage_get(&calls, task, 0, 0);
	if (!st && !is_tracked(task->tgid))
		return 0;
	t0 = time_start(c, ST_PROG_SYS_ENTER);
	enter_call(task, regs, id, op, st);
	work_done(c, ST_PROG_SYS_ENTER, t0);
	return 0;
}

/* sniff tells a SQLite file from the first bytes at offset 0. */
static __always_inline __u32 sniff(__u8 *h)
{
	if (h[0] == 'S' && h[1] == 'Q' && h[2] == 'L' && h[3] == 'i' && h[4] == 't' && h[5] == 'e' &&
	    h[6] == ' ' && h[7] == 'f' && h[8] == 'o' && h[9] == 'r' && h[10] == 'm' && h[11] == 'a' &&
	    h[12] == 't' && h[13] == ' ' && h[14] == '3' && h[15] == 0)
		return ST_KIND_DB;
	if (h[0] == 0x37 && h[1] == 0x7f && h[2] == 0x06 && (h[3] == 0x82 || h[3] == 0x83))
		return ST_KIND_WAL;
	if (h[0] == 0xd9 && h[1] == 0xd5 && h[2] == 0x05 && h[3] == 0xf9 && h[4] == 0x20 && h[5] == 0xa1 &&
	    h[6] == 0x63 && h[7] == 0xd7)
		return ST_KIND_JOURNAL;
	return ST_KIND_NONE;
}

/* stmt_count charges a call to the statement sq runs (the thread's
 * sql_threads entry; none without the statement probe). */
static __always_inline void stmt_count(struct sq_thread *sq, __u32 op, long ret, __u64 delta)
{
	struct sq_io *io = stmt_io_of(sq);

	/* The thread's syncs, for its transactions (sqlstmt's tx_end). */
	if (sq && op == ST_EV_SYNC) {
		sq->syncs++;
		sq->sync_ns += delta;
	}
	if (!io)
		return;
	switch (op) {
	case ST_EV_READ:
		io->reads++;
		io->read_bytes += ret;
		io->read_ns += delta;
		break;
	case ST_EV_WRITE:
		io->writes++;
		io->write_bytes += ret;
		io->write_ns += delta;
		break;
	default:
		io->syncs++;
		io->sync_ns += delta;
	}
}

/* exit_call counts a call of the workload that enter_call noted, now
 * that it returned ret, and sends a SQLite file's to user space. */
static __always_inline void exit_call(struct task_struct *task, struct st_call *st, long ret, struct st_counters *c, __u64 now)
{
	struct st_event *ev;
	struct sq_thread *sq;
	struct ta_thread *t;
	struct st_file *f;
	__u8 head[ST_HEAD] = {};
	__u64 delta, file;
	struct st_pos *pos, prev = {};
	struct st_file_key ek;
	bool known;
	__u32 op, tid;

	delta = now - st->ts;
	st->ts = 0;
	/* The file is still open (the call holds it): its entry is made
	 * here, one map lookup a call instead of one at each end. */
	f = file_entry(&st->key, (struct file *)st->file, task->tgid, c, &ek);
	if (!f)
		return;
	op = st->op;
	if (st->inflight) {
		__u32 j = op == ST_EV_WRITE;

		st->inflight = 0;
		__sync_fetch_and_add(&f->busy_call_ns[j], delta);
		if (__sync_fetch_and_add(&f->inflight[j], -1) == 1)
			__sync_fetch_and_add(&f->busy_ns[j], now - f->busy_start[j]);
	}
	tid = task->pid;
	t = thread_of(tid);
	if (t && st->has_thread) {
		__sync_fetch_and_add(&f->blocked_ns, blocked_ns(t) - st->blocked0);
		__sync_fetch_and_add(&f->lock_ns, t->ns[TA_CAT_LOCK] - st->lock0);
	}
	if (ret < 0) {
		__sync_fetch_and_add(&f->errors, 1);
		return;
	}
	/* One lookup serves the statement's count and the SQLite event. */
	sq = current_sql();
	stmt_count(sq, op, ret, delta);
	if (op == ST_EV_SYNC) {
		__sync_fetch_and_add(&f->syncs, 1);
		__sync_fetch_and_add(&f->sync_ns, delta);
	} else {
		__u32 i = op == ST_EV_WRITE;

		__sync_fetch_and_add(&f->ops[i], 1);
		__sync_fetch_and_add(&f->bytes[i], ret);
		__sync_fetch_and_add(&f->call_ns[i], delta);
		__sync_fetch_and_add(&f->size_slots[i][slot_of(ret, ST_SLOTS)], 1);
		count_thread(st, f, &ek, tid, i, c);
		file = st->file;
		if (f->last_file == file) {
			known = true;
			prev.start = f->last_start;
			prev.next = f->last_next;
		} else {
			/* Another open file: keep the last one's position in
			 * the map, take this one's from it. */
			pos = bpf_map_lookup_elem(&positions, &file);
			known = pos != NULL;
			if (pos)
				prev = *pos;
			if (f->last_file) {
				__u64 last = f->last_file;
				struct st_pos lp = {.start = f->last_start, .next = f->last_next};

				bpf_map_update_elem(&positions, &last, &lp, BPF_ANY);
			}
			f->last_file = file;
		}
		f->last_start = st->off;
		f->last_next = st->off + ret;
		/* Sequential: the call begins where the previous one ended, or
		 * inside it (it overlaps it, and maybe extends it): a log that
		 * rewrites its last partial block with each append (InnoDB's
		 * redo, 512-byte blocks) is written in order, not at random.
		 * Regression: MariaDB's redo log read "26,017 random writes". */
		if (known) {
			if (st->off >= prev.start && st->off <= prev.next)
				__sync_fetch_and_add(&f->seq[i], 1);
			else
				__sync_fetch_and_add(&f->random[i], 1);
		}
		if (i == 1)
			mark_written(&st->key);
		/* The bytes moved matter only for SQLite files, and for a
		 * call at offset 0 that may show one. */
		if (ret > 0 && (f->kind != ST_KIND_NONE || st->off == 0))
			bpf_probe_read_user(head, ret < ST_HEAD ? (ret & (ST_HEAD - 1)) : ST_HEAD, (void *)st->buf);
		/* A directory's entry (ek is not the file's key) is never a
		 * SQLite file: its files' events would go up as one file's. */
		if (st->off == 0 && ret >= 16 && f->kind == ST_KIND_NONE && ek.ino == st->key.ino)
			f->kind = sniff(head);
	}
	if (f->kind == ST_KIND_NONE)
		return;
	ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);
	if (!ev) {
		if (c)
			c->ev_dropped++;
		return;
	}
	ev->ts = now;
	ev->ino = st->key.ino;
	ev->dev = st->key.dev;
	ev->off = st->off;
	ev->len = ret;
	ev->tid = tid;
	ev->op = op;
	ev->kind = f->kind;
	__builtin_memcpy(ev->head, head, ST_HEAD);
	ev->b100 = 0;
	ev->has100 = 0;
	ev->stmt_id = sq ? sq->stmt_id : 0;
	if (op != ST_EV_SYNC && !st->vectored && ret > 100)
		ev->has100 = bpf_probe_read_user(&ev->b100, 1, (void *)(st->buf + 100)) == 0;
	/* No wakeup per event: a wakeup each call cost about a microsecond in
	 * the call and a context switch of the reader, which polls every 50 ms
	 * instead. It is woken by a file's first event (it opens the file
	 * through the thread's fds, which it must do while the file is open),
	 * and when the ring is a quarter full. */
	if (!f->announced || bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) > ST_RING_WAKE) {
		f->announced = 1;
		bpf_ringbuf_submit(ev, BPF_RB_FORCE_WAKEUP);
	} else {
		bpf_ringbuf_submit(ev, BPF_RB_NO_WAKEUP);
	}
}

SEC("tp_btf/sys_exit")
int BPF_PROG(sys_exit, struct pt_regs *regs, long ret)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct st_counters *c = count_run(ST_PROG_SYS_EXIT);
	struct st_call *st;
	__u64 now;

	st = bpf_task_storage_get(&calls, task, 0, 0);
	if (st && st->aio_events) {
		now = bpf_ktime_get_ns();
		if (ret > 0 && !stopped)
			aio_reaped(st->aio_events, ret);
		st->aio_events = 0;
		work_done(c, ST_PROG_SYS_EXIT, sampled(c, ST_PROG_SYS_EXIT) ? now : 0);
		return 0;
	}
	if (!st || !st->ts)
		return 0;
	now = bpf_ktime_get_ns();
	exit_call(task, st, ret, c, now);
	work_done(c, ST_PROG_SYS_EXIT, sampled(c, ST_PROG_SYS_EXIT) ? now : 0);
	return 0;
}

/* uring_dir is -1 for an io_uring read opcode, 1 for a write, 0 else. */
static __always_inline int uring_dir(__u8 op)
{
	switch (op) {
	case URING_READV:
	case URING_READ_FIXED:
	case URING_READ:
	case URING_READ_MULTISHOT:
	case URING_READV_FIXED:
		return -1;
	case URING_WRITEV:
	case URING_WRITE_FIXED:
	case URING_WRITE:
	case URING_WRITEV_FIXED:
		return 1;
	}
	return 0;
}

/* The workload's io_uring rings (st_ring), by io_ring_ctx, and the
 * submission time of each read and write in flight on them, by request. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, ST_RINGS);
	__type(key, __u64);
	__type(value, struct st_ring);
} rings SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, ST_RING_REQS);
	__type(key, __u64);
	__type(value, __u64);
} ring_reqs SEC(".maps");

const struct st_ring zero_ring = {};

/* ring_of is the entry of ring, made for tgid if missing; NULL when
 * rings is full. */
static __always_inline struct st_ring *ring_of(__u64 ring, __u32 tgid)
{
	struct st_ring *r = bpf_map_lookup_elem(&rings, &ring);

	if (r)
		return r;
	bpf_map_update_elem(&rings, &ring, &zero_ring, BPF_NOEXIST);
	r = bpf_map_lookup_elem(&rings, &ring);
	if (r)
		r->tgid = tgid;
	return r;
}

/* uring_tgid is the process that submitted r: its task context's, else
 * the current one's (the submitter, or its SQPOLL thread). */
static __always_inline __u32 uring_tgid(struct io_kiocb *r)
{
	__u32 tgid = BPF_CORE_READ(r, tctx, task, tgid);

	return tgid ?: bpf_get_current_pid_tgid() >> 32;
}

/* uring_ours says whether r, a request at an io_uring tracepoint, is a
 * tracked process's while the probe counts, and gives its tgid: the
 * filter of both io_uring programs. */
static __always_inline bool uring_ours(struct io_kiocb *r, __u32 *tgid)
{
	if (stopped || !armed_ns || !r)
		return false;
	*tgid = uring_tgid(r);
	return is_tracked(*tgid);
}

/* A read or write submitted on a ring of the workload's (want_files):
 * counted, in flight from now. */
SEC("tp_btf/io_uring_submit_req")
int BPF_PROG(io_uring_submit_req, struct io_kiocb *req)
{
	__u64 t0 = bpf_ktime_get_ns();
	struct st_counters *c = count_run(ST_PROG_AIO);
	struct io_kiocb *r = req;
	struct st_ring *ring;
	__u64 key = (__u64)req, n;
	__u32 tgid;
	__u8 op;

	if (!uring_ours(r, &tgid))
		goto out;
	op = BPF_CORE_READ(r, opcode);
	if (uring_dir(op) == 0 || op == URING_READ_MULTISHOT)
		goto out;
	ring = ring_of((__u64)BPF_CORE_READ(r, ctx), tgid);
	if (!ring || bpf_map_update_elem(&ring_reqs, &key, &t0, BPF_ANY) != 0) {
		if (c)
			c->ring_dropped++;
		goto out;
	}
	__sync_fetch_and_add(&ring->submitted, 1);
	n = __sync_fetch_and_add(&ring->inflight, 1) + 1;
	if (n > ring->max_inflight)
		ring->max_inflight = n; /* a racy max: a statistic */
out:
	work_done(c, ST_PROG_AIO, t0);
	return 0;
}

/* ring_done ends the flight of req, a read or write of ring's completed
 * now: what io_uring_submit_req began. */
static __always_inline void ring_done(__u64 ring, struct io_kiocb *req, __u64 now)
{
	__u64 key = (__u64)req, *sub;
	struct st_ring *r = bpf_map_lookup_elem(&rings, &ring);

	if (!r)
		return;
	__sync_fetch_and_add(&r->completed, 1);
	sub = bpf_map_lookup_elem(&ring_reqs, &key);
	if (!sub) {
		__sync_fetch_and_add(&r->unmatched, 1);
		return;
	}
	if (now > *sub)
		__sync_fetch_and_add(&r->flight_ns, now - *sub);
	bpf_map_delete_elem(&ring_reqs, &key);
	if (r->inflight > 0)
		__sync_fetch_and_add(&r->inflight, -1);
}

/* An io_uring completion: the request's task is the submitter (its
 * io-wq workers are threads of the same process). */
SEC("tp_btf/io_uring_complete")
int BPF_PROG(io_uring_complete, struct io_ring_ctx *ring, void *req, struct io_uring_cqe *cqe)
{
	__u64 t0 = bpf_ktime_get_ns();
	struct st_counters *c = count_run(ST_PROG_AIO);
	struct io_kiocb *r = req;
	__u32 tgid = 0;
	int dir = 0;
	__s64 res;
	__u8 op;

	if (!uring_ours(r, &tgid))
		goto out;
	op = BPF_CORE_READ(r, opcode);
	dir = uring_dir(op);
	res = BPF_CORE_READ(cqe, res);
	aio_count(ST_AIO_URING, dir, res);
	if (want_files && dir != 0) {
		async_file(BPF_CORE_READ(r, file), tgid, dir, res, c);
		if (op != URING_READ_MULTISHOT)
			ring_done((__u64)ring, r, t0);
	}
out:
	work_done(c, ST_PROG_AIO, t0);
	return 0;
}
