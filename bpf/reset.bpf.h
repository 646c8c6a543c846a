/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef __RESET_BPF_H
#define __RESET_BPF_H

/* TASK_STORAGE_RESET(map) defines reset_<map>, an iter/task program that
 * deletes every task's entry of the task storage map: run by user space
 * between two uses of a kept collection (internal/probe/pool.go), as a
 * task's storage can neither be listed nor dropped otherwise. Never
 * attached to an event. */
#define TASK_STORAGE_RESET(map)                                  \
	SEC("iter/task")                                         \
	int reset_##map(struct bpf_iter__task *ctx)              \
	{                                                        \
		struct task_struct *task = ctx->task;            \
                                                                 \
		if (task)                                        \
			bpf_task_storage_delete(&map, task);     \
		return 0;                                        \
	}

#endif /* __RESET_BPF_H */
