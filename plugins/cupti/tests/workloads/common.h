// Shared helpers for the CUDA test programs: every CUDA call is checked, and each program ends
// by printing one `EXPECT ...` line that scripts/gpu/run-all.sh compares with the profile.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CHECK(call)                                                                      \
  do {                                                                                   \
    cudaError_t err_ = (call);                                                           \
    if (err_ != cudaSuccess) {                                                           \
      std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,         \
                   cudaGetErrorString(err_));                                            \
      std::exit(2);                                                                      \
    }                                                                                    \
  } while (0)

#define CHECK_LAUNCH() CHECK(cudaGetLastError())

// Keep launching functions out of line so they appear as frames of their own.
#define NOINLINE __attribute__((noinline))

static inline int arg_int(int argc, char** argv, int i, int dflt) {
  return argc > i ? std::atoi(argv[i]) : dflt;
}
