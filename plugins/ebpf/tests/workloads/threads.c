/* Two worker threads burning CPU in their own functions (worker_a, worker_b) for the number
 * of seconds given (default 1) while the main thread waits for them.
 * Build: cc -O1 -fno-omit-frame-pointer -g threads.c -o threads -pthread */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

static double seconds = 1.0;
static volatile unsigned long sink;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void spin_until(double end)
{
	while (now() < end)
		for (unsigned long i = 0; i < 100000; i++)
			sink += i;
}

__attribute__((noinline)) void *worker_a(void *arg)
{
	spin_until(*(double *)arg);
	return NULL;
}

__attribute__((noinline)) void *worker_b(void *arg)
{
	spin_until(*(double *)arg);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t a, b;
	double end;

	if (argc > 1)
		seconds = atof(argv[1]);
	end = now() + seconds;
	pthread_create(&a, NULL, worker_a, &end);
	pthread_create(&b, NULL, worker_b, &end);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	return 0;
}
