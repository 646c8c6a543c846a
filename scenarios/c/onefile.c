/* onefile: 16 threads make buffered 4 KiB writes at random offsets in one
 * 64 MiB file. Each write takes the file's inode lock (i_rwsem, in
 * ext4_buffered_write_iter on ext4): the threads wait for each other on
 * it. Verdict: lock, on the inode lock of scenario-onefile.dat. */
#include "common.h"
#define THREADS 16
#define SPAN (64 << 20)
static int fd;
static double end;
static void *worker(void *a)
{
	char buf[4096];
	unsigned seed = (unsigned)(uintptr_t)a * 2654435761u;
	memset(buf, 'w', sizeof buf);
	while (now() < end) {
		off_t off = (off_t)(rand_r(&seed) % (SPAN / 4096)) * 4096;
		if (pwrite(fd, buf, sizeof buf, off) != (ssize_t)sizeof buf)
			die("pwrite");
	}
	return a;
}
int main(void)
{
	fd = open("scenario-onefile.dat", O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || ftruncate(fd, SPAN))
		die("scenario-onefile.dat");
	end = now() + RUN_SECONDS;
	pthread_t t[THREADS];
	for (long i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, worker, (void *)(i + 1));
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	unlink("scenario-onefile.dat");
	return 0;
}
