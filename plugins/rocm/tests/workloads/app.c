/* A HIP program for the rocm tests (run on the test-double runtime of plugins/rocm/tests/doubles):
 *   app all    allocations, copies both ways, kernels from two threads on two call paths, a
 *              three-node graph launched twice, a kernel with scratch, roctx markers
 *   app drops  ten kernels in a row (the drop test caps the SDK double's buffer)
 * Built with frame pointers and without inlining, so the launching functions are on the
 * launch stacks the tests assert:
 *   cc -O1 -g -fno-omit-frame-pointer -fno-inline app.c -o app -lamdhip64 -lpthread */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hip_subset.h"

#define CHECK(call)                                                                  \
    do {                                                                             \
        hipError_t e_ = (call);                                                      \
        if (e_ != 0) {                                                               \
            fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, #call, e_); \
            exit(2);                                                                 \
        }                                                                            \
    } while (0)

static const dim3 GRID = {64, 1, 1}, BLOCK = {256, 1, 1};
static hipStream_t stream;

static void launch_saxpy(void) { CHECK(hipLaunchKernel("saxpy", GRID, BLOCK, NULL, 0, stream)); }
static void launch_reduce(void) { CHECK(hipLaunchKernel("reduce", GRID, BLOCK, NULL, 0, stream)); }
static void launch_spill(void) { CHECK(hipLaunchKernel("spill", GRID, BLOCK, NULL, 0, stream)); }

static void* worker(void* arg)
{
    if ((uintptr_t)arg == 0) {
        for (int i = 0; i < 3; i++)
            launch_saxpy();
    } else {
        for (int i = 0; i < 2; i++)
            launch_reduce();
    }
    return NULL;
}

static void run_workers(void)
{
    pthread_t t[2];
    for (uintptr_t i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, worker, (void*)i);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
}

static void copy_in(void* dev, const void* host, size_t n) { CHECK(hipMemcpy(dev, host, n, hipMemcpyHostToDevice)); }
static void copy_out(void* host, const void* dev, size_t n) { CHECK(hipMemcpy(host, dev, n, hipMemcpyDeviceToHost)); }

static hipGraphExec_t build_graph(void)
{
    hipGraph_t g;
    CHECK(hipGraphCreate(&g, 0));
    const char* names[3] = {"graph_a", "graph_b", "graph_c"};
    hipGraphNode_t prev = NULL;
    for (int i = 0; i < 3; i++) {
        hipKernelNodeParams p;
        memset(&p, 0, sizeof p);
        p.func = (void*)names[i];
        p.gridDim = GRID;
        p.blockDim = BLOCK;
        hipGraphNode_t node;
        CHECK(hipGraphAddKernelNode(&node, g, prev ? &prev : NULL, prev ? 1 : 0, &p));
        prev = node;
    }
    hipGraphExec_t e;
    CHECK(hipGraphInstantiate(&e, g, NULL, NULL, 0));
    return e;
}

static void launch_graph(hipGraphExec_t e) { CHECK(hipGraphLaunch(e, stream)); }

static void run_all(void)
{
    size_t in = 1 << 20, out = 256 << 10;
    char* host = calloc(1, in);
    void *a, *b;
    CHECK(hipMalloc(&a, in));
    CHECK(hipMalloc(&b, out));
    CHECK(hipStreamCreate(&stream));
    roctxRangePushA("phase");
    copy_in(a, host, in);
    run_workers();
    hipGraphExec_t e = build_graph();
    launch_graph(e);
    launch_graph(e);
    roctxMarkA("checkpoint");
    launch_spill();
    copy_out(host, b, out);
    roctxRangePop();
    CHECK(hipDeviceSynchronize());
    CHECK(hipFree(a));
    CHECK(hipFree(b));
    free(host);
}

static void launch_many(void)
{
    for (int i = 0; i < 10; i++)
        launch_saxpy();
}

int main(int argc, char** argv)
{
    const char* mode = argc > 1 ? argv[1] : "all";
    if (strcmp(mode, "all") == 0)
        run_all();
    else if (strcmp(mode, "drops") == 0)
        launch_many();
    else {
        fprintf(stderr, "usage: app all|drops\n");
        return 2;
    }
    return 0;
}
