// Launches from a known 5-deep path in host code built WITHOUT frame pointers
// (nvcc -O2 -Xcompiler -fomit-frame-pointer): main -> level1 .. level4 -> launch_kernels.
// Every level keeps values live across its call and uses them after it (no tail calls, rbp
// free as a general register), so only a CFI unwind reaches main. scripts/gpu/check_stacks.py
// asserts that every kernel sits under the full path.
// EXPECT: kernels = 2*n (frameless_kernel), all under main;level1;level2;level3;level4;launch_kernels.
#include "common.h"

static volatile unsigned long sink;

__global__ void frameless_kernel(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * 0.5f + 1.0f;
}

NOINLINE unsigned long launch_kernels(float* d, int n, unsigned long x) {
  frameless_kernel<<<(n + 255) / 256, 256>>>(d, n);
  CHECK_LAUNCH();
  frameless_kernel<<<(n + 127) / 128, 128>>>(d, n);
  CHECK_LAUNCH();
  return x * 3 + sink;
}

#define LEVEL(name, next)                                  \
  NOINLINE unsigned long name(float* d, int n, unsigned long x) { \
    unsigned long a = x * 7, b = x ^ sink;                 \
    unsigned long r = next(d, n, a + b);                   \
    sink = r + a;                                          \
    return r ^ b;                                          \
  }

LEVEL(level4, launch_kernels)
LEVEL(level3, level4)
LEVEL(level2, level3)
LEVEL(level1, level2)

int main(int argc, char** argv) {
  int iters = arg_int(argc, argv, 1, 50);
  const int n = 1 << 16;
  float* d = nullptr;
  CHECK(cudaMalloc(&d, n * sizeof(float)));
  CHECK(cudaMemset(d, 0, n * sizeof(float)));
  for (int i = 0; i < iters; i++) sink = level1(d, n, sink + i);
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaFree(d));
  std::printf("EXPECT kernels=%d launchers=launch_kernels\n", 2 * iters);
  return 0;
}
