// Capture windows by the program's own markers (issue 25): 5 `outside_kernel` launches, then 7
// `inside_kernel` between the markers, 3 `outside_kernel`, and 4 more `inside_kernel` in a second
// marked range. Markers: `markers profiler` uses cudaProfilerStart/Stop, `markers nvtx` the NVTX
// range "window" (pushed and popped; the first one holds a nested range "inner" of another name).
// EXPECT: with --capture-range-end stop, exactly the 7 inside_kernel of the first range; with
// repeat, all 11; never an outside_kernel.
#include "common.h"
#include <cstring>
#include <cuda_profiler_api.h>
#include <nvtx3/nvToolsExt.h>

__global__ void inside_kernel(float* x) { x[threadIdx.x] += 1.0f; }
__global__ void outside_kernel(float* x) { x[threadIdx.x] -= 1.0f; }

NOINLINE void launch(bool inside, float* d, int n) {
  for (int i = 0; i < n; i++) {
    if (inside) {
      inside_kernel<<<1, 32>>>(d);
    } else {
      outside_kernel<<<1, 32>>>(d);
    }
    CHECK_LAUNCH();
  }
  CHECK(cudaDeviceSynchronize());
}

NOINLINE void marked(bool nvtx, float* d, int n, bool nested) {
  if (nvtx) {
    nvtxRangePushA("window");
  } else {
    CHECK(cudaProfilerStart());
  }
  if (nested) {
    nvtxRangePushA("inner");
    launch(true, d, 2);
    nvtxRangePop();
    n -= 2;
  }
  launch(true, d, n);
  if (nvtx) {
    nvtxRangePop();
  } else {
    CHECK(cudaProfilerStop());
  }
}

int main(int argc, char** argv) {
  bool nvtx = argc > 1 && std::strcmp(argv[1], "nvtx") == 0;
  float* d = nullptr;
  CHECK(cudaMalloc(&d, 32 * sizeof(float)));
  launch(false, d, 5);
  marked(nvtx, d, 7, nvtx);
  launch(false, d, 3);
  marked(nvtx, d, 4, false);
  CHECK(cudaFree(d));
  std::printf("EXPECT inside_kernel=7 (stop) or 11 (repeat), outside_kernel=0\n");
  return 0;
}
