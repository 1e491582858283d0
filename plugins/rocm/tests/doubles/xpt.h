/*
 * TEST DOUBLE interface. The fake HIP runtime (fake_hip.c) drives a tracing-library test double
 * (rocprofiler_sdk_double.c or roctracer_double.c) through these functions, the way the real
 * HIP runtime drives the real libraries through their intercept tables. Nothing here is AMD's
 * API: it only exists between the test doubles of plugins/rocm/tests/doubles.
 *
 * Scripted facts, the same for both doubles: one CPU agent (handle 1) and one GPU agent
 * (handle 2, "gfx942"); device work starts at the CLOCK_BOOTTIME (SDK) or CLOCK_MONOTONIC
 * (roctracer, like ROCr's system clock) reading at its launch and lasts the duration the fake
 * runtime scripts; every record of a call is delivered before that call's correlation id is
 * retired.
 */
#ifndef XPUPROF_TEST_DOUBLE_XPT_H
#define XPUPROF_TEST_DOUBLE_XPT_H

#include <stdint.h>

#define XPT_CPU_AGENT 1
#define XPT_GPU_AGENT 2

/* Copy directions (the SDK's memory copy operations). */
#define XPT_COPY_H2D 2
#define XPT_COPY_D2H 3
#define XPT_COPY_D2D 4

/* The runtime initialises: tracing libraries find and start their tool. */
void xpt_init(void);
/* A kernel symbol the runtime registered (code-object load). */
void xpt_kernel_symbol(uint64_t kernel_id, const char* name, uint32_t lds, uint32_t scratch,
                       uint32_t sgprs, uint32_t vgprs);
/* API entry/exit; returns the call's correlation id. */
uint64_t xpt_api_enter(const char* api);
void xpt_api_exit(uint64_t corr, int result);
/* The call runs on HIP stream `stream` (0: the null stream). */
void xpt_stream(uint64_t corr, uint64_t stream);
/* Device work of call `corr`. */
void xpt_kernel(uint64_t corr, uint64_t kernel_id, const char* name, uint64_t duration_ns,
                const uint32_t grid_items[3], const uint32_t block[3], uint64_t queue);
void xpt_copy(uint64_t corr, int direction, uint64_t bytes, uint64_t duration_ns, uint64_t queue);
void xpt_alloc(uint64_t corr, int free, uint64_t address, uint64_t bytes);
void xpt_scratch(uint64_t corr, uint64_t bytes, uint64_t duration_ns, uint64_t queue);
/* Every record of `corr` was produced: the id retires. */
void xpt_retire(uint64_t corr);
/* roctx: 0 mark, 1 push, 2 pop. */
void xpt_marker(int op, const char* message);

#endif
