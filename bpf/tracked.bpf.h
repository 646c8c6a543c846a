/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef __TRACKED_BPF_H
#define __TRACKED_BPF_H

/* The workload's processes, by tgid. timeacct owns the map and keeps it
 * (a process forked by a tracked one is tracked, and a process leaves it
 * when its leader's task is freed: it holds the processes alive at once,
 * a pid reused later is another process); the other probes are
 * loaded with timeacct's map in place of their own (user space passes it
 * in), so their definitions must be this one. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);  /* tgid */
	__type(value, __u8); /* unused */
} tracked SEC(".maps");

static __always_inline bool is_tracked(__u32 tgid)
{
	return tgid != 0 && bpf_map_lookup_elem(&tracked, &tgid) != NULL;
}

#endif /* __TRACKED_BPF_H */
