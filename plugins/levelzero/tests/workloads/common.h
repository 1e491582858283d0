/* Shared helpers of the Level Zero workloads: initialisation, a kernel by name, error checks.
 * Every workload is built with frame pointers and without inlining so its launching functions
 * are on the launch stacks the tests assert:
 *   cc -O1 -g -fno-omit-frame-pointer -fno-inline -I. X.c -o X -lze_loader -lpthread -ldl */
#ifndef XPUPROF_ZE_WORKLOAD_COMMON_H
#define XPUPROF_ZE_WORKLOAD_COMMON_H

#include <level_zero/ze_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                                        \
	do {                                                                               \
		ze_result_t r_ = (call);                                                   \
		if (r_ != ZE_RESULT_SUCCESS) {                                             \
			fprintf(stderr, "%s:%d: %s failed: 0x%x\n", __FILE__, __LINE__, #call, \
				(unsigned)r_);                                             \
			exit(2);                                                           \
		}                                                                          \
	} while (0)

struct ze {
	ze_driver_handle_t driver;
	ze_device_handle_t device;
	ze_context_handle_t context;
	ze_module_handle_t module;
};

__attribute__((unused)) static struct ze ze_setup(void)
{
	struct ze z;
	uint32_t n = 1;
	CHECK(zeInit(ZE_INIT_FLAG_GPU_ONLY));
	CHECK(zeDriverGet(&n, &z.driver));
	n = 1;
	CHECK(zeDeviceGet(z.driver, &n, &z.device));
	ze_context_desc_t cd = {ZE_STRUCTURE_TYPE_CONTEXT_DESC, NULL, 0};
	CHECK(zeContextCreate(z.driver, &cd, &z.context));
	static const uint8_t spirv[4] = {0x03, 0x02, 0x23, 0x07};
	ze_module_desc_t md = {ZE_STRUCTURE_TYPE_MODULE_DESC, NULL, ZE_MODULE_FORMAT_IL_SPIRV,
			       sizeof spirv, spirv, "", NULL};
	CHECK(zeModuleCreate(z.context, z.device, &md, &z.module, NULL));
	return z;
}

__attribute__((unused)) static ze_kernel_handle_t ze_kernel(struct ze *z, const char *name, uint32_t group)
{
	ze_kernel_handle_t k;
	ze_kernel_desc_t kd = {ZE_STRUCTURE_TYPE_KERNEL_DESC, NULL, 0, name};
	CHECK(zeKernelCreate(z->module, &kd, &k));
	CHECK(zeKernelSetGroupSize(k, group, 1, 1));
	return k;
}

__attribute__((unused)) static ze_command_list_handle_t ze_immediate(struct ze *z, ze_device_handle_t dev)
{
	ze_command_list_handle_t l;
	ze_command_queue_desc_t qd = {ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, NULL, 0, 0, 0,
				      ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS, ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
	CHECK(zeCommandListCreateImmediate(z->context, dev, &qd, &l));
	return l;
}

#endif
