/* pingpong: two threads pass a byte back and forth over two pipes, so each
 * round trip is two context switches. Prints round trips per second; used
 * by benchmarks/overhead (a workload whose observer cost grows with context
 * switches). Usage: pingpong [seconds] */
#include "common.h"
static int ab[2], ba[2];
static volatile int stop;
static void *echo(void *a)
{
	char c;
	while (read(ab[0], &c, 1) == 1 && !stop)
		if (write(ba[1], &c, 1) != 1)
			break;
	return a;
}
int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : RUN_SECONDS;
	if (pipe(ab) || pipe(ba))
		die("pipe");
	pthread_t t;
	pthread_create(&t, NULL, echo, NULL);
	char c = 'x';
	long n = 0;
	double start = now(), end = start + secs;
	while (now() < end) {
		for (int i = 0; i < 100; i++) {
			if (write(ab[1], &c, 1) != 1 || read(ba[0], &c, 1) != 1)
				die("pingpong");
		}
		n += 100;
	}
	double el = now() - start;
	stop = 1;
	write(ab[1], &c, 1);
	pthread_join(t, NULL);
	printf("%.1f round trips/s\n", n / el);
	return 0;
}
