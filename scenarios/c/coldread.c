/* cold-read: "coldread FILE N" makes N buffered 4 KiB reads at random places
 * in FILE (which the caller made, larger than what stays cached when the
 * page cache is dropped). Warm, the reads are copies from the page cache;
 * cold, each one waits for the disk. Sensitive to cold-cache. */
#include "common.h"
int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: coldread FILE N\n");
		return 2;
	}
	int fd = open(argv[1], O_RDONLY);
	if (fd < 0)
		die(argv[1]);
	off_t size = lseek(fd, 0, SEEK_END);
	long n = atol(argv[2]);
	/* No readahead: every cold read is one disk read. */
	posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
	char buf[4096];
	unsigned seed = 1;
	for (long i = 0; i < n; i++) {
		off_t off = (off_t)(rand_r(&seed) % (size / 4096)) * 4096;
		if (pread(fd, buf, sizeof buf, off) != (ssize_t)sizeof buf)
			die("pread");
	}
	return 0;
}
