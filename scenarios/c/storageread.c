/* storage-read: 4 KiB O_DIRECT random reads, each waiting for the disk.
 * Verdict: storage-read. */
#include "common.h"
int main(void)
{
	const off_t size = 64 << 20;
	int rfd = direct_fd(scratch_file("scenario-read", 0, size), O_RDONLY | O_DIRECT);
	static char buf[4096] __attribute__((aligned(4096)));
	unsigned seed = 1;
	double end = now() + RUN_SECONDS;
	while (now() < end) {
		off_t off = (off_t)(rand_r(&seed) % (size / 4096)) * 4096;
		if (pread(rfd, buf, 4096, off) != 4096)
			die("pread");
	}
	return 0;
}
