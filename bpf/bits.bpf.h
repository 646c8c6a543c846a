/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Helpers shared by the BPF programs. */
#ifndef __BITS_BPF_H
#define __BITS_BPF_H

/* log2 of v, rounded down (log2(0) = 0); from libbpf-tools' bits.bpf.h. */
static __always_inline __u64 log2_u32(__u32 v)
{
	__u32 shift, r;

	r = (v > 0xFFFF) << 4; v >>= r;
	shift = (v > 0xFF) << 3; v >>= shift; r |= shift;
	shift = (v > 0xF) << 2; v >>= shift; r |= shift;
	shift = (v > 0x3) << 1; v >>= shift; r |= shift;
	r |= (v >> 1);
	return r;
}

static __always_inline __u64 log2_u64(__u64 v)
{
	__u32 hi = v >> 32;

	if (hi)
		return log2_u32(hi) + 32;
	return log2_u32(v);
}

/* slot is log2(v) capped to the last of n slots. */
static __always_inline __u32 slot_of(__u64 v, __u32 n)
{
	__u64 s = log2_u64(v);

	return s >= n ? n - 1 : (__u32)s;
}

/* lookup_or_init is map's value for key, inserted as init when there is
 * none (another CPU may insert it first: its value is returned then);
 * NULL when the map is full. */
static __always_inline void *lookup_or_init(void *map, const void *key, const void *init)
{
	void *v = bpf_map_lookup_elem(map, key);

	if (v)
		return v;
	bpf_map_update_elem(map, key, init, BPF_NOEXIST);
	return bpf_map_lookup_elem(map, key);
}

#endif /* __BITS_BPF_H */
