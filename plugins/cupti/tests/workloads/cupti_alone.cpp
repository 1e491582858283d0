// The benchmark's baseline: CUPTI kernel tracing alone, as small as it can be. Injected with
// CUDA_INJECTION64_PATH; enables CONCURRENT_KERNEL activity only, counts records in the buffer
// completion callback and flushes at exit. No callbacks, no stacks, no output stream.
//
// With CUPTI_ALONE_CALLBACKS=1 it also subscribes to the driver API's launch-class calls (the
// ones xpuprof's agent takes for launch sites) with a callback that returns at once: the least
// that any CUPTI-based launch-site tracer costs, CUPTI's own callback dispatch.
#include <cupti.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <atomic>

static std::atomic<unsigned long long> g_records{0};
static std::atomic<unsigned long long> g_callbacks{0};
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
  std::fprintf(stderr, "cupti_alone: %llu activity records, %llu callbacks\n", g_records.load(), g_callbacks.load());
}

static void CUPTIAPI on_api(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {
  g_callbacks.fetch_add(1, std::memory_order_relaxed);
}

// Enables the no-op callback on every driver call named like a launch; returns how many.
static int enable_launch_callbacks() {
  CUpti_SubscriberHandle sub;
  if (cuptiSubscribe(&sub, on_api, nullptr) != CUPTI_SUCCESS) return -1;
  int n = 0;
  for (int cbid = 1; cbid < CUPTI_DRIVER_TRACE_CBID_SIZE; cbid++) {
    const char* name = nullptr;
    if (cuptiGetCallbackName(CUPTI_CB_DOMAIN_DRIVER_API, cbid, &name) != CUPTI_SUCCESS || !name) continue;
    if ((std::strncmp(name, "cuLaunch", 8) == 0 || std::strncmp(name, "cuGraphLaunch", 13) == 0) &&
        !std::strstr(name, "HostFunc") &&
        cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, cbid) == CUPTI_SUCCESS)
      n++;
  }
  return n;
}

extern "C" int InitializeInjection(void) {
  if (cuptiActivityRegisterCallbacks(on_request, on_complete) != CUPTI_SUCCESS ||
      cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS) {
    std::fprintf(stderr, "cupti_alone: failed to enable CUPTI\n");
    return 1;
  }
  const char* cb = std::getenv("CUPTI_ALONE_CALLBACKS");
  if (cb && std::strcmp(cb, "1") == 0) {
    int n = enable_launch_callbacks();
    std::fprintf(stderr, "cupti_alone: no-op callbacks on %d driver launch calls\n", n);
  }
  std::atexit(at_exit);
  return 1;
}
