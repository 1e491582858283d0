// Launch-bound microbenchmark: N empty kernels from one thread; prints the launch loop's wall
// time (from the first launch to the end of the final synchronize), excluding CUDA start-up.
#include "common.h"
#include <chrono>

__global__ void empty_kernel() {}

// The empty asm after the launch keeps it from being a tail call, so launch_empty stays on
// the stack (a tail call would hand its frame to the callee, for any unwinder).
NOINLINE void launch_empty() {
  empty_kernel<<<1, 1>>>();
  asm volatile("" ::: "memory");
}

int main(int argc, char** argv) {
  int n = arg_int(argc, argv, 1, 200000);
  CHECK(cudaFree(nullptr));
  for (int i = 0; i < 100; i++) launch_empty();  // warm-up: module load, first-launch costs
  CHECK(cudaDeviceSynchronize());
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; i++) launch_empty();
  CHECK(cudaDeviceSynchronize());
  auto t1 = std::chrono::steady_clock::now();
  CHECK_LAUNCH();
  double s = std::chrono::duration<double>(t1 - t0).count();
  std::printf("BENCH launches=%d seconds=%.6f us_per_launch=%.4f\n", n, s, s * 1e6 / n);
  std::printf("EXPECT kernels=%d launchers=launch_empty\n", n + 100);
  return 0;
}
