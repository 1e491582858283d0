/* Calls the test library's launch-like API N times in a tight loop and writes the loop's
 * elapsed and CPU nanoseconds to the file named by $WORKLOAD_RESULT (uprobe cost benchmark).
 * Usage: launch_loop N
 * Build: cc -O1 -fno-omit-frame-pointer -g launch_loop.c -o launch_loop -L. -llaunchtest -Wl,-rpath,'$ORIGIN' */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int testLaunchKernel(int arg);

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100000;
	const char *out = getenv("WORKLOAD_RESULT");
	struct timespec a, b, ca, cb;

	clock_gettime(CLOCK_MONOTONIC, &a);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ca);
	for (long i = 0; i < n; i++)
		testLaunchKernel((int)i);
	clock_gettime(CLOCK_MONOTONIC, &b);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cb);
	if (out) {
		FILE *f = fopen(out, "w");
		if (!f)
			return 1;
		fprintf(f, "%.0f %.0f\n", (b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec),
			(cb.tv_sec - ca.tv_sec) * 1e9 + (cb.tv_nsec - ca.tv_nsec));
		fclose(f);
	}
	return 0;
}
