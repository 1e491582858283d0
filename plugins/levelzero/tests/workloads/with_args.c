/* The launch variants newer than loader 1.8.12 (spec 1.13/1.14), reached the only way a program
 * on that loader can: zeDriverGetExtensionFunctionAddress. Immediate list: 2 launches of
 * `k_args` through zeCommandListAppendLaunchKernelWithArguments from launch_with_arguments(),
 * one `k_params` through zeCommandListAppendLaunchKernelWithParameters from
 * launch_with_parameters(). The headers lack both, so their types are declared here from the
 * specification. */
#include "common.h"

typedef struct {
	uint32_t groupSizeX, groupSizeY, groupSizeZ;
} group_size_t;

typedef ze_result_t (*with_arguments_t)(ze_command_list_handle_t, ze_kernel_handle_t, const ze_group_count_t,
					 const group_size_t, void **, const void *, ze_event_handle_t, uint32_t,
					 ze_event_handle_t *);
typedef ze_result_t (*with_parameters_t)(ze_command_list_handle_t, ze_kernel_handle_t, const ze_group_count_t *,
					  const void *, ze_event_handle_t, uint32_t, ze_event_handle_t *);

__attribute__((noinline)) void launch_with_arguments(with_arguments_t f, ze_command_list_handle_t l,
						     ze_kernel_handle_t k)
{
	ze_group_count_t g = {16, 1, 1};
	group_size_t s = {32, 1, 1};
	CHECK(f(l, k, g, s, NULL, NULL, NULL, 0, NULL));
}

__attribute__((noinline)) void launch_with_parameters(with_parameters_t f, ze_command_list_handle_t l,
						      ze_kernel_handle_t k)
{
	ze_group_count_t g = {2, 2, 1};
	CHECK(f(l, k, &g, NULL, NULL, 0, NULL));
}

int main(void)
{
	struct ze z = ze_setup();
	ze_command_list_handle_t l = ze_immediate(&z, z.device);
	void *args = NULL, *params = NULL;
	CHECK(zeDriverGetExtensionFunctionAddress(z.driver, "zeCommandListAppendLaunchKernelWithArguments", &args));
	CHECK(zeDriverGetExtensionFunctionAddress(z.driver, "zeCommandListAppendLaunchKernelWithParameters", &params));
	ze_kernel_handle_t ka = ze_kernel(&z, "k_args", 64);
	ze_kernel_handle_t kp = ze_kernel(&z, "k_params", 16);
	for (int i = 0; i < 2; i++)
		launch_with_arguments((with_arguments_t)args, l, ka);
	launch_with_parameters((with_parameters_t)params, l, kp);
	CHECK(zeCommandListDestroy(l));
	CHECK(zeContextDestroy(z.context));
	printf("with_args: ok\n");
	return 0;
}
