/*
 * TEST DOUBLE of libroctracer64.so (roctracer 4.1 ABI, ROCm before 6.2). The fake HIP runtime
 * drives it through xpt.h: HIP API calls reach the callbacks the tool enabled per operation
 * (hip_api_data_t: correlation id and phase first), roctx calls reach the ROCTX callbacks, and
 * HIP activity (kernels with their name, copies with their bytes) is written as
 * activity_record_t (the declarations of plugins/rocm/roctracer-sys) into the pool the tool
 * opened, delivered when the pool is full or flushed. Timestamps are on ROCr's system clock,
 * which this double takes from CLOCK_MONOTONIC_RAW, so the host's conversion is exercised.
 * roctracer has no allocation, scratch, stream or retirement records: those calls do nothing.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "roctracer_decls.h"
#include "xpt.h"

static const char* hip_ops[] = {
    "unknown", "hipMalloc", "hipFree", "hipMemcpy", "hipMemcpyAsync", "hipLaunchKernel",
    "hipGraphLaunch", "hipStreamCreate", "hipDeviceSynchronize", "hipGetDevice",
};
#define NHIP (int)(sizeof hip_ops / sizeof hip_ops[0])

struct cb {
    uint32_t domain, op;
    activity_rtapi_callback_t f;
    void* arg;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct cb cbs[64];
static int ncbs;
static roctracer_properties_t pool_props;
static int pool_open, hip_ops_on;
static char* pool;
static size_t pool_used;
static uint64_t next_corr = 1;

static uint64_t system_clock(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC_RAW, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

uint32_t roctracer_version_major(void) { return 4; }
uint32_t roctracer_version_minor(void) { return 1; }
const char* roctracer_error_string(void) { return "test double error"; }

const char* roctracer_op_string(uint32_t domain, uint32_t op, uint32_t kind)
{
    if (domain == ACTIVITY_DOMAIN_HIP_API)
        return op < (uint32_t)NHIP ? hip_ops[op] : NULL;
    /* HIP activity: the name says what ran; for copies, `kind` (HIP's command type) names the
     * direction. The test double numbers its command types like the SDK's copy directions. */
    if (domain == ACTIVITY_DOMAIN_HIP_OPS && op == HIP_OP_ID_DISPATCH)
        return "KernelExecution";
    if (domain == ACTIVITY_DOMAIN_HIP_OPS && op == HIP_OP_ID_COPY)
        return kind == XPT_COPY_H2D ? "CopyHostToDevice" : kind == XPT_COPY_D2H ? "CopyDeviceToHost" : "CopyDeviceToDevice";
    return NULL;
}

roctracer_status_t roctracer_enable_op_callback(activity_domain_t domain, uint32_t op, activity_rtapi_callback_t f,
                                                void* arg)
{
    if (ncbs == 64)
        return -1;
    cbs[ncbs++] = (struct cb){domain, op, f, arg};
    return ROCTRACER_STATUS_SUCCESS;
}

roctracer_status_t roctracer_disable_domain_callback(activity_domain_t domain)
{
    for (int i = 0; i < ncbs; i++)
        if (cbs[i].domain == domain)
            cbs[i].f = NULL;
    return ROCTRACER_STATUS_SUCCESS;
}

roctracer_status_t roctracer_open_pool_expl(const roctracer_properties_t* p, roctracer_pool_t** out)
{
    pool_props = *p;
    pool = calloc(1, p->buffer_size);
    pool_open = 1;
    *out = (roctracer_pool_t*)&pool_props;
    return ROCTRACER_STATUS_SUCCESS;
}

roctracer_status_t roctracer_enable_domain_activity_expl(activity_domain_t domain, roctracer_pool_t* p)
{
    (void)p;
    if (domain == ACTIVITY_DOMAIN_HIP_OPS)
        hip_ops_on = 1;
    return ROCTRACER_STATUS_SUCCESS;
}

roctracer_status_t roctracer_disable_domain_activity(activity_domain_t domain)
{
    if (domain == ACTIVITY_DOMAIN_HIP_OPS)
        hip_ops_on = 0;
    return ROCTRACER_STATUS_SUCCESS;
}

static void deliver_locked(void)
{
    if (pool_used && pool_props.buffer_callback_fun)
        pool_props.buffer_callback_fun(pool, pool + pool_used, pool_props.buffer_callback_arg);
    pool_used = 0;
}

roctracer_status_t roctracer_flush_activity_expl(roctracer_pool_t* p)
{
    (void)p;
    pthread_mutex_lock(&lock);
    deliver_locked();
    pthread_mutex_unlock(&lock);
    return ROCTRACER_STATUS_SUCCESS;
}

roctracer_status_t roctracer_get_timestamp(roctracer_timestamp_t* t)
{
    *t = system_clock();
    return ROCTRACER_STATUS_SUCCESS;
}

roctracer_status_t roctracer_next_record(const activity_record_t* r, const activity_record_t** next)
{
    *next = r + 1;
    return ROCTRACER_STATUS_SUCCESS;
}

static void activity(const activity_record_t* r)
{
    if (!pool_open || !hip_ops_on)
        return;
    pthread_mutex_lock(&lock);
    if (pool_used + sizeof *r > pool_props.buffer_size)
        deliver_locked();
    memcpy(pool + pool_used, r, sizeof *r);
    pool_used += sizeof *r;
    pthread_mutex_unlock(&lock);
}

static void callback(uint32_t domain, uint32_t op, const void* data)
{
    for (int i = 0; i < ncbs; i++)
        if (cbs[i].domain == domain && cbs[i].op == op && cbs[i].f)
            cbs[i].f(domain, op, data, cbs[i].arg);
}

/* ---- the test double interface --------------------------------------------------------------- */
struct hip_api_data {
    uint64_t correlation_id;
    uint32_t phase;
    uint8_t args[64];
};

static __thread struct hip_api_data current;
static __thread uint32_t current_op;

void xpt_init(void) {}

void xpt_kernel_symbol(uint64_t id, const char* name, uint32_t lds, uint32_t scratch, uint32_t sgprs, uint32_t vgprs)
{
    (void)id, (void)name, (void)lds, (void)scratch, (void)sgprs, (void)vgprs;
}

uint64_t xpt_api_enter(const char* api)
{
    uint32_t op = 0;
    for (int i = 1; i < NHIP; i++)
        if (strcmp(hip_ops[i], api) == 0)
            op = (uint32_t)i;
    memset(&current, 0, sizeof current);
    current.correlation_id = __atomic_fetch_add(&next_corr, 1, __ATOMIC_RELAXED);
    current.phase = ACTIVITY_API_PHASE_ENTER;
    current_op = op;
    callback(ACTIVITY_DOMAIN_HIP_API, op, &current);
    return current.correlation_id;
}

void xpt_api_exit(uint64_t corr, int result)
{
    (void)result;
    current.correlation_id = corr;
    current.phase = ACTIVITY_API_PHASE_EXIT;
    callback(ACTIVITY_DOMAIN_HIP_API, current_op, &current);
}

void xpt_stream(uint64_t corr, uint64_t stream) { (void)corr, (void)stream; }

void xpt_kernel(uint64_t corr, uint64_t kernel_id, const char* name, uint64_t duration_ns, const uint32_t grid[3],
                const uint32_t block[3], uint64_t queue)
{
    (void)kernel_id, (void)grid, (void)block;
    activity_record_t r;
    memset(&r, 0, sizeof r);
    r.domain = ACTIVITY_DOMAIN_HIP_OPS;
    r.op = HIP_OP_ID_DISPATCH;
    r.correlation_id = corr;
    r.begin_ns = system_clock();
    r.end_ns = r.begin_ns + duration_ns;
    r.device_id = 0;
    r.queue_id = queue;
    r.kernel_name = name;
    activity(&r);
}

void xpt_copy(uint64_t corr, int direction, uint64_t bytes, uint64_t duration_ns, uint64_t queue)
{
    (void)direction;
    activity_record_t r;
    memset(&r, 0, sizeof r);
    r.domain = ACTIVITY_DOMAIN_HIP_OPS;
    r.op = HIP_OP_ID_COPY;
    r.kind = (uint32_t)direction;
    r.correlation_id = corr;
    r.begin_ns = system_clock();
    r.end_ns = r.begin_ns + duration_ns;
    r.device_id = 0;
    r.queue_id = queue;
    r.bytes = bytes;
    activity(&r);
}

void xpt_alloc(uint64_t corr, int is_free, uint64_t address, uint64_t bytes)
{
    (void)corr, (void)is_free, (void)address, (void)bytes;
}

void xpt_scratch(uint64_t corr, uint64_t bytes, uint64_t duration_ns, uint64_t queue)
{
    (void)corr, (void)bytes, (void)duration_ns, (void)queue;
}

void xpt_retire(uint64_t corr) { (void)corr; }

void xpt_marker(int op, const char* message)
{
    struct {
        const char* message;
        uint64_t id;
    } d = {message, 0};
    callback(ACTIVITY_DOMAIN_ROCTX, (uint32_t)op, &d);
}
