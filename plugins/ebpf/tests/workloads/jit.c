/* A tiny JIT: copies a function into anonymous executable memory, names it in /tmp/perf-PID.map
 * (the perf JIT interface) and runs burn_in_c through it for SECONDS (default 1), so samples
 * read main -> jit_burn_loop -> burn_in_c. The JIT code keeps a frame pointer (as perf-map JITs
 * such as CPython's trampolines do): the unwinder has no unwind tables for it and steps out of it
 * by its frame pointer. Sleeps 1 s before exiting so the host can still read its maps.
 * Build: cc -O1 -fno-omit-frame-pointer -g jit.c -o jit */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

__attribute__((noinline)) void burn_in_c(void)
{
	unsigned long x = sink;

	for (unsigned long i = 0; i < 5000000; i++) {
		x = x * 6364136223846793005UL + 1442695040888963407UL;
		__asm__ volatile("" : "+r"(x));
	}
	sink = x;
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
	/* push rbp; mov rbp, rsp; movabs rax, burn_in_c; call rax; pop rbp; ret */
	unsigned char code[] = { 0x55, 0x48, 0x89, 0xe5, 0x48, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xd0, 0x5d, 0xc3 };
	uint64_t target = (uint64_t)(uintptr_t)burn_in_c;
	char path[64];
	FILE *map;
	void *mem = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (mem == MAP_FAILED)
		return 2;
	memcpy(code + 6, &target, sizeof(target));
	memcpy(mem, code, sizeof(code));
	if (mprotect(mem, 4096, PROT_READ | PROT_EXEC))
		return 2;
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", getpid());
	map = fopen(path, "w");
	if (!map)
		return 2;
	fprintf(map, "%lx %zx jit_burn_loop\n", (unsigned long)(uintptr_t)mem, sizeof(code));
	fclose(map);
	void (*jitted)(void) = (void (*)(void))mem;
	double end = now() + seconds;
	while (now() < end)
		jitted();
	sleep(1);
	unlink(path);
	return 0;
}
