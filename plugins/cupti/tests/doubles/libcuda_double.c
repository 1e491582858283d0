/*
 * A test double of the CUDA driver and CUPTI in one library, built as libcuda.so.1 by
 * plugins/cupti/tests/cupti/attach.rs (no GPU in CI). It lets the real cupti agent run in a process:
 * the program "launches kernels" with xpuprof_double_launch(name), which behaves as
 * cuLaunchKernel does under CUPTI (driver API enter/exit callbacks to the subscriber for the
 * callbacks it enabled, and a CUpti_ActivityKernel13 record in the activity buffer when kernel
 * records are on; device 0's CUpti_ActivityDevice5 as CUPTI delivered it on the H200, see
 * put_device); the agent loads the same file as its libcupti (XPUPROF_CUPTI_LIB) and calls
 * the CUPTI functions below, which keep the state a real CUPTI keeps: one subscriber, enabled
 * callbacks, domains and record kinds, the buffer callbacks, the timestamp callback, and
 * cuptiFinalize forgetting all of it. Record layouts come from the real CUPTI headers.
 * xpuprof_double_init() is cuInit's injection (it loads CUDA_INJECTION64_PATH and calls its
 * InitializeInjection, as the driver does), xpuprof_double_profiler(1|0) is cuProfilerStart/Stop
 * and xpuprof_double_nvtx(message|NULL) an NVTX push/pop reaching CUPTI's NVTX callbacks.
 * xpuprof_double_finalized() and xpuprof_double_subscribed() let the program report what the
 * agent did; xpuprof_double_exit() is the driver's teardown at the program's end. The driver's
 * device queries (cuDeviceGetCount, cuDeviceGet, cuDeviceGetName, cuDeviceGetUuid,
 * cuDeviceTotalMem, cuDeviceGetAttribute) describe device 0 as its CUPTI record does.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cupti.h>

#define MAX_CALLBACKS 64
#define LAUNCH_CBID CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel

static pthread_mutex_t lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static CUpti_CallbackFunc subscriber_cb;
static void *subscriber_data;
static int subscribed;
static uint32_t callbacks[MAX_CALLBACKS][2];
static unsigned n_callbacks;
static int driver_domain;
static int kernel_records;
static CUpti_BuffersCallbackRequestFunc request_cb;
static CUpti_BuffersCallbackCompleteFunc complete_cb;
static CUpti_TimestampCallbackFunc timestamp_cb;
static uint8_t *buffer;
static size_t buffer_size, buffer_used;
static uint32_t next_correlation = 1;
static unsigned finalized, subscriptions;

unsigned xpuprof_double_finalized(void) { return finalized; }
unsigned xpuprof_double_subscribed(void) { return subscriptions; }

static uint64_t now(void) {
    struct timespec t;
    if (timestamp_cb != NULL) {
        return timestamp_cb();
    }
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static int callback_on(uint32_t domain, uint32_t cbid) {
    unsigned i;
    if (!subscribed) {
        return 0;
    }
    if (domain == CUPTI_CB_DOMAIN_DRIVER_API && driver_domain) {
        return 1;
    }
    for (i = 0; i < n_callbacks; i++) {
        if (callbacks[i][0] == domain && callbacks[i][1] == cbid) {
            return 1;
        }
    }
    return 0;
}

/* Hands the current buffer back to the agent (called with the lock held). */
static void complete(void) {
    if (buffer != NULL && complete_cb != NULL) {
        uint8_t *b = buffer;
        size_t size = buffer_size, used = buffer_used;
        buffer = NULL;
        buffer_used = 0;
        complete_cb(NULL, 0, b, size, used);
    }
}

/* Room for `size` more bytes in the current buffer (a new one requested when needed); 0 when
 * the agent gave none (called with the lock held). */
static int room(size_t size) {
    if (request_cb == NULL) {
        return 0;
    }
    if (buffer != NULL && buffer_size - buffer_used < size) {
        complete();
    }
    if (buffer == NULL) {
        size_t max_records = 0;
        request_cb(&buffer, &buffer_size, &max_records);
        buffer_used = 0;
        if (buffer == NULL || buffer_size < size) {
            buffer = NULL;
            return 0;
        }
    }
    return 1;
}

/* Device 0 of the double, as the driver and CUPTI describe it. */
#define DEVICE_NAME "CUDA double"
#define DEVICE_UUID "xpuprof-double-0"
#define DEVICE_MEMORY (1ull << 30)
#define DEVICE_SMS 4

/* The device record CUPTI writes when device records are first turned on, copying what CUPTI
 * 13.0 did on an H200 (driver 580, `xpuprof attach --every` on a PyTorch loop, release carry of
 * e37d6d4, 2026-11-28): a device is described once per process (not again after cuptiFinalize
 * and a new subscription), and its description did not come back with the activity buffers
 * while the process ran, not even at forced flushes (cuptiActivityFlushAll with
 * CUPTI_ACTIVITY_FLAG_FLUSH_FORCED at every window edge): the host got it, or none, only at the
 * connection's end, so every kernel waiting for its device reached the outputs then. The double
 * holds the description apart from the buffers and hands it over only at the driver's teardown
 * (xpuprof_double_exit), to a subscriber that registered buffers; cuptiFinalize forgets it. */
static int device_described, device_held;

static void put_device(void) {
    if (device_described) {
        return;
    }
    device_described = 1;
    device_held = 1;
}

/* Writes the held device record into the buffer and hands the buffer back (lock held). */
static void deliver_device(void) {
    CUpti_ActivityDevice5 d;
    if (!device_held || !room(sizeof d)) {
        return;
    }
    device_held = 0;
    memset(&d, 0, sizeof d);
    d.kind = CUPTI_ACTIVITY_KIND_DEVICE;
    d.globalMemorySize = DEVICE_MEMORY;
    d.numMultiprocessors = DEVICE_SMS;
    d.computeCapabilityMajor = 9;
    d.id = 0;
    memcpy(d.uuid.bytes, DEVICE_UUID, 16);
    d.name = DEVICE_NAME;
    memcpy(buffer + buffer_used, &d, sizeof d);
    buffer_used += sizeof d;
    complete();
}

/* The driver's teardown at the program's end: the last moment CUPTI hands over what it held. */
void xpuprof_double_exit(void) {
    pthread_mutex_lock(&lock);
    deliver_device();
    pthread_mutex_unlock(&lock);
}

static void put_kernel(const char *name, uint32_t correlation, uint64_t start) {
    CUpti_ActivityKernel13 k;
    if (!kernel_records || !room(sizeof k)) {
        return;
    }
    memset(&k, 0, sizeof k);
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k.start = start + 1000;
    k.end = start + 21000;
    k.completed = k.end;
    k.deviceId = 0;
    k.contextId = 1;
    k.streamId = 7;
    k.gridX = k.gridY = k.gridZ = 1;
    k.blockX = 32;
    k.blockY = k.blockZ = 1;
    k.correlationId = correlation;
    k.name = name;
    memcpy(buffer + buffer_used, &k, sizeof k);
    buffer_used += sizeof k;
}

static void api_callback(CUpti_ApiCallbackSite site, uint32_t cbid, const char *function, uint32_t correlation,
                         const char *symbol) {
    CUresult result = CUDA_SUCCESS;
    CUpti_CallbackData d;
    memset(&d, 0, sizeof d);
    d.callbackSite = site;
    d.functionName = function;
    d.symbolName = symbol;
    d.correlationId = correlation;
    d.functionReturnValue = site == CUPTI_API_EXIT ? &result : NULL;
    subscriber_cb(subscriber_data, CUPTI_CB_DOMAIN_DRIVER_API, cbid, &d);
}

static int traced(uint32_t domain, uint32_t cbid) {
    int on;
    pthread_mutex_lock(&lock);
    on = callback_on(domain, cbid);
    pthread_mutex_unlock(&lock);
    return on;
}

static int cuda_initialised;

/* The driver's answer before cuInit. */
CUresult cuDeviceGetCount(int *count) {
    *count = cuda_initialised ? 1 : 0;
    return cuda_initialised ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal) {
    if (!cuda_initialised) {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    if (ordinal != 0) {
        return CUDA_ERROR_INVALID_DEVICE;
    }
    *device = 0;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice dev) {
    if (dev != 0 || len <= 0) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    strncpy(name, DEVICE_NAME, (size_t)len - 1);
    name[len - 1] = 0;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev) {
    if (dev != 0) {
        return CUDA_ERROR_INVALID_DEVICE;
    }
    memcpy(uuid->bytes, DEVICE_UUID, 16);
    return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem(size_t *bytes, CUdevice dev) {
    if (dev != 0) {
        return CUDA_ERROR_INVALID_DEVICE;
    }
    *bytes = DEVICE_MEMORY;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *value, CUdevice_attribute attribute, CUdevice dev) {
    if (dev != 0) {
        return CUDA_ERROR_INVALID_DEVICE;
    }
    switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
        *value = DEVICE_SMS;
        return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
        *value = 9;
        return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
        *value = 0;
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

int xpuprof_double_init(void) {
    static int done;
    const char *path = getenv("CUDA_INJECTION64_PATH");
    void *h;
    int (*init)(void);
    cuda_initialised = 1;
    if (done || path == NULL) {
        return 0;
    }
    done = 1;
    h = dlopen(path, RTLD_NOW);
    if (h == NULL) {
        return -1;
    }
    init = (int (*)(void))dlsym(h, "InitializeInjection");
    return init != NULL ? init() : -1;
}

void xpuprof_double_profiler(int start) {
    uint32_t cbid = start ? CUPTI_DRIVER_TRACE_CBID_cuProfilerStart : CUPTI_DRIVER_TRACE_CBID_cuProfilerStop;
    const char *name = start ? "cuProfilerStart" : "cuProfilerStop";
    uint32_t correlation;
    pthread_mutex_lock(&lock);
    correlation = next_correlation++;
    pthread_mutex_unlock(&lock);
    if (traced(CUPTI_CB_DOMAIN_DRIVER_API, cbid)) {
        api_callback(CUPTI_API_ENTER, cbid, name, correlation, NULL);
    }
    if (traced(CUPTI_CB_DOMAIN_DRIVER_API, cbid)) {
        api_callback(CUPTI_API_EXIT, cbid, name, correlation, NULL);
    }
}

/* nvtxRangePushA(message), or nvtxRangePop() for NULL. */
void xpuprof_double_nvtx(const char *message) {
    /* nvtxRangePushA_params of generated_nvtx_meta.h (which needs the NVTX headers). */
    struct {
        const char *message;
    } push = {message};
    int depth = 0;
    CUpti_NvtxData d;
    uint32_t cbid = message != NULL ? CUPTI_CBID_NVTX_nvtxRangePushA : CUPTI_CBID_NVTX_nvtxRangePop;
    d.functionName = message != NULL ? "nvtxRangePushA" : "nvtxRangePop";
    d.functionParams = message != NULL ? (const void *)&push : (const void *)&depth;
    d.functionReturnValue = &depth;
    if (traced(CUPTI_CB_DOMAIN_NVTX, cbid)) {
        subscriber_cb(subscriber_data, CUPTI_CB_DOMAIN_NVTX, cbid, &d);
    }
}

/* Any NVTX call reaching CUPTI's NVTX callbacks, as CUPTI passes it (CUpti_NvtxData): `params`
 * is the call's parameter struct of generated_nvtx_meta.h, `ret` its return value (a
 * registered string's handle, for nvtxDomainRegisterStringA), each passed on as given. */
void xpuprof_double_nvtx_call(uint32_t cbid, const char *name, const void *params, const void *ret) {
    CUpti_NvtxData d;
    d.functionName = name;
    d.functionParams = params;
    d.functionReturnValue = ret;
    if (traced(CUPTI_CB_DOMAIN_NVTX, cbid)) {
        subscriber_cb(subscriber_data, CUPTI_CB_DOMAIN_NVTX, cbid, &d);
    }
}

/* The double's cuLaunchKernel: the calling thread runs the subscriber's callbacks, as CUPTI's
 * do, and the kernel "runs" at once. */
int xpuprof_double_launch(const char *kernel) {
    uint32_t correlation;
    pthread_mutex_lock(&lock);
    correlation = next_correlation++;
    pthread_mutex_unlock(&lock);
    if (traced(CUPTI_CB_DOMAIN_DRIVER_API, LAUNCH_CBID)) {
        api_callback(CUPTI_API_ENTER, LAUNCH_CBID, "cuLaunchKernel", correlation, kernel);
    }
    pthread_mutex_lock(&lock);
    put_kernel(kernel, correlation, now());
    pthread_mutex_unlock(&lock);
    if (traced(CUPTI_CB_DOMAIN_DRIVER_API, LAUNCH_CBID)) {
        api_callback(CUPTI_API_EXIT, LAUNCH_CBID, "cuLaunchKernel", correlation, kernel);
    }
    return 0;
}

/* ---- CUPTI ---------------------------------------------------------------------------------- */

CUptiResult cuptiGetVersion(uint32_t *version) {
    *version = CUPTI_API_VERSION;
    return CUPTI_SUCCESS;
}

CUptiResult cuptiGetResultString(CUptiResult result, const char **str) {
    *str = result == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED ? "multiple subscribers (test double)" : "error (test double)";
    return CUPTI_SUCCESS;
}

CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *subscriber, CUpti_CallbackFunc callback, void *userdata) {
    pthread_mutex_lock(&lock);
    if (subscribed) {
        pthread_mutex_unlock(&lock);
        return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    }
    subscribed = 1;
    subscriptions++;
    subscriber_cb = callback;
    subscriber_data = userdata;
    *subscriber = (CUpti_SubscriberHandle)&subscribed;
    pthread_mutex_unlock(&lock);
    return CUPTI_SUCCESS;
}

CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle subscriber) {
    (void)subscriber;
    pthread_mutex_lock(&lock);
    subscribed = 0;
    n_callbacks = 0;
    driver_domain = 0;
    pthread_mutex_unlock(&lock);
    return CUPTI_SUCCESS;
}

CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber, CUpti_CallbackDomain domain,
                                CUpti_CallbackId cbid) {
    unsigned i;
    (void)subscriber;
    pthread_mutex_lock(&lock);
    for (i = 0; i < n_callbacks; i++) {
        if (callbacks[i][0] == (uint32_t)domain && callbacks[i][1] == cbid) {
            break;
        }
    }
    if (enable && i == n_callbacks && n_callbacks < MAX_CALLBACKS) {
        callbacks[n_callbacks][0] = domain;
        callbacks[n_callbacks][1] = cbid;
        n_callbacks++;
    } else if (!enable && i < n_callbacks) {
        callbacks[i][0] = callbacks[n_callbacks - 1][0];
        callbacks[i][1] = callbacks[n_callbacks - 1][1];
        n_callbacks--;
    }
    pthread_mutex_unlock(&lock);
    return CUPTI_SUCCESS;
}

CUptiResult cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle subscriber, CUpti_CallbackDomain domain) {
    (void)subscriber;
    pthread_mutex_lock(&lock);
    if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
        driver_domain = enable != 0;
    }
    pthread_mutex_unlock(&lock);
    return CUPTI_SUCCESS;
}

CUptiResult cuptiGetCallbackName(CUpti_CallbackDomain domain, uint32_t cbid, const char **name) {
    if (domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid == LAUNCH_CBID) {
        *name = "cuLaunchKernel";
        return CUPTI_SUCCESS;
    }
    return CUPTI_ERROR_INVALID_PARAMETER;
}

CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind) {
    pthread_mutex_lock(&lock);
    if (kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
        kernel_records = 1;
    }
    if (kind == CUPTI_ACTIVITY_KIND_DEVICE) {
        put_device();
    }
    pthread_mutex_unlock(&lock);
    return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind) {
    pthread_mutex_lock(&lock);
    if (kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
        kernel_records = 0;
    }
    pthread_mutex_unlock(&lock);
    return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
                                           CUpti_BuffersCallbackCompleteFunc done) {
    pthread_mutex_lock(&lock);
    request_cb = request;
    complete_cb = done;
    pthread_mutex_unlock(&lock);
    return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc callback) {
    timestamp_cb = callback;
    return CUPTI_SUCCESS;
}

CUptiResult cuptiActivitySetAttribute(CUpti_ActivityAttribute attr, size_t *size, void *value) {
    (void)attr, (void)size, (void)value;
    return CUPTI_SUCCESS;
}

CUptiResult cuptiSetThreadIdType(CUpti_ActivityThreadIdType type) {
    (void)type;
    return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityFlushAll(uint32_t flag) {
    (void)flag;
    pthread_mutex_lock(&lock);
    complete();
    pthread_mutex_unlock(&lock);
    return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext context, uint32_t stream, size_t *dropped) {
    (void)context, (void)stream;
    *dropped = 0;
    return CUPTI_SUCCESS;
}

CUptiResult cuptiGetTimestamp(uint64_t *timestamp) {
    *timestamp = now();
    return CUPTI_SUCCESS;
}

/* The size of a record the double writes, by its kind. */
static size_t record_size(const uint8_t *rec) {
    CUpti_ActivityKind kind;
    memcpy(&kind, rec, sizeof kind);
    return kind == CUPTI_ACTIVITY_KIND_DEVICE ? sizeof(CUpti_ActivityDevice5) : sizeof(CUpti_ActivityKernel13);
}

CUptiResult cuptiActivityGetNextRecord(uint8_t *buf, size_t valid, CUpti_Activity **record) {
    size_t at = *record == NULL ? 0 : (size_t)((uint8_t *)*record - buf) + record_size((uint8_t *)*record);
    if (at + sizeof(CUpti_ActivityKind) > valid || at + record_size(buf + at) > valid) {
        return CUPTI_ERROR_MAX_LIMIT_REACHED;
    }
    *record = (CUpti_Activity *)(buf + at);
    return CUPTI_SUCCESS;
}

CUptiResult cuptiFinalize(void) {
    pthread_mutex_lock(&lock);
    buffer = NULL;
    buffer_used = 0;
    device_held = 0;
    subscribed = 0;
    n_callbacks = 0;
    driver_domain = 0;
    kernel_records = 0;
    request_cb = NULL;
    complete_cb = NULL;
    timestamp_cb = NULL;
    finalized++;
    pthread_mutex_unlock(&lock);
    return CUPTI_SUCCESS;
}
