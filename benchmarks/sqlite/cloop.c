// The constraint keeps the go tool from treating this file as part of the
// Go package in this directory (a .c file needs cgo); gcc ignores it.
//go:build ignore

/*
 * cloop: the reference for perfsleuth's sqlite workload. A plain C loop over
 * libsqlite3 that runs exactly the statements internal/workload/sqlite runs:
 * same open flags, PRAGMAs, schema, prepared statements, parameter bindings,
 * transaction grouping, and the same row bytes and key order (splitmix64 from
 * the same seed, drawn in the same order as data.go). Each statement is
 * stepped until done, every column of every row read by its type, as
 * capi.go's ps_exec does; what Go adds on top is only its own overhead
 * (one cgo call per statement, clearing the bindings, the timing loop). It
 * prints one JSON object with tx/s per phase.
 *
 *   gcc -O2 -o cloop cloop.c -lsqlite3
 *   cloop -d DB -r ROWS -j JOURNAL -s SYNC [-p PAGE_SIZE] [-c CACHE_SIZE]
 *         [-i 0|1] [-t TX_SIZE] [-S SEED] [-P insert,update,delete] [-k]
 *
 * DB and its -journal/-wal/-shm files are removed first and, unless -k, at
 * the end.
 */
#define _POSIX_C_SOURCE 200809L
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NAME_LEN 16
#define PHONE_LEN 12
#define EMAIL_LEN 24
#define ADDRESS_LEN 48
#define INSERTED_AT 1700000000LL
#define UPDATED_AT 1800000000LL

static const char letters[] = "abcdefghijklmnopqrstuvwxyz";
static const char digits[] = "0123456789";
static const char address_chars[] = "abcdefghijklmnopqrstuvwxyz ";

static uint64_t rng_x;

static uint64_t next(void)
{
	uint64_t z = (rng_x += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void fill(char *b, int n, const char *alphabet)
{
	uint64_t len = strlen(alphabet);
	for (int i = 0; i < n; i++)
		b[i] = alphabet[next() % len];
}

static void gen_name(char *b)
{
	fill(b, NAME_LEN, letters);
	b[0] -= 'a' - 'A';
	b[7] = ' ';
	b[8] -= 'a' - 'A';
}

static void gen_phone(char *b)
{
	b[0] = '+';
	fill(b + 1, PHONE_LEN - 1, digits);
}

static void gen_email(char *b)
{
	fill(b, 11, letters);
	b[11] = '@';
	fill(b + 12, 8, letters);
	memcpy(b + 20, ".com", 4);
}

static void gen_address(char *b)
{
	fill(b, 4, digits);
	b[4] = ' ';
	fill(b + 5, ADDRESS_LEN - 5, address_chars);
}

/* The shuffled key order: data.go's perm, a bijection of [0, n) computed
 * per key (xor-key, multiply, xor-shift, three rounds, in the smallest
 * power-of-two range holding n, cycle-walking back into [0, n)). */
static uint64_t perm_n, perm_mask, perm_keys[3];
static unsigned perm_shift;

static void perm_init(uint64_t n)
{
	unsigned b = 0;
	while (b < 64 && (1ULL << b) < n)
		b++;
	perm_n = n;
	perm_mask = b == 64 ? ~0ULL : (1ULL << b) - 1;
	perm_shift = (b + 1) / 2 > 1 ? (b + 1) / 2 : 1;
	for (int i = 0; i < 3; i++)
		perm_keys[i] = next();
}

static uint64_t perm_round(uint64_t x)
{
	for (int i = 0; i < 3; i++) {
		x = (x ^ perm_keys[i]) & perm_mask;
		x = (x * 0xbf58476d1ce4e5b9ULL) & perm_mask;
		x ^= x >> perm_shift;
	}
	return x;
}

static int64_t perm_id(uint64_t k)
{
	uint64_t x = perm_round(k);
	while (x >= perm_n)
		x = perm_round(x);
	return (int64_t)x + 1;
}

static sqlite3 *db;
static const char *db_path;

static void die(const char *what)
{
	fprintf(stderr, "cloop: %s: %s\n", what, db ? sqlite3_errmsg(db) : "?");
	exit(1);
}

static void exec(const char *sql)
{
	if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
		die(sql);
}

static sqlite3_stmt *prepare(const char *sql)
{
	sqlite3_stmt *s;
	if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK)
		die(sql);
	return s;
}

/* read_row reads every column of the current row by its type, as
 * internal/workload/sqlite/capi's ps_read_row does. */
static long long read_row(sqlite3_stmt *s)
{
	long long sum = 0;
	int n = sqlite3_data_count(s);
	for (int c = 0; c < n; c++) {
		switch (sqlite3_column_type(s, c)) {
		case SQLITE_INTEGER:
			sum += sqlite3_column_int64(s, c);
			break;
		case SQLITE_FLOAT:
			sum += (long long)sqlite3_column_double(s, c);
			break;
		case SQLITE_TEXT: {
			const unsigned char *t = sqlite3_column_text(s, c);
			sum += (t ? t[0] : 0) + sqlite3_column_bytes(s, c);
			break;
		}
		case SQLITE_BLOB:
			sum += (sqlite3_column_blob(s, c) != 0) + sqlite3_column_bytes(s, c);
			break;
		}
	}
	return sum;
}

/* Of everything read, printed at the end so that no read can be dropped. */
static long long checksum;

/* step_done steps s until it is done, reading every row, resets it and
 * returns the number of rows. */
static long long step_done(sqlite3_stmt *s, const char *what)
{
	long long rows = 0;
	int rc;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		rows++;
		checksum += read_row(s);
	}
	if (rc != SQLITE_DONE)
		die(what);
	sqlite3_reset(s);
	return rows;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void remove_db(void)
{
	static const char *suffixes[] = {"", "-journal", "-wal", "-shm"};
	char p[4096];
	for (int i = 0; i < 4; i++) {
		snprintf(p, sizeof p, "%s%s", db_path, suffixes[i]);
		unlink(p);
	}
}

int main(int argc, char **argv)
{
	int rows = 1024, page_size = 4096, cache_size = -2000, index = 1, tx_size = 1;
	long long seed = 1;
	int keep = 0;
	const char *journal = "delete", *sync = "full";
	char phases_arg[256] = "insert,update,delete";
	int opt;
	while ((opt = getopt(argc, argv, "d:r:j:s:p:c:i:t:S:P:k")) != -1) {
		switch (opt) {
		case 'd': db_path = optarg; break;
		case 'r': rows = atoi(optarg); break;
		case 'j': journal = optarg; break;
		case 's': sync = optarg; break;
		case 'p': page_size = atoi(optarg); break;
		case 'c': cache_size = atoi(optarg); break;
		case 'i': index = atoi(optarg); break;
		case 't': tx_size = atoi(optarg); break;
		case 'S': seed = atoll(optarg); break;
		case 'P': snprintf(phases_arg, sizeof phases_arg, "%s", optarg); break;
		case 'k': keep = 1; break;
		default:
			fprintf(stderr, "usage: cloop -d DB [-r ROWS] [-j JOURNAL] [-s SYNC] [-p PAGE_SIZE] "
					"[-c CACHE_SIZE] [-i 0|1] [-t TX_SIZE] [-S SEED] [-P PHASES] [-k]\n");
			return 2;
		}
	}
	if (!db_path || rows < 1 || tx_size < 1) {
		fprintf(stderr, "cloop: -d DB is required; rows and tx size must be >= 1\n");
		return 2;
	}
	remove_db();
	/* NOMUTEX as the Go side: one thread uses the connection. */
	if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK)
		die("open");

	char sql[256];
	snprintf(sql, sizeof sql, "PRAGMA page_size = %d", page_size);
	exec(sql);
	snprintf(sql, sizeof sql, "PRAGMA journal_mode = %s", journal);
	exec(sql);
	snprintf(sql, sizeof sql, "PRAGMA synchronous = %s", sync);
	exec(sql);
	snprintf(sql, sizeof sql, "PRAGMA cache_size = %d", cache_size);
	exec(sql);
	exec("CREATE TABLE contacts(id INTEGER PRIMARY KEY, name TEXT NOT NULL, phone TEXT, email TEXT, address TEXT, updated INTEGER)");
	if (index)
		exec("CREATE INDEX contacts_name ON contacts(name)");

	sqlite3_stmt *ins = prepare("INSERT INTO contacts(id, name, phone, email, address, updated) VALUES(?, ?, ?, ?, ?, ?)");
	sqlite3_stmt *upd = prepare("UPDATE contacts SET phone = ?, email = ?, updated = ? WHERE id = ?");
	sqlite3_stmt *sel = prepare("SELECT id, name, phone, email, address, updated FROM contacts WHERE id = ?");
	sqlite3_stmt *del = prepare("DELETE FROM contacts WHERE id = ?");
	sqlite3_stmt *begin = prepare("BEGIN");
	sqlite3_stmt *commit = prepare("COMMIT");

	/* Row data, drawn in data.go's order: per phase, the permutation's keys
	 * first (not for insert), then each statement's strings. */
	char (*name)[NAME_LEN] = malloc((size_t)rows * NAME_LEN);
	char (*phone)[PHONE_LEN] = malloc((size_t)rows * PHONE_LEN);
	char (*email)[EMAIL_LEN] = malloc((size_t)rows * EMAIL_LEN);
	char (*address)[ADDRESS_LEN] = malloc((size_t)rows * ADDRESS_LEN);
	int64_t *ids = malloc((size_t)rows * sizeof *ids);
	if (!name || !phone || !email || !address || !ids) {
		fprintf(stderr, "cloop: out of memory\n");
		return 1;
	}
	rng_x = (uint64_t)seed;

	printf("{\"sqlite_version\": \"%s\", \"rows\": %d, \"journal\": \"%s\", \"sync\": \"%s\", \"tx_size\": %d, \"phases\": [",
	       sqlite3_libversion(), rows, journal, sync, tx_size);
	int first = 1;
	for (char *ph = strtok(phases_arg, ","); ph; ph = strtok(NULL, ",")) {
		int is_ins = !strcmp(ph, "insert"), is_upd = !strcmp(ph, "update");
		int is_sel = !strcmp(ph, "select"), is_del = !strcmp(ph, "delete");
		if (!is_ins && !is_upd && !is_sel && !is_del) {
			fprintf(stderr, "cloop: unknown phase %s\n", ph);
			return 2;
		}
		if (!is_ins)
			perm_init((uint64_t)rows);
		for (int k = 0; k < rows; k++)
			ids[k] = is_ins ? k + 1 : perm_id((uint64_t)k);
		for (int k = 0; k < rows; k++) {
			if (is_ins) {
				gen_name(name[k]);
				gen_phone(phone[k]);
				gen_email(email[k]);
				gen_address(address[k]);
			} else if (is_upd) {
				gen_phone(phone[k]);
				gen_email(email[k]);
			}
		}

		long long txs = 0;
		double t0 = now();
		for (int k = 0; k < rows;) {
			int end = k + tx_size < rows ? k + tx_size : rows;
			if (tx_size > 1)
				step_done(begin, "BEGIN");
			for (; k < end; k++) {
				int64_t id = ids[k];
				if (is_ins) {
					sqlite3_bind_int64(ins, 1, id);
					sqlite3_bind_text(ins, 2, name[k], NAME_LEN, SQLITE_STATIC);
					sqlite3_bind_text(ins, 3, phone[k], PHONE_LEN, SQLITE_STATIC);
					sqlite3_bind_text(ins, 4, email[k], EMAIL_LEN, SQLITE_STATIC);
					sqlite3_bind_text(ins, 5, address[k], ADDRESS_LEN, SQLITE_STATIC);
					sqlite3_bind_int64(ins, 6, INSERTED_AT + id);
					step_done(ins, "insert");
				} else if (is_upd) {
					sqlite3_bind_text(upd, 1, phone[k], PHONE_LEN, SQLITE_STATIC);
					sqlite3_bind_text(upd, 2, email[k], EMAIL_LEN, SQLITE_STATIC);
					sqlite3_bind_int64(upd, 3, UPDATED_AT + id);
					sqlite3_bind_int64(upd, 4, id);
					step_done(upd, "update");
				} else if (is_del) {
					sqlite3_bind_int64(del, 1, id);
					step_done(del, "delete");
				} else {
					sqlite3_bind_int64(sel, 1, id);
					if (step_done(sel, "select") != 1)
						die("select did not return exactly one row");
				}
				/* The Go side checks that each statement changed one row. */
				if (!is_sel && sqlite3_changes(db) != 1)
					die("statement did not change exactly one row");
			}
			if (tx_size > 1)
				step_done(commit, "COMMIT");
			txs++;
		}
		double dt = now() - t0;

		/* The Go side counts with a fresh statement (outside the timing). */
		sqlite3_stmt *count = prepare("SELECT count(*) FROM contacts");
		if (sqlite3_step(count) != SQLITE_ROW)
			die("count");
		long long after = sqlite3_column_int64(count, 0);
		sqlite3_finalize(count);
		printf("%s{\"phase\": \"%s\", \"statements\": %d, \"transactions\": %lld, \"duration_sec\": %.6f, "
		       "\"tx_per_sec\": %.1f, \"rows_after\": %lld}",
		       first ? "" : ", ", ph, rows, txs, dt, txs / dt, after);
		first = 0;
	}
	printf("], \"checksum\": %lld}\n", checksum);

	sqlite3_stmt *all[] = {ins, upd, sel, del, begin, commit};
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		sqlite3_finalize(all[i]);
	sqlite3_close(db);
	if (!keep)
		remove_db();
	return 0;
}
