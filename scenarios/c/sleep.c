/* sleep: a thread that does a little work every 10 ms and waits on a timer
 * in between. Verdict: sleep. */
#include "common.h"
int main(void)
{
	double end = now() + RUN_SECONDS;
	struct timespec ts = {0, 10 * 1000 * 1000};
	while (now() < end) {
		spin(100);
		nanosleep(&ts, NULL);
	}
	return 0;
}
