/* The CPU workloads' unit of work: a register-only dependency chain (multiply-add), whose time is
 * proportional to n on every CPU. A loop over a volatile memory location is not: on an AMD EPYC
 * the 3x loop took only 1.3-1.9x the time of the 1x loop, so a sampling test saw 6:1 instead of
 * 3:1. */
#ifndef XPUPROF_WORKLOAD_SPIN_H
#define XPUPROF_WORKLOAD_SPIN_H

static inline __attribute__((always_inline)) unsigned long spin(unsigned long x, unsigned long n)
{
	for (unsigned long i = 0; i < n; i++) {
		x = x * 6364136223846793005UL + 1442695040888963407UL;
		__asm__ volatile("" : "+r"(x));
	}
	return x;
}

#endif
