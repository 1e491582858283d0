// Two host threads launching kernels concurrently, each on its own stream.
#include "common.h"
#include <thread>

__global__ void worker_kernel(float* x, int n, int tag) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += float(tag);
}

NOINLINE void thread_worker(int tag, int iters) {
  const int n = 1 << 16;
  float* d;
  cudaStream_t s;
  CHECK(cudaMalloc(&d, n * sizeof(float)));
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  for (int i = 0; i < iters; i++) {
    worker_kernel<<<(n + 255) / 256, 256, 0, s>>>(d, n, tag);
    CHECK_LAUNCH();
  }
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaStreamDestroy(s));
  CHECK(cudaFree(d));
}

int main(int argc, char** argv) {
  int iters = arg_int(argc, argv, 1, 8);
  CHECK(cudaFree(nullptr));  // initialise the context before the threads race
  std::thread t1(thread_worker, 1, iters);
  std::thread t2(thread_worker, 2, iters);
  t1.join();
  t2.join();
  std::printf("EXPECT kernels=%d launchers=thread_worker threads=2\n", 2 * iters);
  return 0;
}
