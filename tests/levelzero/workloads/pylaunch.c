/* A shared library Python drives through ctypes (launch.py): Level Zero launches whose stacks
 * run through the interpreter, so the agent's launch stacks must show the Python functions and
 * lines that called pylaunch_launch().
 *   cc -O1 -g -fno-omit-frame-pointer -fno-inline -shared -fPIC -I. pylaunch.c -o libpylaunch.so -lze_loader */
#include "common.h"

static struct ze z;
static ze_command_list_handle_t list;

int pylaunch_setup(void)
{
	z = ze_setup();
	list = ze_immediate(&z, z.device);
	return 0;
}

__attribute__((noinline)) void pylaunch_launch(const char *kernel, uint32_t groups)
{
	ze_kernel_handle_t k = ze_kernel(&z, kernel, 64);
	ze_group_count_t g = {groups, 1, 1};
	CHECK(zeCommandListAppendLaunchKernel(list, k, &g, NULL, 0, NULL));
	CHECK(zeKernelDestroy(k));
}

void pylaunch_finish(void)
{
	CHECK(zeCommandListDestroy(list));
	CHECK(zeContextDestroy(z.context));
}
