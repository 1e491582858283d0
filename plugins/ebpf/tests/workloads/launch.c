/* Calls the test library's launch-like API from two known call paths (path_a 3 times,
 * path_b 2 times) and the correlation trampoline with known ids (backend 0x1234, ids 1001,
 * 1002, 1003), after waiting the number of milliseconds given (default 0).
 * Build: cc -O1 -fno-omit-frame-pointer -g launch.c -o launch -L. -llaunchtest -Wl,-rpath,'$ORIGIN' */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

int testLaunchKernel(int arg);
void xpuprof_agent_launch(uint32_t backend, uint64_t correlation_id);

__attribute__((noinline)) void path_a(int i)
{
	testLaunchKernel(i);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void path_b(int i)
{
	testLaunchKernel(i * 2);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void agent_api_entry(uint64_t id)
{
	xpuprof_agent_launch(0x1234, id);
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	long wait_ms = argc > 1 ? atol(argv[1]) : 0;
	struct timespec ts = {wait_ms / 1000, (wait_ms % 1000) * 1000000L};

	if (wait_ms)
		nanosleep(&ts, NULL);
	for (int i = 0; i < 3; i++)
		path_a(i);
	for (int i = 0; i < 2; i++)
		path_b(i);
	for (uint64_t id = 1001; id <= 1003; id++)
		agent_api_entry(id);
	return 0;
}
