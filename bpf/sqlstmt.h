/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Types shared between bpf/sqlstmt.bpf.c and internal/probe/sqlprobe (via
 * bpf2go), and with bpf/storage.bpf.c (the thread's current statement,
 * which storage stamps on each SQLite file event). Fixed-width fields only,
 * laid out without padding holes. */
#ifndef __SQLSTMT_H
#define __SQLSTMT_H

#define SQ_TEXT 256       /* bytes of a statement's text kept, NUL included */
#define SQ_MAX_STMTS 4096 /* distinct statements (by text) per run */
#define SQ_SLOTS 40       /* log2 histogram of execution times, in ns */
#define SQ_CATS 8         /* the time accounting's categories (TA_NUM_CATS) */
#define SQ_TX_STMTS 8     /* statements of a transaction kept in its kind */
#define SQ_MAX_TXS 1024   /* distinct transaction kinds per run */
/* PostgreSQL's LockTagType (storage/lock.h: LOCKTAG_RELATION 0 to
 * LOCKTAG_ADVISORY 10, the same from 9.6 to 17); the last slot holds any
 * other. */
#define SQ_LOCK_TYPES 12
/* PostgreSQL: statements nested in a statement (a function's, a
 * trigger's) followed in depth; deeper ones run as their parent. */
#define SQ_PG_NEST 4
#define SQ_HEAD 32 /* bytes of a nested statement's text that confirm its address */

/* What a thread is doing in SQLite. An execution is a statement from its
 * first step to its reset or finalize; prepare, checkpoint and close are
 * the rest of what makes IO inside the library. Each of those three is one
 * pseudo-statement per process. */
#define SQ_EXEC 0
#define SQ_PREPARE 1
#define SQ_CHECKPOINT 2
#define SQ_CLOSE 3
/* SQLite's own statements (schema reads, the nested statements of a
 * CREATE or ALTER): prepared inside the library without their text. */
#define SQ_INTERNAL 4

/* PostgreSQL: one statement nested in the backend's statement (run by a
 * function through SPI, a trigger, a SQL function), from its executor's
 * start to its end. */
struct sq_nest {
	__u64 qd;              /* its QueryDesc * */
	__u64 start;
	__u32 id;              /* its statement id */
	__u32 cats;            /* SQ_CATS_READ: cat0 was read; SQ_CATS_OFF, SQ_CATS_NONE: not */
	__u64 cat0[SQ_CATS];   /* the thread's time per category at its start */
	/* The last statement seen at this depth, kept after it ends: its
	 * text's address and first bytes, and its id. A function's loop runs
	 * the same statement (its text kept with its plan) again and again:
	 * found by these, its text is not read and hashed again. */
	__u64 src;
	__u32 src_id;
	__u32 _pad;
	__u8 head[SQ_HEAD];
};

/* Per thread (task storage): what its SQLite file IO is charged to. */
struct sq_thread {
	__u32 stmt_id;   /* the statement last stepped (or the pseudo one), 0: none yet */
	/* The last of the application's statements stepped (not SQLite's
	 * own), and the execution it was in (its handle's exec, to tell
	 * whether it still runs): a prepare inside its step (a CREATE's
	 * nested statements) is charged back to it. */
	__u32 outer_id;
	__u64 outer_stmt;
	__u32 outer_exec;
	/* PostgreSQL: the statement the backend reported running, and since
	 * when (0: none running), and the thread's time per category then
	 * (pg_cats: SQ_CATS_READ if it was read; SQ_CATS_OFF, SQ_CATS_NONE: not). */
	__u32 pg_id;
	__u32 pg_cats;
	__u64 pg_start;
	__u64 pg_cat0[SQ_CATS];
	/* The sync calls the thread made and their time (storage counts
	 * them): a transaction's are the difference over it. */
	__u64 syncs, sync_ns;
	/* PostgreSQL: the heavyweight lock wait under way (ProcSleep), since
	 * when (0: none), its lock's type, and the statement waiting. */
	__u64 lock_start;
	__u32 lock_type;
	__u32 lock_stmt;
	/* PostgreSQL: the text pointer the backend reported its statement
	 * with (its own executor's QueryDesc has the same), and the
	 * statements nested in it under way, innermost last. */
	__u64 pg_text;
	__u32 pg_depth;
	__u32 _pad;
	struct sq_nest nest[SQ_PG_NEST];
};

/* A connection's transaction under way, by (tgid, SQLite's sqlite3 *;
 * a PostgreSQL backend: 0). */
struct sq_conn_key {
	__u32 tgid;
	__u32 _pad;
	__u64 db;
};

struct sq_conn {
	__u64 start_ns;          /* its first execution's start, 0: none under way */
	__u64 syncs0, sync_ns0;  /* its thread's sq_thread.syncs and sync_ns then */
	__u32 n;                 /* executions in it so far */
	__u32 _pad;
	__u32 ids[SQ_TX_STMTS];  /* the statements of the first SQ_TX_STMTS */
};

/* A kind of transaction: its process and the statements it ran, in order
 * (the first SQ_TX_STMTS; n counts all, to 255). */
struct sq_tx_key {
	__u32 tgid;
	__u32 n;
	__u32 ids[SQ_TX_STMTS];
};

struct sq_tx {
	__u64 count;
	__u64 ns;      /* wall time: the first execution's start to the commit */
	__u64 max_ns;
	__u64 syncs;   /* the sync calls its thread made in it, and their time */
	__u64 sync_ns;
	__u64 slots[SQ_SLOTS];
};

/* The read, write and sync calls of every file (not only SQLite's) made
 * while a statement was its thread's current one: storage's stmt_io,
 * indexed by statement id, per CPU. */
struct sq_io {
	__u64 reads, writes, syncs;
	__u64 read_bytes, write_bytes;
	__u64 read_ns, write_ns, sync_ns;
	/* Pages its read calls brought into the page cache (misses, and
	 * their readahead), and page-cache lookups of its page faults (mmap
	 * reads): the page cache's programs, charged like the calls. */
	__u64 read_added, faults;
};

/* Per prepared statement handle, by (tgid, sqlite3_stmt *). */
struct sq_handle_key {
	__u32 tgid;
	__u32 _pad;
	__u64 stmt;
};

/* What cats_now found: the thread's time per category read; no live entry
 * for the thread; or an entry that has the thread off the CPU while it
 * runs (a uprobe runs on the CPU): its switch-in had no sched_switch
 * event, and the accounting puts it on the CPU only at its next
 * switch-out. */
#define SQ_CATS_NONE 0
#define SQ_CATS_READ 1
#define SQ_CATS_OFF 2

struct sq_handle {
	__u64 sql;       /* the zSql the id was found for (a re-prepare changes it) */
	__u64 start_ns;  /* the current execution's first step */
	__u32 id;        /* the statement's id (stmts' index) */
	__u32 exec;      /* the current execution's id, 0: none running */
	/* The thread that made the first step, and its time per category
	 * then (the time accounting's; cats: SQ_CATS_READ if it was read,
	 * else why not, as sq_nest's and pg_cats). */
	__u32 tid;
	__u32 cats;
	__u64 cat0[SQ_CATS];
};

/* One statement, by its text (and process): stmts[id]. */
struct sq_stmt {
	__u32 tgid;
	__u32 kind;       /* SQ_* */
	__u64 execs;      /* executions begun */
	__u64 done;       /* executions ended (reset or finalize) */
	__u64 steps;      /* sqlite3_step calls: rows + one per execution that ran to its end */
	__u64 ns;         /* time of the ended executions, first step to reset */
	__u64 autocommit; /* executions begun in autocommit mode (their own transaction) */
	__u64 slots[SQ_SLOTS];
	/* Of the ended executions, those begun and ended on one thread that
	 * the time accounting follows, and their time by its categories
	 * (TA_CAT_*: on CPU, waiting for one, blocked on storage, ...). */
	__u64 cat_execs;
	__u64 cat_ns[SQ_CATS];
	/* Their time (first step to reset), which cat_ns adds up to. */
	__u64 cat_wall;
	/* Ended executions not timed because at their start or end the time
	 * accounting had the thread off the CPU while it ran: the kernel's
	 * sched_switch left out its switch-in (SQ_CATS_OFF). */
	__u64 cat_off;
	/* PostgreSQL: its waits for heavyweight locks, by the lock's type. */
	__u64 lock_waits[SQ_LOCK_TYPES];
	__u64 lock_ns[SQ_LOCK_TYPES];
	/* PostgreSQL: the statement it first ran nested in (0: top level);
	 * its time is in its parent's too, its IO is its own. */
	__u32 parent;
	__u32 _pad;
	__u32 text_len;   /* bytes of text, 0: unread */
	__u32 truncated;  /* the text was longer than SQ_TEXT - 1 */
	char text[SQ_TEXT];
};

/* Per CPU. */
struct sq_counters {
	__u64 runs;      /* uprobe hits of the workload's threads */
	__u64 others;    /* hits of other processes, filtered out */
	__u64 stmts_full; /* executions of statements not kept: stmts full */
	__u64 unread;    /* statement texts that could not be read */
	__u64 no_offset; /* executions whose statement could not be named (offsets unknown) */
	__u64 cat_unread; /* ended executions whose time by category could not be told */
	__u64 cat_off;    /* of those, the ones whose thread the accounting had off the CPU while it ran */
	__u64 txs_full;   /* transactions not counted: txs full */
	__u64 tx_unended; /* transactions whose end was not seen (a connection back in autocommit at the next start) */
	__u64 nest_deep;  /* PostgreSQL: nested executions past SQ_PG_NEST deep, run as their parent */
};

#endif /* __SQLSTMT_H */
