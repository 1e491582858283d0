/* Test shared library for launch-site uprobes: a launch-like API and the correlation
 * trampoline every xpuprof agent exports (see sdk/src/trampoline.rs).
 * Build: cc -O1 -fno-omit-frame-pointer -g -shared -fPIC launchlib.c -o liblaunchtest.so */
#include <stdint.h>

static volatile uint64_t launches;

__attribute__((noinline, visibility("default"))) int testLaunchKernel(int arg)
{
	launches += (uint64_t)arg;
	return 0;
}

__attribute__((noinline, visibility("default"))) void xpuprof_agent_launch(uint32_t backend, uint64_t correlation_id)
{
	__asm__ volatile("" : : "r"(backend), "r"(correlation_id) : "memory");
}
