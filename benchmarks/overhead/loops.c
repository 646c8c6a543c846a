// The constraint keeps the go tool from treating this file as part of the
// Go package in this directory (a .c file needs cgo); gcc ignores it.
//go:build ignore

/* loops: the overhead benchmark's file workloads, timed inside the loop
 * (a process start and perfsleuth's attach are outside it):
 *
 *   loops append SECONDS      4 KiB writes appended to a new file; every
 *                             64 MiB the file is cut back to nothing, so
 *                             the run measures appends to the page cache,
 *                             not the device's writeback (the dirty pages
 *                             are dropped before the flusher is due)
 *   loops cachedread SECONDS  4 KiB preads at random offsets of a 64 MiB
 *                             file that sits in the page cache
 *
 * Both print "RATE ops/s" on stdout. Their file is unlinked as soon as it
 * is open, so it goes with the process whatever way it ends. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SPAN (64 << 20)
#define BS 4096

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void usage(void)
{
	fputs("usage: loops append|cachedread SECONDS\n", stderr);
	exit(2);
}

int main(int argc, char **argv)
{
	static char buf[BS];
	if (argc != 3)
		usage();
	double secs = atof(argv[2]);
	int fd = open("loops.dat", O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		die("loops.dat");
	unlink("loops.dat");
	memset(buf, 'l', sizeof buf);
	long ops = 0;
	double start, end;
	if (strcmp(argv[1], "append") == 0) {
		off_t off = 0;
		start = now();
		end = start + secs;
		for (;;) {
			for (int i = 0; i < 64; i++, ops++) {
				if (pwrite(fd, buf, BS, off) != BS)
					die("pwrite");
				if ((off += BS) >= SPAN) {
					if (ftruncate(fd, 0) != 0)
						die("ftruncate");
					off = 0;
				}
			}
			if (now() >= end)
				break;
		}
	} else if (strcmp(argv[1], "cachedread") == 0) {
		for (off_t off = 0; off < SPAN; off += BS)
			if (pwrite(fd, buf, BS, off) != BS)
				die("pwrite");
		unsigned seed = 1;
		start = now();
		end = start + secs;
		for (;;) {
			for (int i = 0; i < 64; i++, ops++)
				if (pread(fd, buf, BS, (off_t)(rand_r(&seed) % (SPAN / BS)) * BS) != BS)
					die("pread");
			if (now() >= end)
				break;
		}
	} else {
		usage();
	}
	printf("%.0f ops/s\n", ops / (now() - start));
	return 0;
}
