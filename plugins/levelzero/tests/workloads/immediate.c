/* Linked app with an immediate command list: 3 launches of `k_small` from launch_small(), one
 * `k_big` from launch_big(), a copy host->device and device->host from copy_both_ways(), a fill,
 * and a launch that signals an event of the application's own pool without timestamps
 * (launch_with_app_event(), which then waits for that event: the profiler must keep
 * signalling it). */
#include "common.h"

__attribute__((noinline)) void launch_small(ze_command_list_handle_t l, ze_kernel_handle_t k)
{
	ze_group_count_t g = {4, 1, 1};
	CHECK(zeCommandListAppendLaunchKernel(l, k, &g, NULL, 0, NULL));
}

__attribute__((noinline)) void launch_big(ze_command_list_handle_t l, ze_kernel_handle_t k)
{
	ze_group_count_t g = {256, 2, 1};
	CHECK(zeCommandListAppendLaunchKernel(l, k, &g, NULL, 0, NULL));
}

__attribute__((noinline)) void copy_both_ways(struct ze *z, ze_command_list_handle_t l)
{
	ze_device_mem_alloc_desc_t dd = {ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, NULL, 0, 0};
	ze_host_mem_alloc_desc_t hd = {ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC, NULL, 0};
	void *dev, *host;
	CHECK(zeMemAllocDevice(z->context, &dd, 4096, 64, z->device, &dev));
	CHECK(zeMemAllocHost(z->context, &hd, 4096, 64, &host));
	memset(host, 7, 4096);
	CHECK(zeCommandListAppendMemoryCopy(l, dev, host, 4096, NULL, 0, NULL));
	int zero = 0;
	CHECK(zeCommandListAppendMemoryFill(l, host, &zero, sizeof zero, 1024, NULL, 0, NULL));
	CHECK(zeCommandListAppendMemoryCopy(l, host, dev, 2048, NULL, 0, NULL));
	if (((unsigned char *)host)[2047] != 7) {
		fprintf(stderr, "copy did not copy\n");
		exit(3);
	}
	CHECK(zeMemFree(z->context, dev));
	CHECK(zeMemFree(z->context, host));
}

__attribute__((noinline)) void launch_with_app_event(struct ze *z, ze_command_list_handle_t l,
						     ze_kernel_handle_t k)
{
	ze_event_pool_desc_t pd = {ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, NULL, ZE_EVENT_POOL_FLAG_HOST_VISIBLE, 1};
	ze_event_pool_handle_t pool;
	ze_event_handle_t ev;
	CHECK(zeEventPoolCreate(z->context, &pd, 1, &z->device, &pool));
	ze_event_desc_t ed = {ZE_STRUCTURE_TYPE_EVENT_DESC, NULL, 0, 0, ZE_EVENT_SCOPE_FLAG_HOST};
	CHECK(zeEventCreate(pool, &ed, &ev));
	ze_group_count_t g = {8, 1, 1};
	CHECK(zeCommandListAppendLaunchKernel(l, k, &g, ev, 0, NULL));
	CHECK(zeEventHostSynchronize(ev, UINT64_MAX));
	CHECK(zeEventDestroy(ev));
	CHECK(zeEventPoolDestroy(pool));
}

int main(void)
{
	struct ze z = ze_setup();
	ze_command_list_handle_t l = ze_immediate(&z, z.device);
	ze_kernel_handle_t small = ze_kernel(&z, "k_small", 64);
	ze_kernel_handle_t big = ze_kernel(&z, "k_big", 128);
	ze_kernel_handle_t evk = ze_kernel(&z, "k_event", 32);
	for (int i = 0; i < 3; i++)
		launch_small(l, small);
	launch_big(l, big);
	copy_both_ways(&z, l);
	launch_with_app_event(&z, l, evk);
	CHECK(zeCommandListDestroy(l));
	CHECK(zeContextDestroy(z.context));
	printf("immediate: ok\n");
	return 0;
}
