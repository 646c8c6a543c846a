/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Types shared between bpf/profile.bpf.c and internal/probe/profile (via
 * bpf2go). Fixed-width fields only, laid out without padding holes. */
#ifndef __PROFILE_H
#define __PROFILE_H

#define PR_MAX_FRAMES 127 /* the kernel's default perf_event_max_stack */
#define PR_COMM_LEN 16

/* One thread with one pair of stacks; a stack id < 0 is the error
 * bpf_get_stackid returned (-EFAULT: no user stack, e.g. a kernel thread;
 * -ENOMEM / -EEXIST: the stack map was full or a bucket collided). */
struct pr_key {
	__u32 tgid;
	__u32 tid;
	__s32 kstack;
	__s32 ustack;
};

struct pr_val {
	__u64 samples;
	char comm[PR_COMM_LEN];
};

/* Per CPU. */
struct pr_counters {
	__u64 samples; /* samples of the workload's threads */
	__u64 dropped; /* samples not counted: the counts map was full */
	__u64 runs;    /* every run of the program, workload or not */
	/* The time the runs took, timed by the program itself (two clock
	 * reads a run, at 99 Hz a CPU: nothing beside a stack walk): those
	 * the filter stopped, and the workload's (samples + dropped). */
	__u64 filter_ns;
	__u64 work_ns;
};

#endif
