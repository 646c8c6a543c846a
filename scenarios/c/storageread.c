/* storage-read: 1 MiB O_DIRECT random reads, each waiting for the disk.
 * (4 KiB reads on a fast virtual disk cost more CPU in the kernel than they
 * wait: that run is honestly CPU-bound.) Verdict: storage-read. */
#include "common.h"
int main(void)
{
	const off_t size = 256 << 20;
	int rfd = direct_fd(scratch_file("scenario-read", 0, size), O_RDONLY | O_DIRECT);
	static char buf[1 << 20] __attribute__((aligned(4096)));
	unsigned seed = 1;
	double end = now() + RUN_SECONDS;
	while (now() < end) {
		off_t off = (off_t)(rand_r(&seed) % (size / sizeof buf)) * sizeof buf;
		if (pread(rfd, buf, sizeof buf, off) != (ssize_t)sizeof buf)
			die("pread");
	}
	return 0;
}
