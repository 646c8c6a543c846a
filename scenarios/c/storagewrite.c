/* storage-write: 4 MiB O_DIRECT random writes (smaller direct writes on a fast virtual disk cost more kernel CPU than they wait) (no sync), each waiting for
 * the device. Verdict: storage-write.
 * With an argument, "storagewrite N" writes N MiB (in 4 MiB writes) and
 * ends: a fixed amount of work, so that diagnose can compare how long the
 * same writes take under conditions. */
#include "common.h"
int main(int argc, char **argv)
{
	const off_t size = 64 << 20;
	/* Allocated, not written: laying the file out through the page cache
	 * would put CPU time into the window. */
	int fd = scratch_file("scenario-write", 0, 0);
	if (fallocate(fd, 0, 0, size))
		die("fallocate");
	int wfd = direct_fd(fd, O_WRONLY | O_DIRECT);
	static char buf[4 << 20] __attribute__((aligned(4096)));
	memset(buf, 0xa5, sizeof buf);
	unsigned seed = 1;
	long left = argc > 1 ? atol(argv[1]) / 4 : -1; /* writes to make; -1: for RUN_SECONDS */
	double end = now() + RUN_SECONDS;
	while (left < 0 ? now() < end : left-- > 0) {
		off_t off = (off_t)(rand_r(&seed) % (size / sizeof buf)) * sizeof buf;
		if (pwrite(wfd, buf, sizeof buf, off) != (ssize_t)sizeof buf)
			die("pwrite");
	}
	return 0;
}
