/* thread churn: a thread per message, as a timer that spawns one per call.
 * Finding: threads.churn. It runs RUN_SECONDS and makes at least
 * MIN_THREADS threads, however slowly they come: beside two CPU burners
 * it once made 607 in the time, and the test (which wants 1000 seen)
 * failed on the machine's speed, not on what perfsleuth saw. */
#include "common.h"
#define MIN_THREADS 1200
static void *message(void *a) { spin(20); return a; }
int main(void)
{
	double end = now() + RUN_SECONDS;
	long made = 0;
	while (now() < end || made < MIN_THREADS) {
		pthread_t t;
		if (pthread_create(&t, NULL, message, NULL))
			die("pthread_create");
		pthread_join(t, NULL);
		made++;
	}
	return 0;
}
