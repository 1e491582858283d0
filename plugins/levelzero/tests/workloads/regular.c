/* A regular command list recorded once in record_list() (two kernels) and executed N times
 * from run_step(). Usage: regular N [nosync]; with `nosync` the list is executed N times
 * without waiting in between (with the test driver's `complete=sync` the profiler cannot read
 * the earlier executions' timestamps before they are overwritten, and must count them lost). */
#include "common.h"

__attribute__((noinline)) void record_list(ze_command_list_handle_t l, ze_kernel_handle_t a,
					   ze_kernel_handle_t b)
{
	ze_group_count_t g = {16, 1, 1};
	CHECK(zeCommandListAppendLaunchKernel(l, a, &g, NULL, 0, NULL));
	CHECK(zeCommandListAppendLaunchKernel(l, b, &g, NULL, 0, NULL));
	CHECK(zeCommandListClose(l));
}

__attribute__((noinline)) void run_step(ze_command_queue_handle_t q, ze_command_list_handle_t l, int sync)
{
	CHECK(zeCommandQueueExecuteCommandLists(q, 1, &l, NULL));
	if (sync)
		CHECK(zeCommandQueueSynchronize(q, UINT64_MAX));
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 5;
	int sync = !(argc > 2 && strcmp(argv[2], "nosync") == 0);
	struct ze z = ze_setup();
	ze_command_queue_desc_t qd = {ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, NULL, 0, 0, 0,
				      ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS, ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
	ze_command_queue_handle_t q;
	CHECK(zeCommandQueueCreate(z.context, z.device, &qd, &q));
	ze_command_list_desc_t ld = {ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC, NULL, 0, 0};
	ze_command_list_handle_t l;
	CHECK(zeCommandListCreate(z.context, z.device, &ld, &l));
	record_list(l, ze_kernel(&z, "k_step_a", 64), ze_kernel(&z, "k_step_b", 64));
	for (int i = 0; i < n; i++)
		run_step(q, l, sync);
	CHECK(zeCommandQueueSynchronize(q, UINT64_MAX));
	CHECK(zeCommandListDestroy(l));
	CHECK(zeCommandQueueDestroy(q));
	printf("regular: ok\n");
	return 0;
}
