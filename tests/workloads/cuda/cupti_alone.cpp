// The benchmark's baseline: CUPTI kernel tracing alone, as small as it can be. Injected with
// CUDA_INJECTION64_PATH; enables CONCURRENT_KERNEL activity only, counts records in the buffer
// completion callback and flushes at exit. No callbacks, no stacks, no output stream.
#include <cupti.h>
#include <cstdio>
#include <cstdlib>
#include <atomic>

static std::atomic<unsigned long long> g_records{0};
static const size_t kBufSize = 8 << 20;

static void CUPTIAPI on_request(uint8_t** buf, size_t* size, size_t* max) {
  *buf = static_cast<uint8_t*>(aligned_alloc(8, kBufSize));
  *size = kBufSize;
  *max = 0;
}

static void CUPTIAPI on_complete(CUcontext, uint32_t, uint8_t* buf, size_t, size_t valid) {
  CUpti_Activity* rec = nullptr;
  unsigned long long n = 0;
  while (cuptiActivityGetNextRecord(buf, valid, &rec) == CUPTI_SUCCESS) n++;
  g_records += n;
  free(buf);
}

static void at_exit() {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::fprintf(stderr, "cupti_alone: %llu activity records\n", g_records.load());
}

extern "C" int InitializeInjection(void) {
  if (cuptiActivityRegisterCallbacks(on_request, on_complete) != CUPTI_SUCCESS ||
      cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS) {
    std::fprintf(stderr, "cupti_alone: failed to enable CUPTI\n");
    return 1;
  }
  std::atexit(at_exit);
  return 1;
}
