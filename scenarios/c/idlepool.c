/* idle pool: eight workers parked on a condition variable for the whole run
 * beside one busy thread. The pool must not read as lock contention.
 * Verdict: cpu, and no lock.contention finding. */
#include "common.h"
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int quit;
static void *parked(void *a)
{
	pthread_mutex_lock(&mu);
	while (!quit)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	return a;
}
int main(void)
{
	pthread_t t[8];
	for (int i = 0; i < 8; i++)
		pthread_create(&t[i], NULL, parked, NULL);
	spin(RUN_SECONDS * 1e6);
	pthread_mutex_lock(&mu);
	quit = 1;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	for (int i = 0; i < 8; i++)
		pthread_join(t[i], NULL);
	return 0;
}
