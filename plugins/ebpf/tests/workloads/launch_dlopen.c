/* Loads the test launch library with dlopen (as PyTorch loads its own libcudart), waits the
 * given milliseconds, then calls its launch-like API 4 times from dl_path().
 * Usage: launch_dlopen /path/liblaunchtest.so WAIT_MS
 * Build: cc -O1 -fno-omit-frame-pointer -g launch_dlopen.c -o launch_dlopen -ldl */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef int (*launch_fn)(int);

__attribute__((noinline)) void dl_path(launch_fn launch, int i)
{
	launch(i);
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	void *lib = dlopen(argv[1], RTLD_NOW);
	if (!lib) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	launch_fn launch = (launch_fn)dlsym(lib, "testLaunchKernel");
	long ms = atol(argv[2]);
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
	for (int i = 0; i < 4; i++)
		dl_path(launch, i);
	return 0;
}
