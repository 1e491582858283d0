// Kernels, memcpy host->device and device->host, memset, NVTX marker and range, one stream.
// EXPECT: kernels = 2*n (scale_kernel from launch_scale, add_kernel from launch_add).
#include "common.h"
#include <nvtx3/nvToolsExt.h>

__global__ void scale_kernel(float* x, int n, float a) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}

__global__ void add_kernel(float* x, int n, float b) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += b;
}

NOINLINE void launch_scale(float* d, int n) {
  scale_kernel<<<(n + 255) / 256, 256>>>(d, n, 2.0f);
  CHECK_LAUNCH();
}

NOINLINE void launch_add(float* d, int n) {
  add_kernel<<<(n + 127) / 128, 128, 64>>>(d, n, 1.0f);
  CHECK_LAUNCH();
}

int main(int argc, char** argv) {
  int iters = arg_int(argc, argv, 1, 8);
  const int n = 1 << 20;
  float* h = static_cast<float*>(std::malloc(n * sizeof(float)));
  for (int i = 0; i < n; i++) h[i] = float(i % 7);
  float* d = nullptr;
  CHECK(cudaMalloc(&d, n * sizeof(float)));
  nvtxMarkA("basic: start");
  nvtxRangePushA("basic: copy in");
  CHECK(cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice));
  nvtxRangePop();
  CHECK(cudaMemset(d, 0, 1024 * sizeof(float)));
  nvtxRangePushA("basic: compute");
  for (int i = 0; i < iters; i++) {
    launch_scale(d, n);
    launch_add(d, n);
  }
  nvtxRangePop();
  CHECK(cudaMemcpy(h, d, n * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaFree(d));
  std::free(h);
  std::printf("EXPECT kernels=%d launchers=launch_scale,launch_add memcpy=2 memset=1\n", 2 * iters);
  return 0;
}
