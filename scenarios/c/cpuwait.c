/* cpu-wait: three busy threads confined to one CPU take turns on it, so
 * each is runnable but waiting two thirds of the time. Verdict: cpu-wait. */
#include "common.h"
#include <sched.h>
static void *busy(void *a) { spin(RUN_SECONDS * 1e6); return a; }
int main(void)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	if (sched_setaffinity(0, sizeof set, &set))
		die("sched_setaffinity");
	pthread_t t[3];
	for (int i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, busy, NULL);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	return 0;
}
