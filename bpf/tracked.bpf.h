/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef __TRACKED_BPF_H
#define __TRACKED_BPF_H

/* The workload's processes, as a bitmap of tgids: bit (tgid & 63) of word
 * tgid >> 6, for every pid the kernel can hand out (PID_MAX_LIMIT, 2^22 on
 * 64-bit: 512 KiB). timeacct owns the map and keeps it (a process forked
 * by a tracked one is tracked, and a process leaves it when its leader's
 * task is freed: it holds the processes alive at once, a pid reused later
 * is another process); the other probes are loaded with timeacct's map in
 * place of their own (user space passes it in), so their definitions must
 * be this one.
 *
 * A bitmap, not a hash: every context switch, wake-up and block request on
 * the machine asks whether a task is the workload's, and an array lookup
 * is a few inlined instructions where a hash lookup is a call, a hash and
 * a bucket walk (a third of an untracked switch's cost, and a fifth of the
 * page-cache programs'). User space maps it (BPF_F_MMAPABLE) and sets its
 * bits with atomic operations, as the programs do. */
#define TRACKED_PID_LIMIT (1 << 22)
#define TRACKED_WORDS (TRACKED_PID_LIMIT / 64)

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, TRACKED_WORDS);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);   /* tgid >> 6 */
	__type(value, __u64); /* bit tgid & 63 */
} tracked SEC(".maps");

static __always_inline __u64 *tracked_word(__u32 tgid)
{
	__u32 w = tgid >> 6;

	return bpf_map_lookup_elem(&tracked, &w);
}

static __always_inline bool is_tracked(__u32 tgid)
{
	__u64 *w;

	if (tgid == 0)
		return false;
	w = tracked_word(tgid);
	return w && (*w >> (tgid & 63)) & 1;
}

/* track adds tgid to the workload; false when it is out of the map's
 * range. */
static __always_inline bool track(__u32 tgid)
{
	__u64 *w = tracked_word(tgid);

	if (!w)
		return false;
	__sync_fetch_and_or(w, 1ULL << (tgid & 63));
	return true;
}

static __always_inline void untrack(__u32 tgid)
{
	__u64 *w = tracked_word(tgid);

	if (w)
		__sync_fetch_and_and(w, ~(1ULL << (tgid & 63)));
}

#endif /* __TRACKED_BPF_H */
