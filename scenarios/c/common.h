/* Shared by the scenario programs: each runs one known root cause for about
 * RUN_SECONDS and exits. Built by scenarios_test.go with gcc -O2 -pthread. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define RUN_SECONDS 1.5

__attribute__((unused)) static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((unused)) static void die(const char *what)
{
	perror(what);
	exit(1);
}

/* spin burns the CPU for about us microseconds. */
__attribute__((unused)) static void spin(double us)
{
	double end = now() + us / 1e6;
	volatile uint64_t x = 0;
	while (now() < end)
		for (int i = 0; i < 100; i++)
			x += i;
}

/* scratch_file opens a scenario file in the current directory (the test's
 * temporary directory, on a real disk) and unlinks it at once. */
__attribute__((unused)) static int scratch_file(const char *name, int flags, off_t size)
{
	int fd = open(name, O_RDWR | O_CREAT | O_TRUNC | flags, 0600);
	if (fd < 0)
		die(name);
	unlink(name);
	if (size > 0) {
		static char buf[1 << 20] __attribute__((aligned(4096)));
		memset(buf, 0x5a, sizeof buf);
		for (off_t off = 0; off < size; off += sizeof buf)
			if (pwrite(fd, buf, sizeof buf, off) != (ssize_t)sizeof buf)
				die("prepare");
		if (fsync(fd))
			die("fsync");
	}
	return fd;
}

/* direct_fd reopens an open file with extra flags (O_DIRECT) through
 * /proc/self/fd, which works after the file was unlinked. */
__attribute__((unused)) static int direct_fd(int fd, int flags)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	int nfd = open(path, flags);
	if (nfd < 0)
		die("reopen with O_DIRECT");
	return nfd;
}
