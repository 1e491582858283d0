/* A shared library Python drives through ctypes (launch.py): Level Zero launches whose stacks
 * run through the interpreter, so the agent's launch stacks must show the Python functions and
 * lines that called pylaunch_launch().
 *   cc -O1 -g -fno-omit-frame-pointer -fno-inline -shared -fPIC -I. pylaunch.c -o libpylaunch.so -lze_loader */
#define _GNU_SOURCE
#include "common.h"

#include <pthread.h>

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

struct native_launch {
	const char *thread_name, *kernel;
	uint32_t groups;
};

static void *native_thread(void *arg)
{
	struct native_launch *l = arg;
	pthread_setname_np(pthread_self(), l->thread_name);
	pylaunch_launch(l->kernel, l->groups);
	return NULL;
}

/* Launches `kernel` from a new native thread named `thread_name` (no Python frame runs on it)
 * and waits for it, the way PyTorch's autograd engine threads (pt_autograd_N) launch the
 * kernels of a backward() while the calling Python thread waits inside the engine. */
void pylaunch_on_native_thread(const char *thread_name, const char *kernel, uint32_t groups)
{
	struct native_launch l = {thread_name, kernel, groups};
	pthread_t t;
	if (pthread_create(&t, NULL, native_thread, &l) != 0)
		abort();
	pthread_join(t, NULL);
}

void pylaunch_finish(void)
{
	CHECK(zeCommandListDestroy(list));
	CHECK(zeContextDestroy(z.context));
}
