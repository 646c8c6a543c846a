/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef __THREADS_BPF_H
#define __THREADS_BPF_H

/* Each thread's entry of the time accounting (struct ta_thread), in a slot
 * of an array, and the slot of each thread id in an index: 16-bit slots,
 * four to a word (thread_idx[tid >> 2], bits (tid & 3) * 16), 0 for none.
 * timeacct owns both and makes and frees the entries; the other probes
 * are loaded with timeacct's maps in place of their own (user space passes
 * them in) and read them, so their definitions must be these.
 *
 * Arrays, not a hash by tid: a switch looks up the entries of the two
 * threads it switches, a wake-up and a waking one each, and an array
 * lookup is a few inlined instructions where a hash lookup was a call, a
 * hash, a bucket walk and a key compare: about 60 ns a lookup here (BPF
 * statistics: sched_waking ran 80 ns returning before its lookup, 140 ns
 * after it), some 480 ns of the 1,290 a round trip of a two-thread
 * ping-pong paid. User space maps the entries (BPF_F_MMAPABLE) and reads
 * them in place. */
#define TA_THREAD_SLOTS 16384 /* slot 0 is never used: it means none */

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, TA_THREAD_SLOTS);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32); /* slot */
	__type(value, struct ta_thread);
} threads SEC(".maps");

/* Sized by user space before load to the kernel's pid_max (a quarter of it
 * in words: 8 KiB for 32,768 pids, 8 MiB for 2^22). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);   /* tid >> 2 */
	__type(value, __u64); /* four 16-bit slots */
} thread_idx SEC(".maps");

static __always_inline __u64 *thread_idx_word(__u32 tid)
{
	__u32 w = tid >> 2;

	return bpf_map_lookup_elem(&thread_idx, &w);
}

/* thread_slot is tid's slot, 0 for none. */
static __always_inline __u32 thread_slot(__u32 tid)
{
	__u64 *w = thread_idx_word(tid);

	return w ? (__u32)(*w >> ((tid & 3) * 16)) & 0xffff : 0;
}

/* thread_of is tid's entry, NULL when it has none. An entry read while its
 * thread's is being freed and its slot reused is told by its tid. */
static __always_inline struct ta_thread *thread_of(__u32 tid)
{
	__u32 slot = thread_slot(tid);
	struct ta_thread *t;

	if (!slot)
		return NULL;
	t = bpf_map_lookup_elem(&threads, &slot);
	return t && t->tid == tid ? t : NULL;
}

#endif /* __THREADS_BPF_H */
