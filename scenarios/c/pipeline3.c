/* pipeline3: three processes joined by pipes, as in "gen | filter | store":
 * the first makes 4 KiB records (a little CPU), the second passes them on
 * (a little CPU), the third writes each to a file and fdatasyncs it. The
 * first two spend most of their time blocked on a full pipe, waiting for
 * the stage after them. Verdict: storage-sync (the last stage's), though
 * the two waiting stages' sleep outweighs it summed over the threads. */
#include "common.h"
#include <sys/wait.h>
int main(void)
{
	int a[2], b[2];
	char buf[4096];
	memset(buf, 7, sizeof buf);
	if (pipe(a) || pipe(b))
		die("pipe");
	pid_t p1 = fork();
	if (p1 == 0) { /* gen */
		close(a[0]); close(b[0]); close(b[1]);
		double end = now() + RUN_SECONDS;
		while (now() < end) {
			spin(20);
			if (write(a[1], buf, sizeof buf) != sizeof buf)
				die("gen write");
		}
		return 0;
	}
	pid_t p2 = fork();
	if (p2 == 0) { /* filter */
		close(a[1]); close(b[0]);
		ssize_t n;
		while ((n = read(a[0], buf, sizeof buf)) > 0) {
			spin(10);
			if (write(b[1], buf, n) != n)
				die("filter write");
		}
		return 0;
	}
	/* store */
	close(a[0]); close(a[1]); close(b[1]);
	int fd = scratch_file("scenario-pipeline", 0, 0);
	ssize_t n;
	while ((n = read(b[0], buf, sizeof buf)) > 0) {
		if (write(fd, buf, n) != n)
			die("store write");
		if (fdatasync(fd))
			die("fdatasync");
	}
	waitpid(p1, NULL, 0);
	waitpid(p2, NULL, 0);
	return 0;
}
