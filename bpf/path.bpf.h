/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* A file's path from its dentry, and an fd's file, for the BPF programs
 * that name files. */
#ifndef __PATH_BPF_H
#define __PATH_BPF_H

#define PATH_DEPTH 8
#define PATH_NAME_LEN 64

/* fill_names copies the names of d and its parents, leaf first, into names
 * (PATH_DEPTH x PATH_NAME_LEN bytes), up to the root of its filesystem or
 * PATH_DEPTH components; *depth is how many were filled, *truncated is set
 * when the path is deeper. User space prefixes the mount point. d may be a
 * BTF pointer or a plain address: every read goes through CO-RE. */
static __always_inline void fill_names(__u8 names[PATH_DEPTH][PATH_NAME_LEN], __u32 *depth, __u32 *truncated, struct dentry *d)
{
	for (int i = 0; i < PATH_DEPTH; i++) {
		struct dentry *parent = BPF_CORE_READ(d, d_parent);

		if (!parent || parent == d) /* the filesystem's root: "/" */
			return;
		bpf_probe_read_kernel_str(names[i], PATH_NAME_LEN, BPF_CORE_READ(d, d_name.name));
		*depth = i + 1;
		d = parent;
	}
	*truncated = 1;
}

/* fd_file is task's open file fd, NULL if none. task is the current task
 * (trusted), its files table readable directly. */
static __always_inline struct file *fd_file(struct task_struct *task, int fd)
{
	struct files_struct *files = task->files;
	struct fdtable *fdt;
	struct file **arr;
	struct file *f = NULL;

	if (!files)
		return NULL;
	fdt = files->fdt;
	if (!fdt || fd < 0 || fd >= fdt->max_fds)
		return NULL;
	arr = fdt->fd;
	bpf_probe_read_kernel(&f, sizeof(f), &arr[fd]);
	return f;
}

#endif /* __PATH_BPF_H */
