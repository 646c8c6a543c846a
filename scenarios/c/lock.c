/* lock: four threads take turns on one pthread mutex, doing all their work
 * inside it: each waits for the others most of the time. Verdict: lock. */
#include "common.h"
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static double end;
static void *worker(void *a)
{
	while (now() < end) {
		pthread_mutex_lock(&mu);
		spin(200);
		pthread_mutex_unlock(&mu);
		spin(5);
	}
	return a;
}
int main(void)
{
	end = now() + RUN_SECONDS;
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	return 0;
}
