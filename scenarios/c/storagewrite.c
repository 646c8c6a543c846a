/* storage-write: 4 MiB O_DIRECT random writes (smaller direct writes on a fast virtual disk cost more kernel CPU than they wait) (no sync), each waiting for
 * the device. Verdict: storage-write. */
#include "common.h"
int main(void)
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
	double end = now() + RUN_SECONDS;
	while (now() < end) {
		off_t off = (off_t)(rand_r(&seed) % (size / sizeof buf)) * sizeof buf;
		if (pwrite(wfd, buf, sizeof buf, off) != (ssize_t)sizeof buf)
			die("pwrite");
	}
	return 0;
}
