/* syncwait: one thread appends a record and fdatasyncs it, again and
 * again (a group-commit leader); three threads wait on a condition variable
 * for each commit and then do a little work (the sessions whose
 * transactions it made durable). Summed over the threads, the waiters'
 * sleep outweighs the sync. Verdict: storage-sync. */
#include "common.h"
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static long commits;
static volatile int done;
static void *waiter(void *arg)
{
	long seen = 0;
	pthread_mutex_lock(&mu);
	while (!done) {
		while (commits == seen && !done)
			pthread_cond_wait(&cv, &mu);
		seen = commits;
		pthread_mutex_unlock(&mu);
		spin(5);
		pthread_mutex_lock(&mu);
	}
	pthread_mutex_unlock(&mu);
	return arg;
}
int main(void)
{
	pthread_t w[3];
	for (int i = 0; i < 3; i++)
		pthread_create(&w[i], NULL, waiter, NULL);
	int fd = scratch_file("scenario-syncwait", 0, 0);
	char buf[4096];
	memset(buf, 3, sizeof buf);
	double end = now() + RUN_SECONDS;
	while (now() < end) {
		if (write(fd, buf, sizeof buf) != sizeof buf || fdatasync(fd))
			die("commit");
		pthread_mutex_lock(&mu);
		commits++;
		pthread_cond_broadcast(&cv);
		pthread_mutex_unlock(&mu);
	}
	pthread_mutex_lock(&mu);
	done = 1;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	for (int i = 0; i < 3; i++)
		pthread_join(w[i], NULL);
	return 0;
}
