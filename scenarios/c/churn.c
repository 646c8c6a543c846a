/* thread churn: a thread per message, as a timer that spawns one per call.
 * Finding: threads.churn. */
#include "common.h"
static void *message(void *a) { spin(20); return a; }
int main(void)
{
	double end = now() + RUN_SECONDS;
	while (now() < end) {
		pthread_t t;
		if (pthread_create(&t, NULL, message, NULL))
			die("pthread_create");
		pthread_join(t, NULL);
	}
	return 0;
}
