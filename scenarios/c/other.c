/* other: blocked in open(2) of a FIFO until a writer appears, a wait none of
 * perfsleuth's categories describes. Verdict: other. */
#include "common.h"
#include <sys/stat.h>
static void *writer(void *a)
{
	struct timespec ts = {0, 20 * 1000 * 1000};
	for (;;) {
		nanosleep(&ts, NULL);
		int fd = open("scenario-fifo", O_WRONLY | O_NONBLOCK);
		if (fd >= 0)
			close(fd);
	}
	return a;
}
int main(void)
{
	unlink("scenario-fifo");
	if (mkfifo("scenario-fifo", 0600))
		die("mkfifo");
	pthread_t t;
	pthread_create(&t, NULL, writer, NULL);
	double end = now() + RUN_SECONDS;
	while (now() < end) {
		int fd = open("scenario-fifo", O_RDONLY);
		if (fd >= 0)
			close(fd);
	}
	unlink("scenario-fifo");
	return 0;
}
