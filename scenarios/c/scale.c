/* scale MODE THREADS [SECONDS]: THREADS threads do units of work for
 * SECONDS (default 1) and the program prints "ops/s: N", the units done
 * per second, for diagnose --scale threads=1,2,4 ... -- scale MODE {threads}.
 *   parallel: each thread works on its own data: linear up to the CPUs.
 *   shared:   each thread increments its own counter, all counters on one
 *             cache line (false sharing): coherency.
 *   padded:   the same counters, each on a cache line of its own: linear.
 *   convoy:   each unit takes one pthread mutex for most of its work:
 *             contention. */
#include "common.h"
#define UNIT 1000 /* increments in a unit of work */
#define MAXT 64
static struct {
	volatile uint64_t c[MAXT];
} line __attribute__((aligned(64)));
static struct {
	volatile uint64_t c;
	char pad[56];
} padded[MAXT] __attribute__((aligned(64)));
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static volatile int stop;
static uint64_t units[MAXT];
static const char *mode;

static void *worker(void *a)
{
	long i = (long)a;
	uint64_t n = 0;
	volatile uint64_t own = 0;
	while (!stop) {
		if (!strcmp(mode, "parallel")) {
			for (int k = 0; k < UNIT; k++)
				own++;
		} else if (!strcmp(mode, "shared")) {
			for (int k = 0; k < UNIT; k++)
				line.c[i]++;
		} else if (!strcmp(mode, "padded")) {
			for (int k = 0; k < UNIT; k++)
				padded[i].c++;
		} else {
			pthread_mutex_lock(&mu);
			for (int k = 0; k < 9 * UNIT / 10; k++)
				own++;
			pthread_mutex_unlock(&mu);
			for (int k = 0; k < UNIT / 10; k++)
				own++;
		}
		n++;
	}
	units[i] = n;
	return a;
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return fprintf(stderr, "usage: scale parallel|shared|padded|convoy THREADS [SECONDS]\n"), 2;
	mode = argv[1];
	int threads = atoi(argv[2]);
	double secs = argc > 3 ? atof(argv[3]) : 1.0;
	if (threads < 1 || threads > MAXT)
		return fprintf(stderr, "scale: 1 to %d threads\n", MAXT), 2;
	pthread_t t[MAXT];
	double start = now();
	for (long i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);
	while (now() < start + secs)
		usleep(1000);
	stop = 1;
	uint64_t total = 0;
	for (int i = 0; i < threads; i++) {
		pthread_join(t[i], NULL);
		total += units[i];
	}
	printf("ops/s: %.0f\n", total / (now() - start));
	return 0;
}
