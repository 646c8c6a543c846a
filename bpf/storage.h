/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Types shared between bpf/storage.bpf.c and internal/probe/storage (via
 * bpf2go). Fixed-width fields only, laid out without padding holes. */
#ifndef __STORAGE_H
#define __STORAGE_H

#define ST_SLOTS 32

/* Block request operations; the order is the Go package's Ops array.
 * PREFLUSH is an empty REQ_PREFLUSH request: a cache flush as submitted
 * (fsync's blkdev_issue_flush). The flush machinery never issues it: it
 * issues a FLUSH command on its behalf, and completes it afterwards
 * (/proc/diskstats counts it as a write of 0 sectors, the command as a
 * flush). Other ops are read or write in diskstats by their direction. */
#define ST_OP_READ 0
#define ST_OP_WRITE 1
#define ST_OP_FLUSH 2
#define ST_OP_DISCARD 3
#define ST_OP_OTHER 4
#define ST_OP_PREFLUSH 5
#define ST_OP_WRITE_ZEROES 6 /* blkdev_issue_zeroout: ext4's lazy inode-table init, fallocate's zeroing; a write in diskstats */

/* Who a block request is for. */
#define ST_OWNER_OTHER 0
#define ST_OWNER_WORKLOAD 1  /* issued by a thread of the workload */
#define ST_OWNER_WRITEBACK 2 /* issued by another task for pages of a file the workload dirtied */

struct st_dev_key {
	__u32 dev; /* the whole disk's dev_t, major << 20 | minor */
	__u32 op;  /* ST_OP_* */
};

/* Per disk and op. Every figure but merges and unseen is committed once
 * per request, at its final completion, and only for requests started
 * after the probe was armed: requests == the total of every histogram
 * (depth: of those issued to the driver). */
struct st_dev_stats {
	__u64 requests;     /* completed */
	__u64 bytes;
	__u64 merges;       /* bios merged into a queued request, and requests merged into another */
	__u64 queue_ns;     /* summed start -> first issue */
	__u64 service_ns;   /* summed time in the driver, over its issues (a never issued request: start -> completion) */
	__u64 latency_ns;   /* summed start -> final completion */
	__u64 issued;       /* of the requests, those issued to the driver */
	__u64 own_requests; /* ST_OWNER_WORKLOAD */
	__u64 own_bytes;
	__u64 own_service_ns;
	__u64 own_latency_ns;
	__u64 wb_requests;  /* ST_OWNER_WRITEBACK */
	__u64 wb_bytes;
	__u64 preflush;     /* writes with data that asked for a cache flush before them (REQ_PREFLUSH) */
	__u64 fua;          /* writes that asked to be on stable media when complete (REQ_FUA) */
	__u64 errors;       /* completed with an error */
	__u64 unseen;       /* completed in the window, started before it: in no figure above */
	__u64 unseen_bytes;
	__u64 missed;       /* started in the window, their completion not seen (the kernel did not run the program): in no figure above */
	__u64 size_slots[ST_SLOTS];      /* log2 of the request's bytes */
	__u64 queue_slots[ST_SLOTS];     /* log2 of microseconds, slot 0 from 0 */
	__u64 service_slots[ST_SLOTS];
	__u64 depth_slots[ST_SLOTS];     /* the disk's requests in the driver at its first issue, this one included */
	__u64 own_depth_slots[ST_SLOTS]; /* the workload's requests in the driver at its first issue (its own only) */
};

/* Per disk: the requests in the driver now, each counted by the flag of
 * its rqs entry, so the counts cannot drift. */
#define ST_RECENT 4

struct st_disk {
	__s64 issued;
	__s64 own_issued;
	/* The time with at least one request in the driver: each request
	 * leaving it adds the part of its stay after busy_until, the latest
	 * end of a stay so far (see leave_driver). */
	__u64 busy_ns;
	__u64 busy_until;
	/* The last ST_RECENT requests issued, checked at each issue for a
	 * completion the probe missed (see check_recent). */
	__u64 recent[ST_RECENT];
	__u64 recent_next;
};

/* st_rq.flags */
#define ST_RQ_PRE 1          /* started before the probe was armed: tracked for the depth only */
#define ST_RQ_ISSUED 2       /* issued to the driver at least once */
#define ST_RQ_IN_DRIVER 4    /* in the driver now, counted in st_disk.issued */
#define ST_RQ_OWN_IN_DRIVER 8 /* and in st_disk.own_issued */
#define ST_RQ_PREFLUSH 16
#define ST_RQ_FUA 32
#define ST_RQ_SWEPT 64      /* found completed unseen (missed, by sweep or another way): counted missed already */

/* A request in flight, keyed by its address. */
struct st_rq {
	__u64 start_ns;   /* block_io_start (block_rq_insert without it; a flush command's own start) */
	__u64 issue_ns;   /* the current issue, while in the driver */
	__u64 queue_ns;
	__u64 service_ns;
	__u64 bytes;      /* completed so far */
	__u64 kick_ns;    /* a flush command's start_time_ns: a reused one differs */
	__u64 flags;      /* ST_RQ_*; 64 bits for the atomic and/or (leave_driver) */
	__u32 dev;
	__u32 op;         /* ST_OP_*, decided at its start, before the flush machinery strips REQ_PREFLUSH */
	__u32 owner;      /* ST_OWNER_* */
	__u32 depth;      /* at its first issue */
	__u32 own_depth;
	__u32 _pad;
};

/* Page cache, per-CPU counters for the workload. */
struct st_cache {
	__u64 lookups;        /* pages looked up by buffered reads (filemap_get_pages) */
	__u64 read_added;     /* pages added to the cache during the workload's read calls */
	__u64 other_added;    /* pages added outside read calls (writes, faults) */
	__u64 fault_lookups;  /* pages looked up by mmap faults */
	__u64 ra_sync;        /* readahead started by a miss */
	__u64 ra_async;       /* readahead started by a hit on the marker */
	__u64 dirtied;        /* pages dirtied */
	__u64 throttled;      /* balance_dirty_pages pauses */
	__u64 pause_jiffies;  /* their summed pause */
};

struct st_file_key {
	__u64 ino;
	__u32 dev; /* the kernel's dev_t: major << 20 | minor */
	__u32 _pad;
};

/* A directory's entry in dirs holds the files of it that found files
 * full (ST_FOLD_FILES files a run keeps one by one): key {ino: the
 * directory's inode, dev}; {0, 0} is the entry of files whose directory
 * found dirs full too, made by user space at load, so a call is never
 * lost, only counted with less detail. */
#define ST_MAX_FILES 4096
#define ST_MAX_DIRS 2048
#define ST_MAX_FOLDED 131072

/* Where an open file's last call began and ended (positions). */
struct st_pos {
	__s64 start;
	__s64 next;
};

/* A thread that read (op 0) or wrote (op 1) a file. */
struct st_thread_file_key {
	__u64 ino;
	__u32 dev;
	__u32 tid_op; /* tid | op << 31 (a tid fits in 22 bits) */
};

/* SQLite file kinds, told from the bytes at offset 0. */
#define ST_KIND_NONE 0
#define ST_KIND_DB 1
#define ST_KIND_WAL 2
#define ST_KIND_JOURNAL 3

#define ST_PATH_DEPTH 8 /* PATH_DEPTH of path.bpf.h */
#define ST_NAME_LEN 64 /* PATH_NAME_LEN */

/* Per file the workload read, wrote or synced ([0] reads, [1] writes). */
struct st_file {
	__u64 ops[2];
	__u64 bytes[2];
	__u64 seq[2];      /* operations that began where the previous one on the same open file ended, or inside it */
	__u64 random[2];   /* operations that began elsewhere (the first on an open file is neither) */
	__u64 call_ns[2];  /* time in the calls */
	__u64 blocked_ns;  /* of which blocked on storage (read, write, sync) */
	__u64 lock_ns;     /* of which waiting on locks */
	__u64 syncs;       /* fsync, fdatasync, sync_file_range */
	__u64 sync_ns;
	__u64 errors;
	__u64 size_slots[2][ST_SLOTS]; /* log2 of the bytes moved */
	/* The read ([0]) and write ([1]) calls on it in progress (counted
	 * at entry, for a file already in the map), when the count last left
	 * 0, and the time it was above 0: the time those calls took over
	 * busy_ns is how many threads were in such a call at once while one
	 * was (16 writers queueing on one file's inode lock read ~16; 16
	 * spread over 16 files, ~1 each). */
	__u64 inflight[2];
	__u64 busy_start[2];
	__u64 busy_ns[2];
	__u64 busy_call_ns[2]; /* the time of the calls counted in inflight */
	/* The positions map's entry of the open file last used on it, kept
	 * here (written back when another open file is used): most files
	 * are used through one open file, so most calls skip the map. */
	__u64 last_file;
	__s64 last_next;
	__s64 last_start;  /* where that open file's last call began */
	__u32 tgid;        /* the first process that touched it */
	__u32 kind;        /* ST_KIND_* */
	__u32 depth;       /* path components filled */
	__u32 truncated;   /* the path is deeper than ST_PATH_DEPTH */
	__u32 unlinked;    /* no name left when it was first seen */
	__u32 generation;  /* the inode's i_generation, which tells a file from a later one given its inode number */
	__u32 files;       /* a directory's entry: the files folded into it (folded) */
	__u32 announced;   /* an event of it woke the reader */
	__u32 threads[2];  /* threads that read it, wrote it (thread_files) */
	__u8 names[ST_PATH_DEPTH][ST_NAME_LEN]; /* leaf first */
};

/* One read, write or sync of a SQLite file, for user space. */
#define ST_EV_READ 0
#define ST_EV_WRITE 1
#define ST_EV_SYNC 2
#define ST_HEAD 32
/* The ring buffer of events, and the fill at which a submit wakes the
 * reader, which otherwise polls every 50 ms (~4,000 events at 80,000/s, a
 * tenth of the ring); a file's first event wakes it too. */
#define ST_RING_SIZE (4 << 20)
#define ST_RING_WAKE (ST_RING_SIZE / 4)
struct st_event {
	__u64 ts;
	__u64 ino;
	__s64 off;
	__s64 len;   /* the call's return value */
	__u32 dev;
	__u32 tid;
	__u32 op;    /* ST_EV_* */
	__u32 kind;  /* ST_KIND_* */
	__u8 head[ST_HEAD]; /* the first bytes moved (a WAL or journal header, a frame header, a db header up to the page size) */
	__u8 b100;   /* the byte at 100 (a b-tree page 1's type flag) */
	__u8 has100;
	__u8 _pad[2];
	/* The SQL statement the thread was running (bpf/sqlstmt.h's
	 * sq_thread), 0 without the statement probe. */
	__u32 stmt_id;
};

/* Asynchronous IO of the workload, per interface (ST_AIO_*): what its
 * reads and writes moved, as rchar and wchar count what read and write
 * calls move. libaio's at io_getevents' return (each event's result and
 * its iocb's opcode, read from the workload's memory; with want_files,
 * which hooks the syscalls), io_uring's at each completion. */
#define ST_AIO_LIBAIO 0
#define ST_AIO_URING 1
#define ST_AIO_KINDS 2
#define ST_AIO_MAX_EVENTS 128 /* events read per io_getevents return; the rest counted in uncounted */
struct st_aio {
	__u64 reads, read_bytes, writes, write_bytes;
	__u64 errors;    /* reads and writes that failed */
	__u64 uncounted; /* events past ST_AIO_MAX_EVENTS, or unreadable */
};

/* An io_uring ring of the workload (want_files), by its io_ring_ctx: the
 * reads and writes submitted on it and completed, how many were in flight
 * at most, and their summed time from submission to completion (Little's
 * law: over the window, the mean number in flight). Multishot reads (one
 * submission, many completions) are left out. */
#define ST_RINGS 1024
#define ST_RING_REQS 16384 /* requests in flight at once, on all rings */
struct st_ring {
	__u32 tgid;
	__u32 _pad;
	__u64 submitted, completed;
	__u64 inflight;     /* submitted and not completed, now */
	__u64 max_inflight;
	__u64 flight_ns;    /* summed submission-to-completion time of the completed ones matched */
	__u64 unmatched;    /* completions whose submission was not seen (before the window, or ring_reqs full) */
};

/* Counters of the probe as a whole. */
#define ST_PROG_INSERT 0
#define ST_PROG_IO_START 1
#define ST_PROG_ISSUE 2
#define ST_PROG_COMPLETE 3
#define ST_PROG_MERGE 4 /* bio and request merges */
#define ST_PROG_SYS_ENTER 5
#define ST_PROG_SYS_EXIT 6
#define ST_PROG_CACHE 7 /* the page-cache programs, together */
#define ST_PROG_AIO 8   /* io_uring_complete: every run timed */
#define ST_NUM_PROGS 9
#define ST_TIME_EVERY 16
struct st_counters {
	__u64 runs[ST_NUM_PROGS];
	/* Runs past the filter that do work there (the workload's calls, the
	 * pages it adds or dirties; every block run), and the time they took
	 * past it, timed by the
	 * program itself (a sample of them): the stated overhead is runs x the
	 * calibrated cost of a run stopped by the filter + work_ns x worked /
	 * timed. */
	__u64 worked[ST_NUM_PROGS];
	__u64 timed[ST_NUM_PROGS];   /* of which timed: the block programs all, the others 1 in ST_TIME_EVERY */
	__u64 work_ns[ST_NUM_PROGS];
	__u64 rq_dropped;    /* requests not counted: rqs full */
	__u64 file_dropped;  /* file operations not counted: files full */
	__u64 ev_dropped;    /* SQLite events lost: ring buffer full */
	__u64 tf_dropped;    /* threads not counted on a file: thread_files full */
	__u64 file_folded;   /* file operations counted in a directory's entry: files full */
	__u64 fold_uncounted; /* files folded into a directory's entry but not counted in its files: folded full */
	__u64 ring_dropped;   /* io_uring requests whose submission was not kept: rings or ring_reqs full */
};

#endif /* __STORAGE_H */
