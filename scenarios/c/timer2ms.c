/* timer2ms: a loop that works 100 µs and then sleeps until the next 2 ms
 * tick of an absolute timer (a control loop, a frame pacer). Verdict:
 * sleep, named as timer-bound: the loop runs no faster than its timer. */
#include "common.h"
int main(void)
{
	struct timespec next;
	clock_gettime(CLOCK_MONOTONIC, &next);
	double end = now() + RUN_SECONDS;
	while (now() < end) {
		spin(100);
		next.tv_nsec += 2 * 1000 * 1000;
		if (next.tv_nsec >= 1000000000) {
			next.tv_sec++;
			next.tv_nsec -= 1000000000;
		}
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
	}
	return 0;
}
