// Two kernels whose warps stall for different reasons by design, for the PC sampling checks
// (issue 32): `chase` follows a random cycle through an array far larger than L2, one dependent
// global load per step (its warps wait on memory: long_scoreboard); `chain` runs a long chain of
// dependent floating-point multiply-adds in registers (its warps wait on the previous
// instruction's fixed latency, never on memory). Each is launched from a host function of its
// own, so their launch stacks differ. Built with -lineinfo; the lines marked HOT are where each
// kernel's samples should fall.
//
//   pc_stalls [rounds]   (default 20; each round launches both kernels once)
#include <cstdio>
#include <cstdlib>
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

__global__ void chase(const unsigned* __restrict__ next, unsigned* out, unsigned mask, int steps) {
  unsigned i = ((blockIdx.x * blockDim.x + threadIdx.x) * 7919u) & mask;
  for (int s = 0; s < steps; ++s) {
    i = next[i];  // HOT: chase
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = i;
}

__global__ void chain(float* out, int iters) {
  float x = threadIdx.x * 1e-3f;
  float a = 0.999f + blockIdx.x * 1e-7f;
  for (int k = 0; k < iters; ++k) {
    x = fmaf(x, a, 1e-4f);  // HOT: chain
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = x;
}

// A random single cycle over n entries (Sattolo), so every chase visits cold lines.
static std::vector<unsigned> cycle(unsigned n) {
  std::vector<unsigned> p(n);
  for (unsigned i = 0; i < n; ++i) p[i] = i;
  unsigned long long s = 88172645463325252ull;
  for (unsigned i = n - 1; i > 0; --i) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    unsigned j = unsigned(s % i);
    unsigned t = p[i];
    p[i] = p[j];
    p[j] = t;
  }
  std::vector<unsigned> next(n);
  for (unsigned i = 0; i < n; ++i) next[p[i]] = p[(i + 1) % n];
  return next;
}

__attribute__((noinline)) void run_chase(const unsigned* next, unsigned* out, unsigned mask, int blocks) {
  chase<<<blocks, 256>>>(next, out, mask, 4096);
  CHECK(cudaGetLastError());
}

__attribute__((noinline)) void run_chain(float* out, int blocks) {
  chain<<<blocks, 128>>>(out, 1 << 20);
  CHECK(cudaGetLastError());
}

int main(int argc, char** argv) {
  int rounds = argc > 1 ? std::atoi(argv[1]) : 20;
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const unsigned n = 1u << 26;  // 256 MiB of indices (a power of two): far beyond L2
  std::vector<unsigned> host = cycle(n);
  unsigned *next = nullptr, *out = nullptr;
  float* fout = nullptr;
  CHECK(cudaMalloc(&next, size_t(n) * sizeof(unsigned)));
  CHECK(cudaMalloc(&out, size_t(sms) * 4 * 256 * sizeof(unsigned)));
  CHECK(cudaMalloc(&fout, size_t(sms) * 2 * 128 * sizeof(float)));
  CHECK(cudaMemcpy(next, host.data(), size_t(n) * sizeof(unsigned), cudaMemcpyHostToDevice));
  for (int r = 0; r < rounds; ++r) {
    run_chase(next, out, n - 1, sms * 4);
    run_chain(fout, sms * 2);
  }
  CHECK(cudaDeviceSynchronize());
  unsigned check = 0;
  CHECK(cudaMemcpy(&check, out, sizeof(check), cudaMemcpyDeviceToHost));
  std::printf("pc_stalls: %d rounds on %d SMs, check %u\n", rounds, sms, check);
  CHECK(cudaFree(next));
  CHECK(cudaFree(out));
  CHECK(cudaFree(fout));
  return 0;
}
