// Two streams, each with its own kernel, launched alternately from one thread.
#include "common.h"

__global__ void stream_a_kernel(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * 0.5f + 1.0f;
}

__global__ void stream_b_kernel(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * 2.0f - 1.0f;
}

NOINLINE void launch_on_streams(float* a, float* b, int n, cudaStream_t s1, cudaStream_t s2) {
  stream_a_kernel<<<(n + 255) / 256, 256, 0, s1>>>(a, n);
  CHECK_LAUNCH();
  stream_b_kernel<<<(n + 255) / 256, 256, 0, s2>>>(b, n);
  CHECK_LAUNCH();
}

int main(int argc, char** argv) {
  int iters = arg_int(argc, argv, 1, 8);
  const int n = 1 << 18;
  float *a, *b;
  CHECK(cudaMalloc(&a, n * sizeof(float)));
  CHECK(cudaMalloc(&b, n * sizeof(float)));
  cudaStream_t s1, s2;
  CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  CHECK(cudaMemsetAsync(a, 0, n * sizeof(float), s1));
  CHECK(cudaMemsetAsync(b, 0, n * sizeof(float), s2));
  for (int i = 0; i < iters; i++) launch_on_streams(a, b, n, s1, s2);
  CHECK(cudaStreamSynchronize(s1));
  CHECK(cudaStreamSynchronize(s2));
  CHECK(cudaStreamDestroy(s1));
  CHECK(cudaStreamDestroy(s2));
  CHECK(cudaFree(a));
  CHECK(cudaFree(b));
  std::printf("EXPECT kernels=%d launchers=launch_on_streams streams=2 memset=2\n", 2 * iters);
  return 0;
}
