/* CPU-bound workload with a known profile: burn_three() does three times the work of
 * burn_one(), both called from main's loop, for the number of seconds given (default 1).
 * Build: cc -O1 -fno-omit-frame-pointer -g burn.c -o burn */
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

__attribute__((noinline)) void burn_three(void)
{
	for (unsigned long i = 0; i < 3000000; i++)
		sink += i;
}

__attribute__((noinline)) void burn_one(void)
{
	for (unsigned long i = 0; i < 1000000; i++)
		sink += i;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 1.0;
	double end = now() + seconds;

	while (now() < end) {
		burn_three();
		burn_one();
	}
	return 0;
}
