/* storage-write: 64 KiB O_DIRECT random writes (no sync), each waiting for
 * the device. Verdict: storage-write. */
#include "common.h"
int main(void)
{
	const off_t size = 64 << 20;
	int wfd = direct_fd(scratch_file("scenario-write", 0, size), O_WRONLY | O_DIRECT);
	static char buf[64 << 10] __attribute__((aligned(4096)));
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
