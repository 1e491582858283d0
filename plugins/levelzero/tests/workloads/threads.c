/* Two threads, each with its own immediate list on its own sub-device (or the device when it
 * has none), launching `k_thread_a` from thread_a() and `k_thread_b` from thread_b(). */
#include "common.h"
#include <pthread.h>

static struct ze z;
static ze_device_handle_t tiles[2];

__attribute__((noinline)) void thread_launch(int which, const char *name)
{
	ze_command_list_handle_t l = ze_immediate(&z, tiles[which]);
	ze_kernel_handle_t k = ze_kernel(&z, name, 32);
	ze_group_count_t g = {8, 1, 1};
	for (int i = 0; i < 2; i++)
		CHECK(zeCommandListAppendLaunchKernel(l, k, &g, NULL, 0, NULL));
	CHECK(zeCommandListDestroy(l));
}

__attribute__((noinline)) void *thread_a(void *arg)
{
	(void)arg;
	thread_launch(0, "k_thread_a");
	return NULL;
}

__attribute__((noinline)) void *thread_b(void *arg)
{
	(void)arg;
	thread_launch(1, "k_thread_b");
	return NULL;
}

int main(void)
{
	z = ze_setup();
	uint32_t n = 2;
	CHECK(zeDeviceGetSubDevices(z.device, &n, tiles));
	for (uint32_t i = n; i < 2; i++)
		tiles[i] = z.device;
	pthread_t a, b;
	pthread_create(&a, NULL, thread_a, NULL);
	pthread_create(&b, NULL, thread_b, NULL);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	printf("threads: ok (%u sub-devices)\n", n);
	return 0;
}
