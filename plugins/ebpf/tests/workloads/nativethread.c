/* A thread that never runs Python, for tests/workloads/python/calls.py's "mixed" mode (loaded with ctypes): it spins in
 * C for the seconds given, with no Python thread state, so its samples have native frames only.
 * Build: cc -O1 -fno-omit-frame-pointer -g -shared -fPIC nativethread.c -o libnativethread.so -pthread */
#include <pthread.h>
#include <time.h>

#include "spin.h"

static pthread_t thread;
static double seconds;
static volatile unsigned long sink;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void native_spin(void)
{
	double end = now() + seconds;

	while (now() < end)
		sink = spin(sink, 1000000);
}

static void *native_main(void *arg)
{
	(void)arg;
	native_spin();
	return 0;
}

int native_thread_start(double s)
{
	seconds = s;
	return pthread_create(&thread, 0, native_main, 0);
}

int native_thread_join(void)
{
	return pthread_join(thread, 0);
}
