// Kernels launched through the driver API (cuLaunchKernel), as Triton and cuBLAS do.
#include "common.h"
#include <cuda.h>

__global__ void driver_kernel(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * 3.0f;
}

#define CU_CHECK(call)                                                        \
  do {                                                                        \
    CUresult r_ = (call);                                                     \
    if (r_ != CUDA_SUCCESS) {                                                 \
      const char* s_ = nullptr;                                               \
      cuGetErrorString(r_, &s_);                                              \
      std::fprintf(stderr, "%s failed: %s\n", #call, s_ ? s_ : "?");          \
      std::exit(2);                                                           \
    }                                                                         \
  } while (0)

NOINLINE void launch_with_driver(CUfunction f, float* d, int n) {
  void* args[] = {&d, &n};
  CU_CHECK(cuLaunchKernel(f, (n + 255) / 256, 1, 1, 256, 1, 1, 0, nullptr, args, nullptr));
}

int main(int argc, char** argv) {
  int iters = arg_int(argc, argv, 1, 8);
  const int n = 1 << 16;
  float* d;
  CHECK(cudaMalloc(&d, n * sizeof(float)));
  cudaFunction_t fn;
  CHECK(cudaGetFuncBySymbol(&fn, reinterpret_cast<const void*>(driver_kernel)));
  for (int i = 0; i < iters; i++) launch_with_driver(reinterpret_cast<CUfunction>(fn), d, n);
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaFree(d));
  std::printf("EXPECT kernels=%d launchers=launch_with_driver\n", iters);
  return 0;
}
