/* Launch-bound microbenchmark: N appends of one kernel to an immediate list (plus a host
 * synchronisation every 1000), timed around the loop; prints `ns_per_launch <value>`.
 * Usage: launch_bench N */
#include "common.h"
#include <time.h>

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

__attribute__((noinline)) void bench_launch(ze_command_list_handle_t l, ze_kernel_handle_t k)
{
	ze_group_count_t g = {1, 1, 1};
	CHECK(zeCommandListAppendLaunchKernel(l, k, &g, NULL, 0, NULL));
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100000;
	struct ze z = ze_setup();
	ze_command_list_handle_t l = ze_immediate(&z, z.device);
	ze_kernel_handle_t k = ze_kernel(&z, "k_empty", 1);
	bench_launch(l, k); /* warm-up: pools, first stack */
	double t0 = now_ns();
	for (long i = 0; i < n; i++)
		bench_launch(l, k);
	double t1 = now_ns();
	printf("ns_per_launch %.1f\n", (t1 - t0) / n);
	return 0;
}
