/* CPU-bound workload with a known profile: burn_three() does three times the work of
 * burn_one(), both called from main's loop, for the number of seconds given (default 1).
 * `burn -n ROUNDS [SCALE]` instead runs a fixed number of rounds and writes the loop's elapsed
 * and CPU nanoseconds to the file named by $WORKLOAD_RESULT (for the overhead benchmark).
 * SCALE (default 1) multiplies the work of every call: sampling tests use long calls (tens of
 * milliseconds) so a sampling period cannot alias with a round and favour one function.
 * Build: cc -O1 -fno-omit-frame-pointer -g burn.c -o burn */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "spin.h"

static volatile unsigned long sink;
static unsigned long scale = 1;


__attribute__((noinline)) void burn_three(void)
{
	sink = spin(sink, 3000000 * scale);
}

__attribute__((noinline)) void burn_one(void)
{
	sink = spin(sink, 1000000 * scale);
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
	if (argc > 2 && strcmp(argv[1], "-n") == 0) {
		if (argc > 3 && atol(argv[3]) > 0)
			scale = (unsigned long)atol(argv[3]);
		return fixed_rounds(atol(argv[2]));
	}
	double seconds = argc > 1 ? atof(argv[1]) : 1.0;
	double end = now() + seconds;

	while (now() < end) {
		burn_three();
		burn_one();
	}
	return 0;
}
