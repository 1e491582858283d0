/* The subset of the HIP runtime API the rocm workloads call, declared with HIP's own ABI
 * (hipError_t is an int, dim3 three unsigned ints, handles pointers) so the same programs link
 * against Debian's real libamdhip64 and against the test-double runtime of plugins/rocm/tests/doubles. */
#ifndef XPUPROF_HIP_SUBSET_H
#define XPUPROF_HIP_SUBSET_H

#include <stddef.h>
#include <stdint.h>

typedef int hipError_t;
typedef struct dim3 {
    uint32_t x, y, z;
} dim3;
typedef struct ihipStream_t* hipStream_t;
typedef struct ihipGraph* hipGraph_t;
typedef struct hipGraphNode* hipGraphNode_t;
typedef struct hipGraphExec* hipGraphExec_t;

typedef struct hipKernelNodeParams {
    dim3 blockDim;
    void** extra;
    void* func;
    dim3 gridDim;
    void** kernelParams;
    unsigned int sharedMemBytes;
} hipKernelNodeParams;

enum { hipMemcpyHostToHost = 0, hipMemcpyHostToDevice = 1, hipMemcpyDeviceToHost = 2, hipMemcpyDeviceToDevice = 3 };

hipError_t hipMalloc(void** ptr, size_t size);
hipError_t hipFree(void* ptr);
hipError_t hipMemcpy(void* dst, const void* src, size_t bytes, int kind);
hipError_t hipLaunchKernel(const void* function_address, dim3 grid, dim3 block, void** args, size_t shared,
                           hipStream_t stream);
hipError_t hipStreamCreate(hipStream_t* stream);
hipError_t hipDeviceSynchronize(void);
hipError_t hipGraphCreate(hipGraph_t* graph, unsigned int flags);
hipError_t hipGraphAddKernelNode(hipGraphNode_t* node, hipGraph_t graph, const hipGraphNode_t* deps, size_t ndeps,
                                 const hipKernelNodeParams* params);
hipError_t hipGraphInstantiate(hipGraphExec_t* exec, hipGraph_t graph, hipGraphNode_t* error_node, char* log,
                               size_t log_size);
hipError_t hipGraphLaunch(hipGraphExec_t exec, hipStream_t stream);

/* roctx (libroctx64 in ROCm; the test-double runtime carries it too) */
void roctxMarkA(const char* message);
int roctxRangePushA(const char* message);
int roctxRangePop(void);

#endif
