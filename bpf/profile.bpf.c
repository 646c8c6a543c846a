// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* profile: on-CPU stack samples of the workload, like bcc's profile.
 *
 * User space opens one software cpu-clock perf event per CPU (it works
 * where the hardware PMU does not, as in most VMs) at a fixed frequency and
 * attaches do_sample to each. A sample of a thread of the workload (its
 * processes are timeacct's tracked map, shared) takes the kernel and user
 * stacks into a stack map and counts them per thread; everything else
 * costs one hash lookup. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "profile.h"
#include "bits.bpf.h"
#include "tracked.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";


struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 16384);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, PR_MAX_FRAMES * sizeof(__u64));
} stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct pr_key);
	__type(value, struct pr_val);
} counts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct pr_counters);
} counters SEC(".maps");

/* sample counts one sample of a workload thread under its stacks. */
static __always_inline void sample(struct bpf_perf_event_data *ctx, __u64 id, struct pr_counters *c)
{
	struct pr_key key = {};
	struct pr_val *v;

	key.tgid = id >> 32;
	key.tid = (__u32)id;
	key.kstack = bpf_get_stackid(ctx, &stacks, 0);
	key.ustack = bpf_get_stackid(ctx, &stacks, BPF_F_USER_STACK);
	v = bpf_map_lookup_elem(&counts, &key);
	if (!v) {
		struct pr_val init = {};

		bpf_get_current_comm(init.comm, sizeof(init.comm));
		v = lookup_or_init(&counts, &key, &init);
	}
	if (!v) {
		c->dropped++;
		return;
	}
	__sync_fetch_and_add(&v->samples, 1);
	c->samples++;
}

SEC("perf_event")
int do_sample(struct bpf_perf_event_data *ctx)
{
	__u64 t0 = bpf_ktime_get_ns();
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, zero = 0;
	struct pr_counters *c = bpf_map_lookup_elem(&counters, &zero);

	if (!c)
		return 0;
	c->runs++;
	if (!is_tracked(tgid)) {
		c->filter_ns += bpf_ktime_get_ns() - t0;
		return 0;
	}
	sample(ctx, id, c);
	c->work_ns += bpf_ktime_get_ns() - t0;
	return 0;
}
