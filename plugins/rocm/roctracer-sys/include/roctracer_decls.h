/*
 * The part of AMD's roctracer 4.1 C API (ROCm before 6.2; deprecated since) that xpuprof uses,
 * declared by this project from AMD's public API documentation. Names are AMD's; layouts
 * (x86-64) are pinned in tests/struct_offsets.rs and cross-checked against the roctracer headers the
 * triton wheel ships.
 */
#ifndef XPUPROF_ROCTRACER_DECLS_H
#define XPUPROF_ROCTRACER_DECLS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef int32_t roctracer_status_t;
#define ROCTRACER_STATUS_SUCCESS 0

/* Domains (activity_domain_t). */
typedef uint32_t activity_domain_t;
#define ACTIVITY_DOMAIN_HSA_API 0
#define ACTIVITY_DOMAIN_HSA_OPS 1
#define ACTIVITY_DOMAIN_HIP_OPS 2
#define ACTIVITY_DOMAIN_HIP_API 3
#define ACTIVITY_DOMAIN_ROCTX 6

/* Operations of ACTIVITY_DOMAIN_HIP_OPS. */
#define HIP_OP_ID_DISPATCH 0
#define HIP_OP_ID_COPY 1
#define HIP_OP_ID_BARRIER 2

/* Operations of ACTIVITY_DOMAIN_ROCTX. */
#define ROCTX_API_ID_roctxMarkA 0
#define ROCTX_API_ID_roctxRangePushA 1
#define ROCTX_API_ID_roctxRangePop 2

/* API callback phases. */
#define ACTIVITY_API_PHASE_ENTER 0
#define ACTIVITY_API_PHASE_EXIT 1

typedef uint64_t activity_correlation_id_t;
typedef uint64_t roctracer_timestamp_t; /* ROCr's system clock, nanoseconds */

/* One activity record (roctracer_record_t): what ran, its correlation id, its host/device
 * time span, where it ran, and bytes or a kernel name. */
typedef struct activity_record_s {
    uint32_t domain;
    uint32_t kind;
    uint32_t op;
    union {
        struct {
            activity_correlation_id_t correlation_id;
            roctracer_timestamp_t begin_ns;
            roctracer_timestamp_t end_ns;
        };
        struct {
            uint32_t se;
            uint64_t cycle;
            uint64_t pc;
        } pc_sample;
    };
    union {
        struct {
            int device_id;
            uint64_t queue_id;
        };
        struct {
            uint32_t process_id;
            uint32_t thread_id;
        };
        struct {
            activity_correlation_id_t external_id;
        };
    };
    union {
        size_t bytes;
        const char* kernel_name;
        const char* mark_message;
    };
} activity_record_t;
typedef activity_record_t roctracer_record_t;

/* The head of the HIP API callback data (hip_api_data_t): its correlation id and phase; the
 * argument union follows. */
typedef struct hip_api_data_head_s {
    uint64_t correlation_id;
    uint32_t phase;
} hip_api_data_head_t;

/* The roctx callback data head (roctx_api_data_t): the message is its first argument. */
typedef struct roctx_api_data_head_s {
    const char* message;
} roctx_api_data_head_t;

typedef void (*activity_rtapi_callback_t)(uint32_t domain, uint32_t cid, const void* data, void* arg);
typedef void (*roctracer_allocator_t)(char** ptr, size_t size, void* arg);
typedef void (*roctracer_buffer_callback_t)(const char* begin, const char* end, void* arg);

typedef struct roctracer_properties_t {
    uint32_t mode;
    size_t buffer_size;
    roctracer_allocator_t alloc_fun;
    void* alloc_arg;
    roctracer_buffer_callback_t buffer_callback_fun;
    void* buffer_callback_arg;
} roctracer_properties_t;

typedef void roctracer_pool_t;

/* What HSA_TOOLS_LIB tools export; ROCr calls it with its API table. */
typedef int (*roctracer_tool_on_load_t)(void* table, uint64_t runtime_version,
                                        uint64_t failed_tool_count,
                                        const char* const* failed_tool_names);

uint32_t roctracer_version_major(void);
uint32_t roctracer_version_minor(void);
const char* roctracer_error_string(void);
const char* roctracer_op_string(uint32_t domain, uint32_t op, uint32_t kind);
roctracer_status_t roctracer_enable_op_callback(activity_domain_t domain, uint32_t op,
                                                activity_rtapi_callback_t callback, void* arg);
roctracer_status_t roctracer_disable_domain_callback(activity_domain_t domain);
roctracer_status_t roctracer_open_pool_expl(const roctracer_properties_t* properties,
                                            roctracer_pool_t** pool);
roctracer_status_t roctracer_enable_domain_activity_expl(activity_domain_t domain,
                                                         roctracer_pool_t* pool);
roctracer_status_t roctracer_disable_domain_activity(activity_domain_t domain);
roctracer_status_t roctracer_flush_activity_expl(roctracer_pool_t* pool);
roctracer_status_t roctracer_get_timestamp(roctracer_timestamp_t* timestamp);
roctracer_status_t roctracer_next_record(const activity_record_t* record,
                                         const activity_record_t** next);

#ifdef __cplusplus
}
#endif

#endif
