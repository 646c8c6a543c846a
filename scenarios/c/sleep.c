/* sleep: a thread that does a little work every 10 ms and waits on a timer
 * in between. Verdict: sleep.
 * The work is 300 µs (3% of the time): it was 100 µs, which ran the thread
 * for 0.99% of its time, on the 1% below which a thread that waits the rest
 * is idle (analyze's idleCPUShare), and the scenario failed now and then. */
#include "common.h"
int main(void)
{
	double end = now() + RUN_SECONDS;
	struct timespec ts = {0, 10 * 1000 * 1000};
	while (now() < end) {
		spin(300);
		nanosleep(&ts, NULL);
	}
	return 0;
}
