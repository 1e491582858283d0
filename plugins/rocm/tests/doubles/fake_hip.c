/*
 * TEST DOUBLE of libamdhip64.so: a small fake HIP runtime. It keeps no GPU: memory is host
 * memory, kernels do not run. What it does is what the real runtime does for a profiler: at its
 * first call it initialises the tracing library (built against the rocprofiler-sdk test double,
 * or against the roctracer test double with -DXPT_ROCTRACER, in which case it first loads the
 * HSA_TOOLS_LIB tools and calls their OnLoad, as ROCr does), registers its kernel symbols, and
 * reports every call (enter/exit, its stream) and the device work it causes, with scripted
 * durations:
 *
 *   kernel  duration  LDS   scratch  SGPRs VGPRs      copies: 1 ns per byte
 *   saxpy   2 ms      0     0        24    32         allocations: 1 us
 *   reduce  0.5 ms    4096  0        30    48         scratch: 10 us
 *   graph_a/b/c 0.25 ms each                           (grid in work-items = grid * block)
 *   spill   0.1 ms    0     1024     16    128
 *
 * A kernel is named by the string its "function address" points to (the workloads pass the
 * kernel's name), since no code object is loaded.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../workloads/hip_subset.h"
#include "xpt.h"

struct kernel {
    uint64_t id;
    const char* name;
    uint64_t duration_ns;
    uint32_t lds, scratch, sgprs, vgprs;
};

static const struct kernel kernels[] = {
    {1, "saxpy", 2000000, 0, 0, 24, 32},
    {2, "reduce", 500000, 4096, 0, 30, 48},
    {3, "graph_a", 250000, 0, 0, 8, 8},
    {4, "graph_b", 250000, 0, 0, 8, 8},
    {5, "graph_c", 250000, 0, 0, 8, 8},
    {6, "spill", 100000, 0, 1024, 16, 128},
};
#define NKERNELS (sizeof kernels / sizeof kernels[0])

struct ihipGraph {
    const struct kernel* nodes[16];
    dim3 grid[16], block[16];
    int n;
};

static pthread_once_t once = PTHREAD_ONCE_INIT;
static uint64_t streams;

#ifdef XPT_ROCTRACER
/* ROCr loads the libraries of HSA_TOOLS_LIB and calls their OnLoad. */
static void load_hsa_tools(void)
{
    const char* libs = getenv("HSA_TOOLS_LIB");
    if (!libs || !*libs)
        return;
    char* copy = strdup(libs);
    for (char *save = NULL, *p = strtok_r(copy, " ", &save); p; p = strtok_r(NULL, " ", &save)) {
        void* h = dlopen(p, RTLD_NOW);
        if (!h) {
            fprintf(stderr, "fake HIP (test double): cannot load %s: %s\n", p, dlerror());
            continue;
        }
        typedef int (*on_load_t)(void*, uint64_t, uint64_t, const char* const*);
        on_load_t f = (on_load_t)dlsym(h, "OnLoad");
        if (f)
            f(NULL, 0, 0, NULL);
    }
    free(copy);
}
#endif

static void init(void)
{
#ifdef XPT_ROCTRACER
    load_hsa_tools();
#endif
    xpt_init();
    for (size_t i = 0; i < NKERNELS; i++) {
        const struct kernel* k = &kernels[i];
        xpt_kernel_symbol(k->id, k->name, k->lds, k->scratch, k->sgprs, k->vgprs);
    }
}

static void ensure_init(void) { pthread_once(&once, init); }

static const struct kernel* kernel_named(const void* f)
{
    for (size_t i = 0; i < NKERNELS; i++)
        if (strcmp(kernels[i].name, (const char*)f) == 0)
            return &kernels[i];
    fprintf(stderr, "fake HIP (test double): unknown kernel %s\n", (const char*)f);
    abort();
}

static uint64_t stream_id(hipStream_t s) { return (uint64_t)(uintptr_t)s; }
static uint64_t queue_of(hipStream_t s) { return 100 + stream_id(s); }

static void dispatch(uint64_t corr, const struct kernel* k, dim3 grid, dim3 block, hipStream_t s)
{
    uint32_t items[3] = {grid.x * block.x, grid.y * block.y, grid.z * block.z};
    uint32_t b[3] = {block.x, block.y, block.z};
    if (k->scratch)
        xpt_scratch(corr, (uint64_t)k->scratch * items[0] * items[1] * items[2], 10000, queue_of(s));
    xpt_kernel(corr, k->id, k->name, k->duration_ns, items, b, queue_of(s));
}

hipError_t hipLaunchKernel(const void* f, dim3 grid, dim3 block, void** args, size_t shared, hipStream_t s)
{
    (void)args, (void)shared;
    ensure_init();
    const struct kernel* k = kernel_named(f);
    uint64_t corr = xpt_api_enter("hipLaunchKernel");
    xpt_stream(corr, stream_id(s));
    dispatch(corr, k, grid, block, s);
    xpt_api_exit(corr, 0);
    xpt_retire(corr);
    return 0;
}

hipError_t hipMemcpy(void* dst, const void* src, size_t bytes, int kind)
{
    ensure_init();
    uint64_t corr = xpt_api_enter("hipMemcpy");
    xpt_stream(corr, 0);
    memcpy(dst, src, bytes);
    int dir = kind == hipMemcpyHostToDevice ? XPT_COPY_H2D : kind == hipMemcpyDeviceToHost ? XPT_COPY_D2H : XPT_COPY_D2D;
    xpt_copy(corr, dir, bytes, bytes, queue_of(NULL));
    xpt_api_exit(corr, 0);
    xpt_retire(corr);
    return 0;
}

hipError_t hipMalloc(void** ptr, size_t size)
{
    ensure_init();
    uint64_t corr = xpt_api_enter("hipMalloc");
    *ptr = malloc(size);
    xpt_alloc(corr, 0, (uint64_t)(uintptr_t)*ptr, size);
    xpt_api_exit(corr, 0);
    xpt_retire(corr);
    return 0;
}

hipError_t hipFree(void* ptr)
{
    ensure_init();
    uint64_t corr = xpt_api_enter("hipFree");
    xpt_alloc(corr, 1, (uint64_t)(uintptr_t)ptr, 0);
    free(ptr);
    xpt_api_exit(corr, 0);
    xpt_retire(corr);
    return 0;
}

hipError_t hipStreamCreate(hipStream_t* s)
{
    ensure_init();
    uint64_t corr = xpt_api_enter("hipStreamCreate");
    *s = (hipStream_t)(uintptr_t)__atomic_add_fetch(&streams, 1, __ATOMIC_RELAXED);
    xpt_api_exit(corr, 0);
    return 0;
}

hipError_t hipDeviceSynchronize(void)
{
    ensure_init();
    uint64_t corr = xpt_api_enter("hipDeviceSynchronize");
    xpt_api_exit(corr, 0);
    return 0;
}

hipError_t hipGraphCreate(hipGraph_t* g, unsigned int flags)
{
    (void)flags;
    ensure_init();
    *g = calloc(1, sizeof **g);
    return 0;
}

hipError_t hipGraphAddKernelNode(hipGraphNode_t* node, hipGraph_t g, const hipGraphNode_t* deps, size_t ndeps,
                                 const hipKernelNodeParams* p)
{
    (void)deps, (void)ndeps;
    if (g->n == 16)
        return 1;
    g->nodes[g->n] = kernel_named(p->func);
    g->grid[g->n] = p->gridDim;
    g->block[g->n] = p->blockDim;
    *node = (hipGraphNode_t)(uintptr_t)(g->n + 1);
    g->n++;
    return 0;
}

hipError_t hipGraphInstantiate(hipGraphExec_t* e, hipGraph_t g, hipGraphNode_t* err, char* log, size_t n)
{
    (void)err, (void)log, (void)n;
    *e = (hipGraphExec_t)g;
    return 0;
}

hipError_t hipGraphLaunch(hipGraphExec_t e, hipStream_t s)
{
    ensure_init();
    struct ihipGraph* g = (struct ihipGraph*)e;
    uint64_t corr = xpt_api_enter("hipGraphLaunch");
    xpt_stream(corr, stream_id(s));
    for (int i = 0; i < g->n; i++)
        dispatch(corr, g->nodes[i], g->grid[i], g->block[i], s);
    xpt_api_exit(corr, 0);
    xpt_retire(corr);
    return 0;
}

void roctxMarkA(const char* message)
{
    ensure_init();
    xpt_marker(0, message);
}

int roctxRangePushA(const char* message)
{
    ensure_init();
    xpt_marker(1, message);
    return 0;
}

int roctxRangePop(void)
{
    ensure_init();
    xpt_marker(2, NULL);
    return 0;
}
