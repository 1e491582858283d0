/* The Unified Runtime pattern: nothing links the loader; it is dlopen'ed and every entry point
 * is found with dlsym, then one immediate launch of `k_dl` from dl_launch(). */
#include <dlfcn.h>
#include <level_zero/ze_api.h>
#include <stdio.h>
#include <stdlib.h>

#define SYM(name) name##_t name##_p = (name##_t)load(h, #name)
#define CHECK(call)                                                            \
	do {                                                                   \
		if ((call) != ZE_RESULT_SUCCESS) {                             \
			fprintf(stderr, "%s failed\n", #call);                 \
			exit(2);                                               \
		}                                                              \
	} while (0)

typedef ze_result_t (*zeInit_t)(ze_init_flags_t);
typedef ze_result_t (*zeDriverGet_t)(uint32_t *, ze_driver_handle_t *);
typedef ze_result_t (*zeDeviceGet_t)(ze_driver_handle_t, uint32_t *, ze_device_handle_t *);
typedef ze_result_t (*zeContextCreate_t)(ze_driver_handle_t, const ze_context_desc_t *, ze_context_handle_t *);
typedef ze_result_t (*zeModuleCreate_t)(ze_context_handle_t, ze_device_handle_t, const ze_module_desc_t *,
					ze_module_handle_t *, ze_module_build_log_handle_t *);
typedef ze_result_t (*zeKernelCreate_t)(ze_module_handle_t, const ze_kernel_desc_t *, ze_kernel_handle_t *);
typedef ze_result_t (*zeCommandListCreateImmediate_t)(ze_context_handle_t, ze_device_handle_t,
						      const ze_command_queue_desc_t *, ze_command_list_handle_t *);
typedef ze_result_t (*zeCommandListAppendLaunchKernel_t)(ze_command_list_handle_t, ze_kernel_handle_t,
							 const ze_group_count_t *, ze_event_handle_t, uint32_t,
							 ze_event_handle_t *);

static void *load(void *h, const char *name)
{
	void *p = dlsym(h, name);
	if (!p) {
		fprintf(stderr, "dlsym %s: %s\n", name, dlerror());
		exit(2);
	}
	return p;
}

__attribute__((noinline)) void dl_launch(zeCommandListAppendLaunchKernel_t append, ze_command_list_handle_t l,
					 ze_kernel_handle_t k)
{
	ze_group_count_t g = {2, 1, 1};
	CHECK(append(l, k, &g, NULL, 0, NULL));
}

int main(void)
{
	void *h = dlopen("libze_loader.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "dlopen libze_loader.so.1: %s\n", dlerror());
		return 2;
	}
	SYM(zeInit);
	SYM(zeDriverGet);
	SYM(zeDeviceGet);
	SYM(zeContextCreate);
	SYM(zeModuleCreate);
	SYM(zeKernelCreate);
	SYM(zeCommandListCreateImmediate);
	SYM(zeCommandListAppendLaunchKernel);
	ze_driver_handle_t drv;
	ze_device_handle_t dev;
	ze_context_handle_t ctx;
	ze_module_handle_t mod;
	ze_kernel_handle_t k;
	ze_command_list_handle_t l;
	uint32_t n = 1;
	CHECK(zeInit_p(ZE_INIT_FLAG_GPU_ONLY));
	CHECK(zeDriverGet_p(&n, &drv));
	CHECK(zeDeviceGet_p(drv, &n, &dev));
	ze_context_desc_t cd = {ZE_STRUCTURE_TYPE_CONTEXT_DESC, NULL, 0};
	CHECK(zeContextCreate_p(drv, &cd, &ctx));
	static const uint8_t spirv[4] = {0x03, 0x02, 0x23, 0x07};
	ze_module_desc_t md = {ZE_STRUCTURE_TYPE_MODULE_DESC, NULL, ZE_MODULE_FORMAT_IL_SPIRV, sizeof spirv, spirv, "",
			       NULL};
	CHECK(zeModuleCreate_p(ctx, dev, &md, &mod, NULL));
	ze_kernel_desc_t kd = {ZE_STRUCTURE_TYPE_KERNEL_DESC, NULL, 0, "k_dl"};
	CHECK(zeKernelCreate_p(mod, &kd, &k));
	ze_command_queue_desc_t qd = {ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, NULL, 0, 0, 0,
				      ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS, ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
	CHECK(zeCommandListCreateImmediate_p(ctx, dev, &qd, &l));
	dl_launch(zeCommandListAppendLaunchKernel_p, l, k);
	printf("dlopen: ok\n");
	return 0;
}
