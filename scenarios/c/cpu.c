/* cpu: one thread computes for the whole run. Verdict: cpu.
 * With arguments, "cpu N [THREADS]" does a fixed amount of work instead:
 * N million steps of arithmetic on each of THREADS threads (default 1), so
 * that diagnose can compare how long the same work takes under conditions. */
#include "common.h"

static long steps;

static void *work(void *arg)
{
	(void)arg;
	volatile uint64_t x = 1;
	for (long i = 0; i < steps; i++)
		for (int j = 0; j < 1000000; j++)
			x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		spin(RUN_SECONDS * 1e6);
		return 0;
	}
	steps = atol(argv[1]);
	int n = argc > 2 ? atoi(argv[2]) : 1;
	pthread_t t[64];
	for (int i = 0; i < n && i < 64; i++)
		pthread_create(&t[i], NULL, work, NULL);
	for (int i = 0; i < n && i < 64; i++)
		pthread_join(t[i], NULL);
	return 0;
}
