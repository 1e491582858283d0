// A program that is already a CUPTI client (as under torch.profiler or Nsight Systems): it
// subscribes before its first CUDA call. The xpuprof agent, injected at cuInit, must report
// "another CUPTI client" once and leave the program and its CUPTI subscription working.
#include "common.h"
#include <cupti.h>

__global__ void other_kernel(int* x) { *x = 42; }

static void CUPTIAPI on_api(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

int main() {
  CUpti_SubscriberHandle h;
  if (cuptiSubscribe(&h, (CUpti_CallbackFunc)on_api, nullptr) != CUPTI_SUCCESS) {
    std::fprintf(stderr, "the program's own cuptiSubscribe failed\n");
    return 3;
  }
  int* d;
  CHECK(cudaMalloc(&d, sizeof(int)));
  other_kernel<<<1, 1>>>(d);
  CHECK_LAUNCH();
  int h_x = 0;
  CHECK(cudaMemcpy(&h_x, d, sizeof(int), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d));
  cuptiUnsubscribe(h);
  std::printf("result %d\n", h_x);
  return h_x == 42 ? 0 : 4;
}
