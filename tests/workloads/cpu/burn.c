/* CPU-bound workload with a known profile: burn_three() does three times the work of
 * burn_one(), both called from main's loop, for the number of seconds given (default 1).
 * `burn -n ROUNDS` instead runs a fixed number of rounds and writes the loop's elapsed
 * and CPU nanoseconds to the file named by $WORKLOAD_RESULT (for the overhead benchmark).
 * Build: cc -O1 -fno-omit-frame-pointer -g burn.c -o burn */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

static double cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int fixed_rounds(long rounds)
{
	double start = now(), cpu_start = cpu_now();
	const char *out = getenv("WORKLOAD_RESULT");

	for (long i = 0; i < rounds; i++) {
		burn_three();
		burn_one();
	}
	if (out) {
		FILE *f = fopen(out, "w");
		if (!f)
			return 1;
		fprintf(f, "%.0f %.0f\n", (now() - start) * 1e9, (cpu_now() - cpu_start) * 1e9);
		fclose(f);
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 2 && strcmp(argv[1], "-n") == 0)
		return fixed_rounds(atol(argv[2]));
	double seconds = argc > 1 ? atof(argv[1]) : 1.0;
	double end = now() + seconds;

	while (now() < end) {
		burn_three();
		burn_one();
	}
	return 0;
}
