// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* sqlstmt: which SQLite statement each thread of the workload is running,
 * so that storage can charge each SQLite file read, write and sync to it.
 *
 * Uprobes at the entry of SQLite's API functions, on the library file the
 * workload maps (user space finds it, and where the statement keeps its
 * text: sql_off, and the connection its autocommit flag: autocommit_off,
 * decoded from sqlite3_sql and sqlite3_get_autocommit). Entry only: a
 * uretprobe adds nothing the next entry does not tell, costs a second trap,
 * and breaks Go programs whose stacks move.
 *
 * sqlite3_step: a handle's first step after a reset begins an execution
 * (its text read once per handle, hashed, and the statement found by text
 * in stmts); every step makes the statement the thread's current one
 * (sql_threads, which storage reads). sqlite3_reset and sqlite3_finalize end
 * the execution and time it. sqlite3_prepare*, sqlite3_wal_checkpoint_v2
 * and sqlite3_close* make a pseudo-statement current: the schema reads of a
 * prepare, a checkpoint's copy to the database, a close's checkpoint and
 * WAL delete are theirs, not the last statement's. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "sqlstmt.h"
#include "timeacct.h"
#include "bits.bpf.h"
#include "tracked.bpf.h"
#include "threads.bpf.h"
#include "sqlthread.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

_Static_assert(SQ_CATS == TA_NUM_CATS, "sqlstmt.h's SQ_CATS is timeacct.h's TA_NUM_CATS");

const volatile __s64 sql_off = -1;        /* struct Vdbe's zSql */
const volatile __s64 autocommit_off = -1; /* struct sqlite3's autoCommit */

__u64 next_id = 0;   /* the last statement id given */
__u64 next_exec = 0; /* the last execution id given */

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SQ_MAX_STMTS);
	__type(key, __u32);
	__type(value, struct sq_stmt);
} stmts SEC(".maps");

struct sq_text_key {
	__u32 tgid;
	__u32 kind;
	__u64 hash; /* FNV-1a of the text, 0 for a pseudo-statement */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SQ_MAX_STMTS);
	__type(key, struct sq_text_key);
	__type(value, __u32);
} by_text SEC(".maps");

/* LRU: a program that prepares a statement for each execution and never
 * finalizes would fill it otherwise. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct sq_handle_key);
	__type(value, struct sq_handle);
} handles SEC(".maps");

/* Each connection's transaction under way (LRU: a program that opens a
 * connection per transaction and never closes them). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct sq_conn_key);
	__type(value, struct sq_conn);
} conns SEC(".maps");

/* Per kind of transaction (its statements in order), its count and
 * times. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SQ_MAX_TXS);
	__type(key, struct sq_tx_key);
	__type(value, struct sq_tx);
} txs SEC(".maps");

const struct sq_conn zero_conn = {};
const struct sq_tx zero_tx = {};

struct text_buf {
	char text[SQ_TEXT];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct text_buf);
} scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sq_counters);
} counters SEC(".maps");

static __always_inline struct sq_counters *counters_get(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&counters, &zero);
}

/* enter counts a run and returns the thread's entry if it is the
 * workload's, NULL otherwise. */
static __always_inline struct sq_thread *enter(struct sq_counters *c, __u32 tgid)
{
	if (!is_tracked(tgid)) {
		if (c)
			c->others++;
		return NULL;
	}
	if (c)
		c->runs++;
	return bpf_task_storage_get(&sql_threads, bpf_get_current_task_btf(), 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
}

static __always_inline struct sq_stmt *stmt_of(__u32 id)
{
	if (!id)
		return NULL;
	return bpf_map_lookup_elem(&stmts, &id);
}

static __always_inline bool ident_char(__u8 ch)
{
	return ch == '_' || ch == '$' || ch >= 0x80 || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
	       (ch >= '0' && ch <= '9');
}

/* text_hash is FNV-1a of a statement's first n bytes with its literals as
 * ?, as sqlnorm normalises them in user space: a string's contents, a
 * number (not a digit inside a word), and a number's sign where a minus
 * cannot be a subtraction. A program that writes its values into the
 * text (PostgreSQL's simple protocol, pgbench; SQL built with printf)
 * makes one statement of them, not one per value: 4,096 distinct texts
 * filled stmts within a second of pgbench. */
static __always_inline __u64 text_hash(const char *text, long n)
{
	__u64 h = 0xcbf29ce484222325ULL;
	bool quoted = false, number = false;
	__u8 prev = 0;

	for (int i = 0; i < SQ_TEXT - 1; i++) {
		__u8 ch, next;

		if (i >= n)
			break;
		ch = text[i];
		if (quoted) {
			quoted = ch != '\'';
			continue;
		}
		if (number) {
			if ((ch >= '0' && ch <= '9') || ch == '.' || ch == '_')
				continue;
			number = false;
		}
		next = i + 1 < n ? text[i + 1] : 0;
		if (ch == '\'') {
			quoted = true;
			ch = '?';
		} else if (ch >= '0' && ch <= '9' && !ident_char(prev)) {
			number = true;
			ch = '?';
		} else if (ch == '-' && next >= '0' && next <= '9' && !ident_char(prev) && prev != ')' && prev != '?') {
			continue; /* the sign of the number that follows */
		}
		h = (h ^ ch) * 0x100000001b3ULL;
		prev = ch;
	}
	return h;
}

/* stmt_id finds the statement whose text is at text (NULL: the process's
 * pseudo-statement of kind), making its entry at its first sight; 0 if
 * stmts is full. */
static __always_inline __u32 stmt_id(__u32 tgid, __u32 kind, const char *text, struct sq_counters *c)
{
	struct sq_text_key k = {.tgid = tgid, .kind = kind};
	struct text_buf *buf = NULL;
	__u32 zero = 0, *found, id;
	struct sq_stmt *s;
	long n = 0;

	if (text) {
		buf = bpf_map_lookup_elem(&scratch, &zero);
		if (!buf)
			return 0;
		n = bpf_probe_read_user_str(buf->text, SQ_TEXT, text);
		if (n <= 0) {
			if (c)
				c->unread++;
			n = 0;
		}
		k.hash = text_hash(buf->text, n - 1);
	}
	found = bpf_map_lookup_elem(&by_text, &k);
	if (found)
		return *found;
	id = __sync_fetch_and_add(&next_id, 1) + 1;
	s = stmt_of(id);
	if (!s) {
		if (c)
			c->stmts_full++;
		return 0;
	}
	s->tgid = tgid;
	s->kind = kind;
	if (buf && n > 0) {
		__builtin_memcpy(s->text, buf->text, SQ_TEXT);
		s->text_len = n - 1;
		s->truncated = n == SQ_TEXT;
	}
	if (bpf_map_update_elem(&by_text, &k, &id, BPF_NOEXIST) != 0) {
		/* Another CPU made it first (or by_text is full): its id. */
		s->tgid = 0;
		found = bpf_map_lookup_elem(&by_text, &k);
		if (!found && c)
			c->stmts_full++;
		return found ? *found : 0;
	}
	return id;
}

static __always_inline __u32 new_exec(void)
{
	return __sync_fetch_and_add(&next_exec, 1) + 1;
}

/* cats_now reads the current thread's time per category so far from the
 * time accounting (closed intervals, and the run under way: a uprobe runs
 * on the CPU) into v: SQ_CATS_READ; SQ_CATS_NONE when it has no live entry
 * for the thread, SQ_CATS_OFF when its entry has it off the CPU. */
static __always_inline __u32 cats_now(__u64 *v, __u64 now)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct ta_thread *t = thread_of(tid);

	if (!t || t->exited)
		return SQ_CATS_NONE;
	if (t->state != TA_STATE_RUNNING)
		return SQ_CATS_OFF;
	for (int i = 0; i < SQ_CATS; i++)
		v[i] = t->ns[i];
	if (t->last_ns && now > t->last_ns)
		v[TA_CAT_CPU] += now - t->last_ns;
	return SQ_CATS_READ;
}

/* not_timed counts an ended execution of s not timed by state; off: as its
 * thread was off the CPU in the time accounting while it ran. */
static __always_inline void not_timed(struct sq_stmt *s, bool off, struct sq_counters *c)
{
	if (c)
		c->cat_unread++;
	if (off) {
		__sync_fetch_and_add(&s->cat_off, 1);
		if (c)
			c->cat_off++;
	}
}

/* time_exec counts an ended execution of statement id that took d ns
 * (ending now); cat0 is its thread's time per category at its start, as
 * cats_now read it (start: SQ_CATS_READ, else why not). The difference,
 * category by category, is where the execution's time went. */
static __always_inline void time_exec(__u32 id, __u64 d, __u64 now, __u64 *cat0, __u32 start, struct sq_counters *c)
{
	struct sq_stmt *s = stmt_of(id);
	__u64 v[SQ_CATS];
	__u32 read;

	if (!s)
		return;
	__sync_fetch_and_add(&s->ns, d);
	__sync_fetch_and_add(&s->done, 1);
	__sync_fetch_and_add(&s->slots[slot_of(d, SQ_SLOTS)], 1);
	if (start != SQ_CATS_READ) {
		not_timed(s, start == SQ_CATS_OFF, c);
		return;
	}
	read = cats_now(v, now);
	if (read != SQ_CATS_READ) {
		not_timed(s, read == SQ_CATS_OFF, c);
		return;
	}
	for (int i = 0; i < SQ_CATS; i++)
		if (v[i] > cat0[i])
			__sync_fetch_and_add(&s->cat_ns[i], v[i] - cat0[i]);
	__sync_fetch_and_add(&s->cat_wall, d);
	__sync_fetch_and_add(&s->cat_execs, 1);
}

/* conn_of is the transaction state of connection db (0: the backend) of
 * process tgid, made at its first sight. */
static __always_inline struct sq_conn *conn_of(__u32 tgid, __u64 db)
{
	struct sq_conn_key k = {.tgid = tgid, .db = db};

	return lookup_or_init(&conns, &k, &zero_conn);
}

/* tx_add adds an execution of statement id, starting at start on thread
 * t, to the connection's transaction, which it begins if none is under
 * way. */
static __always_inline void tx_add(struct sq_conn *cn, struct sq_thread *t, __u32 id, __u64 start)
{
	__u32 n = cn->n;

	if (!cn->start_ns) {
		cn->start_ns = start;
		cn->syncs0 = t->syncs;
		cn->sync_ns0 = t->sync_ns;
		n = 0;
		for (int i = 0; i < SQ_TX_STMTS; i++)
			cn->ids[i] = 0;
	}
	if (n < SQ_TX_STMTS)
		cn->ids[n] = id;
	if (n < 255)
		cn->n = n + 1;
}

/* tx_end ends the connection's transaction under way at now (its commit
 * or rollback returned) and counts it under its kind. */
static __always_inline void tx_end(struct sq_conn *cn, struct sq_thread *t, __u32 tgid, __u64 now, struct sq_counters *c)
{
	struct sq_tx_key k = {.tgid = tgid};
	struct sq_tx *x;
	__u64 d;

	if (!cn->start_ns || now <= cn->start_ns) {
		cn->start_ns = 0;
		return;
	}
	d = now - cn->start_ns;
	k.n = cn->n;
	for (int i = 0; i < SQ_TX_STMTS; i++)
		k.ids[i] = cn->ids[i];
	cn->start_ns = 0;
	x = lookup_or_init(&txs, &k, &zero_tx);
	if (!x) {
		if (c)
			c->txs_full++;
		return;
	}
	__sync_fetch_and_add(&x->count, 1);
	__sync_fetch_and_add(&x->ns, d);
	__sync_fetch_and_add(&x->slots[slot_of(d, SQ_SLOTS)], 1);
	if (d > x->max_ns)
		x->max_ns = d;
	if (t->syncs >= cn->syncs0 && t->sync_ns >= cn->sync_ns0) {
		__sync_fetch_and_add(&x->syncs, t->syncs - cn->syncs0);
		__sync_fetch_and_add(&x->sync_ns, t->sync_ns - cn->sync_ns0);
	}
}

/* conn_end ends the transaction under way on connection db (0: the
 * backend) of process tgid, if it has one, at now. */
static __always_inline void conn_end(__u32 tgid, __u64 db, struct sq_thread *t, __u64 now, struct sq_counters *c)
{
	struct sq_conn_key k = {.tgid = tgid, .db = db};
	struct sq_conn *cn = bpf_map_lookup_elem(&conns, &k);

	if (cn)
		tx_end(cn, t, tgid, now, c);
}

/* autocommit_of reads whether statement stmt's connection is in
 * autocommit mode (no transaction open) into *ac, and its sqlite3 * into
 * *db; false when they cannot be read. */
static __always_inline bool autocommit_of(void *stmt, __u64 *db, __u8 *ac)
{
	/* Vdbe.db is its first field. */
	return autocommit_off >= 0 && bpf_probe_read_user(db, sizeof(*db), stmt) == 0 && *db &&
	       bpf_probe_read_user(ac, 1, (void *)(*db + autocommit_off)) == 0;
}

/* begin makes statement id (0: not kept) the thread's current one, as one
 * more execution of it that is a single step: a pseudo-statement, or a
 * PostgreSQL statement. */
static __always_inline void begin(struct sq_thread *t, __u32 id)
{
	struct sq_stmt *s = stmt_of(id);

	t->stmt_id = id;
	if (s) {
		__sync_fetch_and_add(&s->execs, 1);
		__sync_fetch_and_add(&s->steps, 1);
	}
}

/* finish ends the handle's running execution and times it: by category
 * when it began on this thread. */
static __always_inline void finish(struct sq_handle *h, struct sq_counters *c)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 now;

	if (!h->exec)
		return;
	now = bpf_ktime_get_ns();
	/* Read on another thread, cat0 is not this one's. */
	time_exec(h->id, now - h->start_ns, now, h->cat0,
		  h->cats == SQ_CATS_READ && h->tid != tid ? SQ_CATS_NONE : h->cats, c);
	h->exec = 0;
}

SEC("uprobe")
int BPF_KPROBE(sq_step, void *stmt)
{
	struct sq_counters *c = counters_get();
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct sq_handle_key hk = {.tgid = tgid, .stmt = (__u64)stmt};
	struct sq_thread *t = enter(c, tgid);
	struct sq_handle *h;
	struct sq_stmt *s;
	__u64 sql = 0, db = 0;
	bool begun = false;
	__u8 ac = 0;

	if (!t || !stmt)
		return 0;
	/* Read at every step: SQLite's own statements (its schema reads)
	 * are finalized inside the library, not through sqlite3_finalize, so
	 * a handle's address can come back as another statement with no
	 * hook in between. Their zSql is NULL: they keep no text. */
	if (sql_off >= 0)
		bpf_probe_read_user(&sql, sizeof(sql), stmt + sql_off);
	h = bpf_map_lookup_elem(&handles, &hk);
	if (h && h->sql != sql) {
		finish(h, c);
		h->id = 0;
	}
	if (!h || !h->exec) {
		/* The first step since the handle was prepared or reset. */
		if (!h || !h->id) {
			struct sq_handle nh = {.sql = sql};
			__u32 kind = SQ_EXEC;

			if (sql_off < 0) {
				if (c)
					c->no_offset++;
			} else if (!sql) {
				kind = SQ_INTERNAL;
			}
			nh.id = stmt_id(tgid, kind, sql ? (const char *)sql : NULL, c);
			bpf_map_update_elem(&handles, &hk, &nh, BPF_ANY);
			h = bpf_map_lookup_elem(&handles, &hk);
			if (!h)
				return 0;
		}
		h->exec = new_exec();
		h->start_ns = bpf_ktime_get_ns();
		h->tid = (__u32)bpf_get_current_pid_tgid();
		h->cats = cats_now(h->cat0, h->start_ns);
		begun = true;
	}
	s = stmt_of(h->id);
	if (s && begun) {
		__sync_fetch_and_add(&s->execs, 1);
		if (autocommit_of(stmt, &db, &ac)) {
			if (ac)
				__sync_fetch_and_add(&s->autocommit, 1);
			/* The application's statements make its transactions:
			 * one begun in autocommit mode starts one (its own, or
			 * a BEGIN's), which its connection's later executions
			 * join until one ends with the connection back in
			 * autocommit (end_exec). */
			if (s->kind == SQ_EXEC) {
				struct sq_conn *cn = conn_of(tgid, db);

				if (cn) {
					if (ac && cn->start_ns) {
						/* Back in autocommit with no end seen: a
						 * statement not reset before the next. */
						if (c)
							c->tx_unended++;
						cn->start_ns = 0;
					}
					tx_add(cn, t, h->id, h->start_ns);
				}
			}
		}
	}
	if (s)
		__sync_fetch_and_add(&s->steps, 1);
	/* SQLite's own statements run inside a prepare (the schema) or inside
	 * another statement's step (a CREATE's nested updates of the schema
	 * table, prepared through the public API, so the prepare hook made
	 * itself current): their IO is that statement's. If the application's
	 * last statement is still running, it is current again; else the
	 * current one stays (a prepare's schema read). */
	if (s && s->kind == SQ_INTERNAL && t->stmt_id) {
		struct sq_handle_key ok = {.tgid = tgid, .stmt = t->outer_stmt};
		struct sq_handle *outer = t->outer_stmt ? bpf_map_lookup_elem(&handles, &ok) : NULL;

		if (outer && outer->exec && outer->exec == t->outer_exec)
			t->stmt_id = t->outer_id;
		return 0;
	}
	t->stmt_id = h->id;
	t->outer_stmt = (__u64)stmt;
	t->outer_id = h->id;
	t->outer_exec = h->exec;
	return 0;
}

/* end_exec ends the handle's execution, if one is running, and times it;
 * the thread's current statement stays (a reset can still commit). An
 * execution that leaves its connection in autocommit mode ended its
 * transaction: an autocommit statement's own, or a COMMIT or ROLLBACK. */
static __always_inline void end_exec(void *stmt, bool finalize)
{
	struct sq_counters *c = counters_get();
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct sq_handle_key hk = {.tgid = tgid, .stmt = (__u64)stmt};
	struct sq_thread *t = enter(c, tgid);
	struct sq_handle *h;
	__u64 db = 0;
	__u8 ac = 0;

	if (!t)
		return;
	h = bpf_map_lookup_elem(&handles, &hk);
	if (!h)
		return;
	if (h->exec && autocommit_of(stmt, &db, &ac) && ac)
		conn_end(tgid, db, t, bpf_ktime_get_ns(), c);
	finish(h, c);
	/* A finalized handle's address is reused by the next prepare. */
	if (finalize)
		bpf_map_delete_elem(&handles, &hk);
}

SEC("uprobe")
int BPF_KPROBE(sq_reset, void *stmt)
{
	end_exec(stmt, false);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(sq_finalize, void *stmt)
{
	end_exec(stmt, true);
	return 0;
}

/* pseudo makes the process's pseudo-statement of kind the thread's
 * current one, as a new execution of it. */
static __always_inline void pseudo(__u32 kind)
{
	struct sq_counters *c = counters_get();
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct sq_thread *t = enter(c, tgid);

	if (t)
		begin(t, stmt_id(tgid, kind, NULL, c));
}

SEC("uprobe")
int BPF_KPROBE(sq_prepare)
{
	pseudo(SQ_PREPARE);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(sq_checkpoint)
{
	pseudo(SQ_CHECKPOINT);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(sq_close)
{
	pseudo(SQ_CLOSE);
	return 0;
}

/* PostgreSQL's BackendState STATE_RUNNING (utils/backend_status.h; 2 since
 * 9.2): pgstat_report_activity(STATE_RUNNING, query) starts a statement. */
const volatile __s32 pg_running = 2;
/* STATE_IDLE: the backend waits for a command outside a transaction. */
const volatile __s32 pg_idle = 1;

/* pg_finish ends and times the statement the backend runs, if any. */
static __always_inline void pg_finish(struct sq_thread *t, __u64 now, struct sq_counters *c)
{
	if (!t->pg_start)
		return;
	time_exec(t->pg_id, now - t->pg_start, now, t->pg_cat0, t->pg_cats, c);
	t->pg_start = 0;
}

/* pgstat_report_activity(state, cmd_str): every backend reports the
 * statement it starts (simple and extended protocol, utility statements
 * too) and its return to idle. A statement's execution runs from its
 * report to the next one, so an extended-protocol Sync's commit (after the
 * query string is cleared, before idle) is the statement's. Idle leaves
 * the backend with no current statement: its IO then is nobody's.
 *
 * The extended protocol reports one statement at each of its messages,
 * Parse, Bind and Execute (exec_parse_message, exec_bind_message,
 * exec_execute_message), with no idle between: a report of the statement
 * already running continues its execution (pgbench -M extended counted
 * each statement three times, at a third of its time, before this). */
SEC("uprobe")
int BPF_KPROBE(pg_activity, int state, const char *cmd)
{
	struct sq_counters *c = counters_get();
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct sq_thread *t = enter(c, tgid);
	__u64 now;
	__u32 id;

	if (!t)
		return 0;
	now = bpf_ktime_get_ns();
	t->pg_depth = 0; /* nested statements end with theirs (an error skips their end) */
	if (state != pg_running || !cmd) {
		pg_finish(t, now, c);
		t->stmt_id = 0;
		/* Idle (not idle in a transaction): the transaction, an
		 * explicit one or the statement's own, committed. */
		if (state == pg_idle)
			conn_end(tgid, 0, t, now, c);
		return 0;
	}
	id = stmt_id(tgid, SQ_EXEC, cmd, c);
	t->pg_text = (__u64)cmd;
	if (t->pg_start && id && id == t->pg_id) {
		t->stmt_id = id;
		return 0;
	}
	pg_finish(t, now, c);
	t->pg_id = id;
	t->pg_start = now;
	t->pg_cats = cats_now(t->pg_cat0, now);
	begin(t, id);
	{
		struct sq_conn *cn = conn_of(tgid, 0);

		if (cn)
			tx_add(cn, t, id, now);
	}
	return 0;
}

/* pg_current is the statement the backend runs: the innermost nested
 * one under way, or the one it reported (0: none). */
static __always_inline __u32 pg_current(struct sq_thread *t)
{
	__u32 d = t->pg_depth;

	if (!t->pg_start)
		return 0;
	if (d > 0 && d <= SQ_PG_NEST)
		return t->nest[(d - 1) & (SQ_PG_NEST - 1)].id;
	return t->pg_id;
}

/* QueryDesc (executor/execdesc.h): CmdType operation; PlannedStmt
 * *plannedstmt; const char *sourceText; ... the same from 9.x to 17. */
#define PG_QD_SOURCE_OFF 16

/* standard_ExecutorStart(queryDesc, eflags): every plan the backend
 * executes starts here (ExecutorStart calls it, or an extension's hook
 * that calls it: with pg_stat_statements loaded ExecutorStart's own call
 * is a tail jump, so the hook is on the standard one). The backend's own
 * statement's executor has its reported text (the same pointer, or the
 * same normalised text); any other is a statement nested in it: a
 * function's or a trigger's through SPI, a SQL function's body. It
 * becomes the backend's current statement, so its IO is its own, until
 * its executor ends. */
SEC("uprobe")
int BPF_KPROBE(pg_exec_start, void *qd)
{
	struct sq_counters *c = counters_get();
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct sq_thread *t = enter(c, tgid);
	__u8 head[SQ_HEAD] = {};
	struct sq_nest *n;
	struct sq_stmt *s;
	__u64 src = 0, now;
	__u32 d, id, parent;
	bool same;

	if (!t || !t->pg_start || !qd)
		return 0;
	if (bpf_probe_read_user(&src, sizeof(src), qd + PG_QD_SOURCE_OFF) || !src)
		return 0;
	d = t->pg_depth;
	if (d == 0 && src == t->pg_text)
		return 0;
	if (d >= SQ_PG_NEST) {
		if (c)
			c->nest_deep++;
		return 0;
	}
	n = &t->nest[d & (SQ_PG_NEST - 1)];
	/* The statement last seen at this depth, if its text is at the same
	 * address and begins the same: its id, without reading all of its
	 * text (a text read fails short of SQ_HEAD only at a page's end,
	 * and then is not matched). */
	same = n->src == src && n->src_id && bpf_probe_read_user(head, SQ_HEAD, (void *)src) == 0;
	for (int i = 0; i < SQ_HEAD && same; i++)
		same = head[i] == n->head[i];
	if (same) {
		id = n->src_id;
	} else {
		id = stmt_id(tgid, SQ_EXEC, (const char *)src, c);
		if (id && bpf_probe_read_user(n->head, SQ_HEAD, (void *)src) == 0) {
			n->src = src;
			n->src_id = id;
		} else {
			n->src_id = 0;
		}
	}
	if (d == 0 && id == t->pg_id)
		return 0;
	parent = pg_current(t);
	now = bpf_ktime_get_ns();
	n->qd = (__u64)qd;
	n->start = now;
	n->id = id;
	n->cats = cats_now(n->cat0, now);
	t->pg_depth = d + 1;
	s = stmt_of(id);
	if (s && !s->parent && parent != id)
		s->parent = parent;
	begin(t, id);
	return 0;
}

/* standard_ExecutorEnd(queryDesc): a nested statement's execution ended;
 * its parent is current again. Ends under it whose end was skipped (an
 * error caught in a function) are dropped with it. */
SEC("uprobe")
int BPF_KPROBE(pg_exec_end, void *qd)
{
	struct sq_counters *c = counters_get();
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct sq_thread *t = enter(c, tgid);
	__u64 now;

	if (!t || !t->pg_depth)
		return 0;
	for (int i = SQ_PG_NEST - 1; i >= 0; i--) {
		struct sq_nest *n = &t->nest[i];

		if (i >= t->pg_depth || n->qd != (__u64)qd)
			continue;
		now = bpf_ktime_get_ns();
		time_exec(n->id, now - n->start, now, n->cat0, n->cats, c);
		t->pg_depth = i;
		t->stmt_id = pg_current(t);
		break;
	}
	return 0;
}

/* LOCALLOCK's tag is its first field: a LOCKTAG (four fields of 4, 4, 4
 * and 2 bytes, then locktag_type) and the mode. */
#define PG_LOCKTAG_TYPE_OFF 14

/* ProcSleep(locallock, ...): a backend waits for a heavyweight lock (a
 * row's writer waits for the other transaction's id, a table lock, ...).
 * To the kernel it is a sleep in the backend's latch: the statement's time
 * by state says sleep, this says which lock. */
SEC("uprobe")
int BPF_KPROBE(pg_lock_sleep, void *locallock)
{
	struct sq_counters *c = counters_get();
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct sq_thread *t = enter(c, tgid);
	__u8 type = SQ_LOCK_TYPES - 1;

	if (!t)
		return 0;
	if (locallock)
		bpf_probe_read_user(&type, 1, locallock + PG_LOCKTAG_TYPE_OFF);
	t->lock_type = type < SQ_LOCK_TYPES - 1 ? type : SQ_LOCK_TYPES - 1;
	t->lock_stmt = pg_current(t);
	t->lock_start = bpf_ktime_get_ns();
	return 0;
}

/* ProcSleep's return: the wait ended (granted, deadlock, timeout). A C
 * server, so a uretprobe is safe; one trap per lock wait. */
SEC("uretprobe")
int BPF_KRETPROBE(pg_lock_woke)
{
	struct sq_counters *c = counters_get();
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct sq_thread *t = enter(c, tgid);
	struct sq_stmt *s;
	__u64 now;
	__u32 i;

	if (!t || !t->lock_start)
		return 0;
	now = bpf_ktime_get_ns();
	s = stmt_of(t->lock_stmt);
	i = t->lock_type;
	if (s && i < SQ_LOCK_TYPES && now > t->lock_start) {
		__sync_fetch_and_add(&s->lock_waits[i], 1);
		__sync_fetch_and_add(&s->lock_ns[i], now - t->lock_start);
	}
	t->lock_start = 0;
	return 0;
}
