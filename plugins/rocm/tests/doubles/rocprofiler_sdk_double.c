/*
 * TEST DOUBLE of librocprofiler-sdk.so (rocprofiler-sdk 1.2 ABI), the pattern
 * rocprofiler-register's own tests use: when the (fake) HIP runtime initialises, it finds the
 * tool's rocprofiler_configure (a visible symbol in the process, or in a library named by
 * ROCP_TOOL_LIBRARIES), configures and initializes it, and then delivers what the runtime does
 * through the services the tool turned on: callback records (HIP API enter/exit, code objects,
 * roctx, HIP streams) on the calling thread, and buffer records laid out as the SDK lays them
 * out (the declarations of plugins/rocm/rocprofiler-sdk-sys) in a DISCARD buffer.
 *
 * Knobs: XPUPROF_TEST_SDK_VERSION=M.m.p: the version the double reports.
 * XPUPROF_TEST_SDK_CAPACITY=N: the buffer holds N records and delivers only when
 * flushed, so the N+1th record between flushes is dropped and counted (the DISCARD policy).
 * Otherwise it holds records up to the tool's byte size and delivers at the watermark.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

#include "rocprofiler_sdk_decls.h"
#include "xpt.h"

#define MAX_SERVICES 64
#define MAX_OPS 256

struct callback_service {
    int kind;
    int nops; /* 0: every operation */
    int ops[MAX_OPS];
    rocprofiler_callback_tracing_cb_t cb;
    void* data;
};

struct buffer {
    int used;
    size_t size, watermark, bytes;
    rocprofiler_buffer_tracing_cb_t cb;
    void* data;
    rocprofiler_record_header_t* headers;
    size_t count, cap;
    uint64_t dropped;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct callback_service cbs[MAX_SERVICES];
static int ncbs;
static int buffer_kinds[MAX_SERVICES];
static int nbuffer_kinds;
static struct buffer buf;
static int started;
static uint64_t next_corr = 1;
static rocprofiler_tool_configure_result_t* tool;
static long capacity_override = -1;

static const char* hip_ops[] = {
    "hipMalloc", "hipFree", "hipMemcpy", "hipMemcpyAsync", "hipLaunchKernel", "hipGraphLaunch",
    "hipStreamCreate", "hipDeviceSynchronize", "hipGetDevice",
};
#define NHIP (int)(sizeof hip_ops / sizeof hip_ops[0])

static uint64_t boottime(void)
{
    struct timespec t;
    clock_gettime(CLOCK_BOOTTIME, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static uint64_t tid(void) { return (uint64_t)syscall(SYS_gettid); }

/* ---- the SDK's entry points ---------------------------------------------------------------- */
rocprofiler_status_t rocprofiler_get_version(uint32_t* major, uint32_t* minor, uint32_t* patch)
{
    /* XPUPROF_TEST_SDK_VERSION=M.m.p plays another SDK release (1.2.1 otherwise). */
    const char* v = getenv("XPUPROF_TEST_SDK_VERSION");
    *major = 1;
    *minor = 2;
    *patch = 1;
    if (v && *v)
        sscanf(v, "%u.%u.%u", major, minor, patch);
    return ROCPROFILER_STATUS_SUCCESS;
}

rocprofiler_status_t rocprofiler_get_timestamp(rocprofiler_timestamp_t* ts)
{
    *ts = boottime();
    return ROCPROFILER_STATUS_SUCCESS;
}

const char* rocprofiler_get_status_string(rocprofiler_status_t status)
{
    return status == 0 ? "success" : "test double error";
}

rocprofiler_status_t rocprofiler_create_context(rocprofiler_context_id_t* id)
{
    id->handle = 1;
    return ROCPROFILER_STATUS_SUCCESS;
}

rocprofiler_status_t rocprofiler_start_context(rocprofiler_context_id_t id)
{
    (void)id;
    started = 1;
    return ROCPROFILER_STATUS_SUCCESS;
}

rocprofiler_status_t rocprofiler_stop_context(rocprofiler_context_id_t id)
{
    (void)id;
    started = 0;
    return ROCPROFILER_STATUS_SUCCESS;
}

rocprofiler_status_t rocprofiler_create_buffer(rocprofiler_context_id_t ctx, size_t size, size_t watermark,
                                               rocprofiler_buffer_policy_t policy,
                                               rocprofiler_buffer_tracing_cb_t cb, void* data,
                                               rocprofiler_buffer_id_t* id)
{
    (void)ctx;
    if (policy != ROCPROFILER_BUFFER_POLICY_DISCARD) {
        fprintf(stderr, "rocprofiler-sdk test double: only the DISCARD policy is scripted\n");
        return ROCPROFILER_STATUS_ERROR;
    }
    buf.used = 1;
    buf.size = size;
    buf.watermark = watermark;
    buf.cb = cb;
    buf.data = data;
    id->handle = 1;
    const char* c = getenv("XPUPROF_TEST_SDK_CAPACITY");
    if (c && *c)
        capacity_override = atol(c);
    return ROCPROFILER_STATUS_SUCCESS;
}

static void deliver_locked(void)
{
    if (!buf.used || (buf.count == 0 && buf.dropped == 0))
        return;
    rocprofiler_record_header_t** ptrs = calloc(buf.count + 1, sizeof *ptrs);
    for (size_t i = 0; i < buf.count; i++)
        ptrs[i] = &buf.headers[i];
    rocprofiler_context_id_t ctx = {1};
    rocprofiler_buffer_id_t id = {1};
    uint64_t dropped = buf.dropped;
    size_t n = buf.count;
    rocprofiler_record_header_t* headers = buf.headers;
    buf.headers = NULL;
    buf.count = buf.cap = 0;
    buf.bytes = 0;
    buf.dropped = 0;
    buf.cb(ctx, id, ptrs, n, buf.data, dropped);
    for (size_t i = 0; i < n; i++)
        free(headers[i].payload);
    free(headers);
    free(ptrs);
}

rocprofiler_status_t rocprofiler_flush_buffer(rocprofiler_buffer_id_t id)
{
    (void)id;
    pthread_mutex_lock(&lock);
    deliver_locked();
    pthread_mutex_unlock(&lock);
    return ROCPROFILER_STATUS_SUCCESS;
}

rocprofiler_status_t rocprofiler_configure_callback_tracing_service(
    rocprofiler_context_id_t ctx, rocprofiler_callback_tracing_kind_t kind,
    const rocprofiler_tracing_operation_t* ops, size_t nops, rocprofiler_callback_tracing_cb_t cb,
    void* data)
{
    (void)ctx;
    if (ncbs == MAX_SERVICES || nops > MAX_OPS)
        return ROCPROFILER_STATUS_ERROR;
    struct callback_service* s = &cbs[ncbs++];
    s->kind = kind;
    s->nops = (int)nops;
    for (size_t i = 0; i < nops; i++)
        s->ops[i] = ops[i];
    s->cb = cb;
    s->data = data;
    return ROCPROFILER_STATUS_SUCCESS;
}

rocprofiler_status_t rocprofiler_configure_buffer_tracing_service(
    rocprofiler_context_id_t ctx, rocprofiler_buffer_tracing_kind_t kind,
    const rocprofiler_tracing_operation_t* ops, size_t nops, rocprofiler_buffer_id_t id)
{
    (void)ctx;
    (void)ops;
    (void)nops;
    (void)id;
    if (nbuffer_kinds == MAX_SERVICES)
        return ROCPROFILER_STATUS_ERROR;
    buffer_kinds[nbuffer_kinds++] = kind;
    return ROCPROFILER_STATUS_SUCCESS;
}

rocprofiler_status_t rocprofiler_query_callback_tracing_kind_operation_name(
    rocprofiler_callback_tracing_kind_t kind, rocprofiler_tracing_operation_t op, const char** name,
    uint64_t* len)
{
    if (kind != ROCPROFILER_CALLBACK_TRACING_HIP_RUNTIME_API || op < 0 || op >= NHIP)
        return ROCPROFILER_STATUS_ERROR;
    *name = hip_ops[op];
    *len = strlen(hip_ops[op]);
    return ROCPROFILER_STATUS_SUCCESS;
}

rocprofiler_status_t rocprofiler_query_available_agents(rocprofiler_agent_version_t version,
                                                        rocprofiler_query_available_agents_cb_t cb,
                                                        size_t agent_size, void* data)
{
    if (version != ROCPROFILER_AGENT_INFO_VERSION_0 || agent_size > sizeof(rocprofiler_agent_v0_t))
        return ROCPROFILER_STATUS_ERROR;
    static rocprofiler_agent_v0_t agents[2];
    memset(agents, 0, sizeof agents);
    agents[0].size = sizeof agents[0];
    agents[0].id.handle = XPT_CPU_AGENT;
    agents[0].type = ROCPROFILER_AGENT_TYPE_CPU;
    agents[0].name = "AMD EPYC (test double)";
    agents[0].product_name = "AMD EPYC (test double)";
    agents[0].node_id = 0;
    agents[1].size = sizeof agents[1];
    agents[1].id.handle = XPT_GPU_AGENT;
    agents[1].type = ROCPROFILER_AGENT_TYPE_GPU;
    agents[1].cu_count = 304;
    agents[1].local_mem_size = 192ull << 30;
    agents[1].name = "gfx942";
    agents[1].product_name = "AMD Instinct MI300X (test double)";
    agents[1].node_id = 1;
    agents[1].logical_node_type_id = 0;
    const void* list[2] = {&agents[0], &agents[1]};
    return cb(version, list, 2, data);
}

/* ---- delivering ------------------------------------------------------------------------------ */
static int buffer_traces(int kind)
{
    for (int i = 0; i < nbuffer_kinds; i++)
        if (buffer_kinds[i] == kind)
            return 1;
    return 0;
}

static void callback(int kind, int op, int phase, uint64_t corr, void* payload)
{
    if (!started)
        return;
    for (int i = 0; i < ncbs; i++) {
        struct callback_service* s = &cbs[i];
        if (s->kind != kind)
            continue;
        int hit = s->nops == 0;
        for (int j = 0; j < s->nops && !hit; j++)
            hit = s->ops[j] == op;
        if (!hit)
            continue;
        rocprofiler_callback_tracing_record_t r;
        memset(&r, 0, sizeof r);
        r.context_id.handle = 1;
        r.thread_id = tid();
        r.correlation_id.internal = corr;
        r.kind = kind;
        r.operation = op;
        r.phase = phase;
        r.payload = payload;
        rocprofiler_user_data_t user = {0};
        s->cb(r, &user, s->data);
    }
}

/* Appends a buffer record (a copy of `rec`, `size` bytes, kind at offset 8). */
static void record(const void* rec, size_t size)
{
    int kind = *(const int32_t*)((const char*)rec + 8);
    if (!started || !buf.used || !buffer_traces(kind))
        return;
    pthread_mutex_lock(&lock);
    size_t limit = capacity_override >= 0 ? (size_t)capacity_override : (size_t)-1;
    if (buf.count >= limit || buf.bytes + size > buf.size) {
        buf.dropped++;
        pthread_mutex_unlock(&lock);
        return;
    }
    if (buf.count == buf.cap) {
        buf.cap = buf.cap ? buf.cap * 2 : 64;
        buf.headers = realloc(buf.headers, buf.cap * sizeof *buf.headers);
    }
    void* copy = malloc(size);
    memcpy(copy, rec, size);
    rocprofiler_record_header_t* h = &buf.headers[buf.count++];
    h->category = ROCPROFILER_BUFFER_CATEGORY_TRACING;
    h->kind = (uint32_t)kind;
    h->payload = copy;
    buf.bytes += size;
    if (capacity_override < 0 && buf.bytes >= buf.watermark)
        deliver_locked();
    pthread_mutex_unlock(&lock);
}

/* ---- the test double interface (driven by the fake HIP runtime) ------------------------------ */
static int tool_from(void* handle)
{
    rocprofiler_configure_func_t f = (rocprofiler_configure_func_t)dlsym(handle, "rocprofiler_configure");
    if (!f)
        return 0;
    static rocprofiler_client_id_t client = {sizeof(rocprofiler_client_id_t), NULL, 1};
    tool = f(1, "1.2.1", 0, &client);
    return 1;
}

void xpt_init(void)
{
    const char* libs = getenv("ROCP_TOOL_LIBRARIES");
    int found = 0;
    if (libs && *libs) {
        char* copy = strdup(libs);
        for (char* save = NULL, *p = strtok_r(copy, ": ", &save); p && !found; p = strtok_r(NULL, ": ", &save)) {
            void* h = dlopen(p, RTLD_NOW | RTLD_LOCAL);
            if (!h)
                fprintf(stderr, "rocprofiler-sdk test double: cannot load %s: %s\n", p, dlerror());
            else
                found = tool_from(h);
        }
        free(copy);
    }
    if (!found)
        found = tool_from(RTLD_DEFAULT);
    if (tool && tool->initialize)
        tool->initialize(NULL, tool->tool_data);
}

static void fini(void) __attribute__((destructor));
static void fini(void)
{
    if (tool && tool->finalize)
        tool->finalize(tool->tool_data);
}

static int op_of(const char* api)
{
    for (int i = 0; i < NHIP; i++)
        if (strcmp(hip_ops[i], api) == 0)
            return i;
    return -1;
}

/* The HIP API payload: size, an argument union (opaque here), the 24-byte retval union last. */
struct hip_payload {
    uint64_t size;
    uint8_t args[40];
    rocprofiler_hip_api_retval_t retval;
};

/* The fake runtime makes no nested HIP calls: one open call per thread. */
static __thread struct hip_payload* current_payload;
static __thread int current_op;

uint64_t xpt_api_enter(const char* api)
{
    uint64_t corr = __atomic_fetch_add(&next_corr, 1, __ATOMIC_RELAXED);
    struct hip_payload* p = calloc(1, sizeof *p);
    p->size = sizeof *p;
    current_payload = p;
    current_op = op_of(api);
    callback(ROCPROFILER_CALLBACK_TRACING_HIP_RUNTIME_API, current_op, ROCPROFILER_CALLBACK_PHASE_ENTER, corr, p);
    return corr;
}

void xpt_api_exit(uint64_t corr, int result)
{
    struct hip_payload* p = current_payload;
    p->retval.hipError_t_retval = result;
    callback(ROCPROFILER_CALLBACK_TRACING_HIP_RUNTIME_API, current_op, ROCPROFILER_CALLBACK_PHASE_EXIT, corr, p);
    free(p);
    current_payload = NULL;
}

void xpt_kernel_symbol(uint64_t kernel_id, const char* name, uint32_t lds, uint32_t scratch, uint32_t sgprs,
                       uint32_t vgprs)
{
    rocprofiler_callback_tracing_code_object_kernel_symbol_register_data_t d;
    memset(&d, 0, sizeof d);
    d.size = sizeof d;
    d.kernel_id = kernel_id;
    d.code_object_id = 1;
    d.kernel_name = name;
    d.group_segment_size = lds;
    d.private_segment_size = scratch;
    d.sgpr_count = sgprs;
    d.arch_vgpr_count = vgprs;
    callback(ROCPROFILER_CALLBACK_TRACING_CODE_OBJECT, ROCPROFILER_CODE_OBJECT_DEVICE_KERNEL_SYMBOL_REGISTER,
             ROCPROFILER_CALLBACK_PHASE_ENTER, 0, &d);
}

void xpt_stream(uint64_t corr, uint64_t stream)
{
    rocprofiler_callback_tracing_hip_stream_data_t d;
    memset(&d, 0, sizeof d);
    d.size = sizeof d;
    d.stream_id.handle = stream;
    d.stream_value.value = stream;
    callback(ROCPROFILER_CALLBACK_TRACING_HIP_STREAM, ROCPROFILER_HIP_STREAM_SET, ROCPROFILER_CALLBACK_PHASE_ENTER, corr, &d);
}

/* The fields every activity record of the SDK's buffers starts with: size, kind and operation,
 * the call's correlation id, the thread, and a span of `duration_ns` starting now. */
#define BUFFER_RECORD_HEAD(r, kind_, operation_, corr, duration_ns)                                \
    do {                                                                                          \
        memset(&(r), 0, sizeof(r));                                                               \
        (r).size = sizeof(r);                                                                     \
        (r).kind = (kind_);                                                                       \
        (r).operation = (operation_);                                                             \
        (r).correlation_id.internal = (corr);                                                     \
        (r).thread_id = tid();                                                                    \
        (r).start_timestamp = boottime();                                                         \
        (r).end_timestamp = (r).start_timestamp + (duration_ns);                                  \
    } while (0)

void xpt_kernel(uint64_t corr, uint64_t kernel_id, const char* name, uint64_t duration_ns, const uint32_t grid[3],
                const uint32_t block[3], uint64_t queue)
{
    (void)name;
    static uint64_t dispatch_id;
    rocprofiler_buffer_tracing_kernel_dispatch_record_t r;
    BUFFER_RECORD_HEAD(r, ROCPROFILER_BUFFER_TRACING_KERNEL_DISPATCH, ROCPROFILER_KERNEL_DISPATCH_COMPLETE, corr,
                       duration_ns);
    r.dispatch_info.size = sizeof r.dispatch_info - sizeof r.dispatch_info.reserved_padding;
    r.dispatch_info.agent_id.handle = XPT_GPU_AGENT;
    r.dispatch_info.queue_id.handle = queue;
    r.dispatch_info.kernel_id = kernel_id;
    r.dispatch_info.dispatch_id = __atomic_add_fetch(&dispatch_id, 1, __ATOMIC_RELAXED);
    r.dispatch_info.workgroup_size.x = block[0];
    r.dispatch_info.workgroup_size.y = block[1];
    r.dispatch_info.workgroup_size.z = block[2];
    r.dispatch_info.grid_size.x = grid[0];
    r.dispatch_info.grid_size.y = grid[1];
    r.dispatch_info.grid_size.z = grid[2];
    record(&r, sizeof r);
}

void xpt_copy(uint64_t corr, int direction, uint64_t bytes, uint64_t duration_ns, uint64_t queue)
{
    (void)queue;
    rocprofiler_buffer_tracing_memory_copy_record_t r;
    BUFFER_RECORD_HEAD(r, ROCPROFILER_BUFFER_TRACING_MEMORY_COPY, direction, corr, duration_ns);
    r.src_agent_id.handle = direction == XPT_COPY_H2D ? XPT_CPU_AGENT : XPT_GPU_AGENT;
    r.dst_agent_id.handle = direction == XPT_COPY_D2H ? XPT_CPU_AGENT : XPT_GPU_AGENT;
    r.bytes = bytes;
    record(&r, sizeof r);
}

void xpt_alloc(uint64_t corr, int is_free, uint64_t address, uint64_t bytes)
{
    rocprofiler_buffer_tracing_memory_allocation_record_t r;
    int op = is_free ? ROCPROFILER_MEMORY_ALLOCATION_FREE : ROCPROFILER_MEMORY_ALLOCATION_ALLOCATE;
    BUFFER_RECORD_HEAD(r, ROCPROFILER_BUFFER_TRACING_MEMORY_ALLOCATION, op, corr, 1000);
    r.agent_id.handle = XPT_GPU_AGENT;
    r.address.value = address;
    r.allocation_size = bytes;
    record(&r, sizeof r);
}

void xpt_scratch(uint64_t corr, uint64_t bytes, uint64_t duration_ns, uint64_t queue)
{
    (void)bytes;
    rocprofiler_buffer_tracing_scratch_memory_record_t r;
    BUFFER_RECORD_HEAD(r, ROCPROFILER_BUFFER_TRACING_SCRATCH_MEMORY, ROCPROFILER_SCRATCH_MEMORY_ALLOC, corr, duration_ns);
    r.agent_id.handle = XPT_GPU_AGENT;
    r.queue_id.handle = queue;
    record(&r, sizeof r);
}

void xpt_retire(uint64_t corr)
{
    rocprofiler_buffer_tracing_correlation_id_retirement_record_t r;
    memset(&r, 0, sizeof r);
    r.size = sizeof r;
    r.kind = ROCPROFILER_BUFFER_TRACING_CORRELATION_ID_RETIREMENT;
    r.timestamp = boottime();
    r.internal_correlation_id = corr;
    record(&r, sizeof r);
}

void xpt_marker(int op, const char* message)
{
    struct {
        uint64_t size;
        const char* message;
        uint8_t rest[16];
    } d;
    memset(&d, 0, sizeof d);
    d.size = sizeof d;
    d.message = message;
    callback(ROCPROFILER_CALLBACK_TRACING_MARKER_CORE_API, op, ROCPROFILER_CALLBACK_PHASE_ENTER, 0, &d);
    callback(ROCPROFILER_CALLBACK_TRACING_MARKER_CORE_API, op, ROCPROFILER_CALLBACK_PHASE_EXIT, 0, &d);
}
