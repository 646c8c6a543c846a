/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef __SQLTHREAD_BPF_H
#define __SQLTHREAD_BPF_H

#include "reset.bpf.h"
#include "sqlstmt.h"

/* Each thread's current SQLite execution. The statement probe owns it;
 * storage is loaded with it in place of its own (user space passes it in)
 * and reads it for each SQLite file event, so the definitions must be this
 * one. Without the statement probe it stays empty and events carry 0. */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct sq_thread);
} sql_threads SEC(".maps");

TASK_STORAGE_RESET(sql_threads)

/* Per statement id, the calls storage saw for it (struct sq_io). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SQ_MAX_STMTS);
	__type(key, __u32);
	__type(value, struct sq_io);
} stmt_io SEC(".maps");

#endif /* __SQLTHREAD_BPF_H */
