/* cachedread: one thread reads 4 KiB at random offsets of a 16 MiB file
 * that sits in the page cache: all its time is on a CPU, in the kernel,
 * looking pages up and copying them out. Finding: cpu.kernel_path
 * (filemap_read, the page cache's read path). */
#include "common.h"
#define SPAN (16 << 20)
int main(void)
{
	static char buf[4096];
	int fd = open("scenario-cachedread.dat", O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		die("scenario-cachedread.dat");
	unlink("scenario-cachedread.dat");
	memset(buf, 'c', sizeof buf);
	for (off_t off = 0; off < SPAN; off += sizeof buf)
		if (pwrite(fd, buf, sizeof buf, off) != (ssize_t)sizeof buf)
			die("pwrite");
	unsigned seed = 1;
	double end = now() + RUN_SECONDS;
	while (now() < end)
		for (int i = 0; i < 64; i++)
			if (pread(fd, buf, sizeof buf, (off_t)(rand_r(&seed) % (SPAN / 4096)) * 4096) != (ssize_t)sizeof buf)
				die("pread");
	return 0;
}
