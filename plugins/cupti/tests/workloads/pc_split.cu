// One kernel launched from two host functions in two phases that stall differently by design,
// for the per-launch split of PC samples (issue 32): `mixed` chases pointers through an array far
// larger than L2 when `math` is 0 (its warps wait on memory: long_scoreboard, the MEMORY line)
// and runs a dependent multiply-add chain when it is 1 (fixed-latency waits, the MATH line).
// `memory_phase` launches it with 0 for `rounds` launches, the program sleeps (`pause_ms`), then
// `math_phase` launches it with 1. Samples name no launch in continuous collection and come late,
// in batches: laid over the launches in order, each instruction seen under one launcher alone
// kept there (docs/pc-sampling.md), the MEMORY line belongs under memory_phase and the MATH line
// under math_phase (by device time alone, each would go 3:1 under each). Built with -lineinfo.
//
//   pc_split [rounds] [pause_ms]   (default 10 launches per phase, 600 ms between the phases)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include <cuda_runtime.h>

#define CHECK(x)                                                                         \
  do {                                                                                   \
    cudaError_t e_ = (x);                                                                \
    if (e_ != cudaSuccess) {                                                             \
      std::fprintf(stderr, "%s failed: %s\n", #x, cudaGetErrorString(e_));               \
      std::exit(1);                                                                      \
    }                                                                                    \
  } while (0)

__global__ void mixed(const unsigned* __restrict__ next, float* out, unsigned mask, int math) {
  unsigned i = ((blockIdx.x * blockDim.x + threadIdx.x) * 7919u) & mask;
  float x = threadIdx.x * 1e-3f;
  if (math == 0) {
    for (int s = 0; s < 4096; ++s) {
      i = next[i];  // MEMORY
    }
  } else {
    for (int k = 0; k < (1 << 20); ++k) {
      x = fmaf(x, 0.999f, 1e-4f);  // MATH
    }
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = x + float(i);
}

__attribute__((noinline)) void memory_phase(const unsigned* next, float* out, unsigned mask, int blocks, int rounds) {
  for (int r = 0; r < rounds; ++r) mixed<<<blocks, 256>>>(next, out, mask, 0);
  CHECK(cudaDeviceSynchronize());
}

__attribute__((noinline)) void math_phase(const unsigned* next, float* out, unsigned mask, int blocks, int rounds) {
  for (int r = 0; r < rounds; ++r) mixed<<<blocks, 256>>>(next, out, mask, 1);
  CHECK(cudaDeviceSynchronize());
}

int main(int argc, char** argv) {
  int rounds = argc > 1 ? std::atoi(argv[1]) : 10;
  int pause_ms = argc > 2 ? std::atoi(argv[2]) : 600;
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const unsigned n = 1u << 26;  // 256 MiB of indices: far beyond L2
  std::vector<unsigned> host(n);
  for (unsigned k = 0; k < n; ++k) host[k] = (k * 2654435761u + 12345u) & (n - 1);
  unsigned* next = nullptr;
  float* out = nullptr;
  CHECK(cudaMalloc(&next, size_t(n) * sizeof(unsigned)));
  CHECK(cudaMalloc(&out, size_t(sms) * 4 * 256 * sizeof(float)));
  CHECK(cudaMemcpy(next, host.data(), size_t(n) * sizeof(unsigned), cudaMemcpyHostToDevice));
  memory_phase(next, out, n - 1, sms * 4, rounds);
  std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
  math_phase(next, out, n - 1, sms * 4, rounds);
  float check = 0;
  CHECK(cudaMemcpy(&check, out, sizeof(check), cudaMemcpyDeviceToHost));
  std::printf("pc_split: %d launches per phase on %d SMs, %d ms apart, check %g\n", rounds, sms, pause_ms, check);
  CHECK(cudaFree(next));
  CHECK(cudaFree(out));
  return 0;
}
