/*
 * The part of the rocprofiler-sdk 1.x C API that xpuprof uses, declared by this project from
 * AMD's public API documentation (no AMD header is installable on these machines). Only the
 * types, constants and entry points the xpuprof ROCm agent and its test double use are here.
 *
 * The names are AMD's, so code reads like the documentation; the layouts (x86-64) are pinned
 * field by field in tests/struct_offsets.rs and cross-checked against the rocprofiler-sdk headers that
 * the triton wheel ships (tests/struct_offsets.rs, `triton_headers_agree`).
 *
 * Enumerations are plain integer typedefs plus #defines: the SDK passes them as 32-bit ints, and
 * a tool must accept values newer than the ones it knows.
 */
#ifndef XPUPROF_ROCPROFILER_SDK_DECLS_H
#define XPUPROF_ROCPROFILER_SDK_DECLS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- status ------------------------------------------------------------------------------ */
typedef int32_t rocprofiler_status_t;
#define ROCPROFILER_STATUS_SUCCESS 0
#define ROCPROFILER_STATUS_ERROR 1

/* ---- enumerations (values of SDK 1.x) ----------------------------------------------------- */
typedef int32_t rocprofiler_buffer_category_t;
#define ROCPROFILER_BUFFER_CATEGORY_TRACING 1

typedef int32_t rocprofiler_agent_type_t;
#define ROCPROFILER_AGENT_TYPE_CPU 1
#define ROCPROFILER_AGENT_TYPE_GPU 2

typedef int32_t rocprofiler_callback_phase_t;
#define ROCPROFILER_CALLBACK_PHASE_NONE 0
#define ROCPROFILER_CALLBACK_PHASE_ENTER 1
#define ROCPROFILER_CALLBACK_PHASE_EXIT 2

typedef int32_t rocprofiler_callback_tracing_kind_t;
#define ROCPROFILER_CALLBACK_TRACING_HIP_RUNTIME_API 5
#define ROCPROFILER_CALLBACK_TRACING_MARKER_CORE_API 7
#define ROCPROFILER_CALLBACK_TRACING_CODE_OBJECT 10
#define ROCPROFILER_CALLBACK_TRACING_HIP_STREAM 20

typedef int32_t rocprofiler_buffer_tracing_kind_t;
#define ROCPROFILER_BUFFER_TRACING_MEMORY_COPY 10
#define ROCPROFILER_BUFFER_TRACING_KERNEL_DISPATCH 11
#define ROCPROFILER_BUFFER_TRACING_SCRATCH_MEMORY 12
#define ROCPROFILER_BUFFER_TRACING_CORRELATION_ID_RETIREMENT 13
#define ROCPROFILER_BUFFER_TRACING_MEMORY_ALLOCATION 16

typedef int32_t rocprofiler_code_object_operation_t;
#define ROCPROFILER_CODE_OBJECT_LOAD 1
#define ROCPROFILER_CODE_OBJECT_DEVICE_KERNEL_SYMBOL_REGISTER 2

typedef int32_t rocprofiler_hip_stream_operation_t;
#define ROCPROFILER_HIP_STREAM_CREATE 1
#define ROCPROFILER_HIP_STREAM_DESTROY 2
#define ROCPROFILER_HIP_STREAM_SET 3

typedef int32_t rocprofiler_memory_copy_operation_t;
#define ROCPROFILER_MEMORY_COPY_HOST_TO_HOST 1
#define ROCPROFILER_MEMORY_COPY_HOST_TO_DEVICE 2
#define ROCPROFILER_MEMORY_COPY_DEVICE_TO_HOST 3
#define ROCPROFILER_MEMORY_COPY_DEVICE_TO_DEVICE 4

typedef int32_t rocprofiler_memory_allocation_operation_t;
#define ROCPROFILER_MEMORY_ALLOCATION_ALLOCATE 1
#define ROCPROFILER_MEMORY_ALLOCATION_VMEM_ALLOCATE 2
#define ROCPROFILER_MEMORY_ALLOCATION_FREE 3
#define ROCPROFILER_MEMORY_ALLOCATION_VMEM_FREE 4

typedef int32_t rocprofiler_scratch_memory_operation_t;
#define ROCPROFILER_SCRATCH_MEMORY_ALLOC 1
#define ROCPROFILER_SCRATCH_MEMORY_FREE 2
#define ROCPROFILER_SCRATCH_MEMORY_ASYNC_RECLAIM 3

typedef int32_t rocprofiler_kernel_dispatch_operation_t;
#define ROCPROFILER_KERNEL_DISPATCH_COMPLETE 2

typedef int32_t rocprofiler_buffer_policy_t;
#define ROCPROFILER_BUFFER_POLICY_DISCARD 1
#define ROCPROFILER_BUFFER_POLICY_LOSSLESS 2

typedef int32_t rocprofiler_agent_version_t;
#define ROCPROFILER_AGENT_INFO_VERSION_0 1

/* roctx operations of ROCPROFILER_CALLBACK_TRACING_MARKER_CORE_API */
#define ROCPROFILER_MARKER_CORE_API_ID_roctxMarkA 0
#define ROCPROFILER_MARKER_CORE_API_ID_roctxRangePushA 1
#define ROCPROFILER_MARKER_CORE_API_ID_roctxRangePop 2

/* ---- scalar aliases ------------------------------------------------------------------------ */
typedef uint64_t rocprofiler_timestamp_t; /* CLOCK_BOOTTIME nanoseconds */
typedef uint64_t rocprofiler_thread_id_t; /* gettid() */
typedef int32_t rocprofiler_tracing_operation_t;
typedef uint64_t rocprofiler_kernel_id_t;
typedef uint64_t rocprofiler_dispatch_id_t;

/* ---- handles and small structs ------------------------------------------------------------- */
typedef union rocprofiler_user_data_t {
    uint64_t value;
    void* ptr;
} rocprofiler_user_data_t;

typedef union rocprofiler_address_t {
    uint64_t handle;
    uint64_t value;
    const void* ptr;
} rocprofiler_address_t;

typedef struct rocprofiler_context_id_t { uint64_t handle; } rocprofiler_context_id_t;
typedef struct rocprofiler_buffer_id_t { uint64_t handle; } rocprofiler_buffer_id_t;
typedef struct rocprofiler_agent_id_t { uint64_t handle; } rocprofiler_agent_id_t;
typedef struct rocprofiler_queue_id_t { uint64_t handle; } rocprofiler_queue_id_t;
typedef struct rocprofiler_stream_id_t { uint64_t handle; } rocprofiler_stream_id_t;

typedef struct rocprofiler_dim3_t {
    uint32_t x;
    uint32_t y;
    uint32_t z;
} rocprofiler_dim3_t;

/* Correlation of an API call: internal (the SDK's own, unique per call), external (a tool's),
 * ancestor (the internal id of the API call that made this one). */
typedef struct rocprofiler_correlation_id_t {
    uint64_t internal;
    rocprofiler_user_data_t external;
    uint64_t ancestor;
} rocprofiler_correlation_id_t;

/* Correlation of asynchronous work (no ancestor). */
typedef struct rocprofiler_async_correlation_id_t {
    uint64_t internal;
    rocprofiler_user_data_t external;
} rocprofiler_async_correlation_id_t;

/* ---- callback tracing ---------------------------------------------------------------------- */
/* Passed by value to the callback: what happened, on which thread, in which phase; `payload`
 * points to the kind's data struct. */
typedef struct rocprofiler_callback_tracing_record_t {
    rocprofiler_context_id_t context_id;
    rocprofiler_thread_id_t thread_id;
    rocprofiler_correlation_id_t correlation_id;
    rocprofiler_callback_tracing_kind_t kind;
    rocprofiler_tracing_operation_t operation;
    rocprofiler_callback_phase_t phase;
    void* payload;
} rocprofiler_callback_tracing_record_t;

typedef void (*rocprofiler_callback_tracing_cb_t)(rocprofiler_callback_tracing_record_t record,
                                                  rocprofiler_user_data_t* user_data,
                                                  void* callback_data);

/* The return value of a HIP API call, last member of the HIP API payload. Its widest member is
 * hipChannelFormatDesc (four ints and an enum), hence the 24 bytes. */
typedef union rocprofiler_hip_api_retval_t {
    uint64_t uint64_t_retval;
    int32_t int_retval;
    int32_t hipError_t_retval;
    uint8_t hipChannelFormatDesc_retval[20];
} rocprofiler_hip_api_retval_t;

/* The HIP API payload's head: its size (which locates `retval` at `size - sizeof(retval)`,
 * since the argument union between them grows with every HIP release). */
typedef struct rocprofiler_callback_tracing_hip_api_data_head_t {
    uint64_t size;
} rocprofiler_callback_tracing_hip_api_data_head_t;

/* roctx payload: for roctxMarkA, roctxRangePushA and roctxRangeStartA the first argument is
 * the message. */
typedef struct rocprofiler_callback_tracing_marker_api_data_head_t {
    uint64_t size;
    const char* message;
} rocprofiler_callback_tracing_marker_api_data_head_t;

/* CODE_OBJECT / DEVICE_KERNEL_SYMBOL_REGISTER payload: a kernel's name and resources. */
typedef struct rocprofiler_callback_tracing_code_object_kernel_symbol_register_data_t {
    uint64_t size;
    uint64_t kernel_id;
    uint64_t code_object_id;
    const char* kernel_name;
    uint64_t kernel_object;
    uint32_t kernarg_segment_size;
    uint32_t kernarg_segment_alignment;
    uint32_t group_segment_size;   /* LDS bytes per work-group */
    uint32_t private_segment_size; /* scratch bytes per work-item */
    uint32_t sgpr_count;
    uint32_t arch_vgpr_count;
    uint32_t accum_vgpr_count;
    int64_t kernel_code_entry_byte_offset;
    rocprofiler_address_t kernel_address;
} rocprofiler_callback_tracing_code_object_kernel_symbol_register_data_t;

/* HIP_STREAM payload: the SDK's id for a stream and the hipStream_t value. */
typedef struct rocprofiler_callback_tracing_hip_stream_data_t {
    uint64_t size;
    rocprofiler_stream_id_t stream_id;
    rocprofiler_address_t stream_value;
} rocprofiler_callback_tracing_hip_stream_data_t;

/* ---- buffer tracing ------------------------------------------------------------------------ */
/* What the buffer callback receives: an array of pointers to these. */
typedef struct rocprofiler_record_header_t {
    union {
        struct {
            uint32_t category;
            uint32_t kind;
        };
        uint64_t hash;
    };
    void* payload;
} rocprofiler_record_header_t;

typedef struct rocprofiler_kernel_dispatch_info_t {
    uint64_t size;
    rocprofiler_agent_id_t agent_id;
    rocprofiler_queue_id_t queue_id;
    rocprofiler_kernel_id_t kernel_id;
    rocprofiler_dispatch_id_t dispatch_id;
    uint32_t private_segment_size;
    uint32_t group_segment_size;
    rocprofiler_dim3_t workgroup_size; /* work-items per work-group */
    rocprofiler_dim3_t grid_size;      /* work-items in the grid (not work-groups) */
    uint8_t reserved_padding[56];
} rocprofiler_kernel_dispatch_info_t;

typedef struct rocprofiler_buffer_tracing_kernel_dispatch_record_t {
    uint64_t size;
    rocprofiler_buffer_tracing_kind_t kind;
    rocprofiler_kernel_dispatch_operation_t operation;
    rocprofiler_async_correlation_id_t correlation_id;
    rocprofiler_thread_id_t thread_id;
    rocprofiler_timestamp_t start_timestamp;
    rocprofiler_timestamp_t end_timestamp;
    rocprofiler_kernel_dispatch_info_t dispatch_info;
} rocprofiler_buffer_tracing_kernel_dispatch_record_t;

typedef struct rocprofiler_buffer_tracing_memory_copy_record_t {
    uint64_t size;
    rocprofiler_buffer_tracing_kind_t kind;
    rocprofiler_memory_copy_operation_t operation;
    rocprofiler_async_correlation_id_t correlation_id;
    rocprofiler_thread_id_t thread_id;
    rocprofiler_timestamp_t start_timestamp;
    rocprofiler_timestamp_t end_timestamp;
    rocprofiler_agent_id_t dst_agent_id;
    rocprofiler_agent_id_t src_agent_id;
    uint64_t bytes;
    rocprofiler_address_t dst_address;
    rocprofiler_address_t src_address;
} rocprofiler_buffer_tracing_memory_copy_record_t;

typedef struct rocprofiler_buffer_tracing_memory_allocation_record_t {
    uint64_t size;
    rocprofiler_buffer_tracing_kind_t kind;
    rocprofiler_memory_allocation_operation_t operation;
    rocprofiler_correlation_id_t correlation_id;
    rocprofiler_thread_id_t thread_id;
    rocprofiler_timestamp_t start_timestamp;
    rocprofiler_timestamp_t end_timestamp;
    rocprofiler_agent_id_t agent_id;
    rocprofiler_address_t address;
    uint64_t allocation_size;
} rocprofiler_buffer_tracing_memory_allocation_record_t;

typedef struct rocprofiler_buffer_tracing_scratch_memory_record_t {
    uint64_t size;
    rocprofiler_buffer_tracing_kind_t kind;
    rocprofiler_scratch_memory_operation_t operation;
    rocprofiler_correlation_id_t correlation_id;
    rocprofiler_agent_id_t agent_id;
    rocprofiler_queue_id_t queue_id;
    rocprofiler_thread_id_t thread_id;
    rocprofiler_timestamp_t start_timestamp;
    rocprofiler_timestamp_t end_timestamp;
    int32_t flags;
} rocprofiler_buffer_tracing_scratch_memory_record_t;

/* No record of this buffer will carry `internal_correlation_id` after this one. */
typedef struct rocprofiler_buffer_tracing_correlation_id_retirement_record_t {
    uint64_t size;
    rocprofiler_buffer_tracing_kind_t kind;
    rocprofiler_timestamp_t timestamp;
    uint64_t internal_correlation_id;
} rocprofiler_buffer_tracing_correlation_id_retirement_record_t;

typedef void (*rocprofiler_buffer_tracing_cb_t)(rocprofiler_context_id_t context,
                                                rocprofiler_buffer_id_t buffer_id,
                                                rocprofiler_record_header_t** headers,
                                                size_t num_headers,
                                                void* data,
                                                uint64_t drop_count);

/* ---- agents -------------------------------------------------------------------------------- */
/* The head of rocprofiler_agent_v0_t up to the fields xpuprof reads (the SDK appends fields and
 * states the struct's size in `size`). The three HSA_* members of the SDK are 32-bit unions of
 * bit fields in hsakmt; they are declared by their width here. */
typedef struct rocprofiler_agent_v0_t {
    uint64_t size;
    rocprofiler_agent_id_t id;
    rocprofiler_agent_type_t type;
    uint32_t cpu_cores_count;
    uint32_t simd_count;
    uint32_t mem_banks_count;
    uint32_t caches_count;
    uint32_t io_links_count;
    uint32_t cpu_core_id_base;
    uint32_t simd_id_base;
    uint32_t max_waves_per_simd;
    uint32_t lds_size_in_kb;
    uint32_t gds_size_in_kb;
    uint32_t num_gws;
    uint32_t wave_front_size;
    uint32_t num_xcc;
    uint32_t cu_count;
    uint32_t array_count;
    uint32_t num_shader_banks;
    uint32_t simd_arrays_per_engine;
    uint32_t cu_per_simd_array;
    uint32_t simd_per_cu;
    uint32_t max_slots_scratch_cu;
    uint32_t gfx_target_version;
    uint16_t vendor_id;
    uint16_t device_id;
    uint32_t location_id;
    uint32_t domain;
    uint32_t drm_render_minor;
    uint32_t num_sdma_engines;
    uint32_t num_sdma_xgmi_engines;
    uint32_t num_sdma_queues_per_engine;
    uint32_t num_cp_queues;
    uint32_t max_engine_clk_ccompute;
    uint32_t max_engine_clk_fcompute;
    uint32_t sdma_fw_version;
    uint32_t fw_version;
    uint32_t capability;
    uint32_t cu_per_engine;
    uint32_t max_waves_per_cu;
    uint32_t family_id;
    uint32_t workgroup_max_size;
    uint32_t grid_max_size;
    uint64_t local_mem_size;
    uint64_t hive_id;
    uint64_t gpu_id;
    rocprofiler_dim3_t workgroup_max_dim;
    rocprofiler_dim3_t grid_max_dim;
    const void* mem_banks;
    const void* caches;
    const void* io_links;
    const char* name;         /* "gfx942" for a GPU */
    const char* vendor_name;
    const char* product_name; /* marketing name */
    const char* model_name;
    uint32_t node_id;
    int32_t logical_node_id;
    int32_t logical_node_type_id;
} rocprofiler_agent_v0_t;

typedef rocprofiler_status_t (*rocprofiler_query_available_agents_cb_t)(
    rocprofiler_agent_version_t version, const void** agents, size_t num_agents, void* user_data);

/* ---- registration -------------------------------------------------------------------------- */
/* SDK 1.x put `size` first (0.x had only name and handle). */
typedef struct rocprofiler_client_id_t {
    size_t size;
    const char* name;
    uint32_t handle;
} rocprofiler_client_id_t;

typedef void (*rocprofiler_client_finalize_t)(rocprofiler_client_id_t client);
typedef int (*rocprofiler_tool_initialize_t)(rocprofiler_client_finalize_t finalize_func,
                                             void* tool_data);
typedef void (*rocprofiler_tool_finalize_t)(void* tool_data);

typedef struct rocprofiler_tool_configure_result_t {
    size_t size;
    rocprofiler_tool_initialize_t initialize;
    rocprofiler_tool_finalize_t finalize;
    void* tool_data;
} rocprofiler_tool_configure_result_t;

/* What a tool exports; the SDK looks it up when a runtime registers. */
typedef rocprofiler_tool_configure_result_t* (*rocprofiler_configure_func_t)(
    uint32_t version, const char* runtime_version, uint32_t priority,
    rocprofiler_client_id_t* client_id);

/* ---- entry points (the agent resolves them from the loaded library, never links it) ---------- */
rocprofiler_status_t rocprofiler_get_version(uint32_t* major, uint32_t* minor, uint32_t* patch);
rocprofiler_status_t rocprofiler_get_timestamp(rocprofiler_timestamp_t* ts);
const char* rocprofiler_get_status_string(rocprofiler_status_t status);
rocprofiler_status_t rocprofiler_create_context(rocprofiler_context_id_t* context_id);
rocprofiler_status_t rocprofiler_start_context(rocprofiler_context_id_t context_id);
rocprofiler_status_t rocprofiler_stop_context(rocprofiler_context_id_t context_id);
rocprofiler_status_t rocprofiler_create_buffer(rocprofiler_context_id_t context,
                                               size_t size,
                                               size_t watermark,
                                               rocprofiler_buffer_policy_t policy,
                                               rocprofiler_buffer_tracing_cb_t callback,
                                               void* callback_data,
                                               rocprofiler_buffer_id_t* buffer_id);
rocprofiler_status_t rocprofiler_flush_buffer(rocprofiler_buffer_id_t buffer_id);
rocprofiler_status_t rocprofiler_configure_callback_tracing_service(
    rocprofiler_context_id_t context_id,
    rocprofiler_callback_tracing_kind_t kind,
    const rocprofiler_tracing_operation_t* operations,
    size_t operations_count,
    rocprofiler_callback_tracing_cb_t callback,
    void* callback_args);
rocprofiler_status_t rocprofiler_configure_buffer_tracing_service(
    rocprofiler_context_id_t context_id,
    rocprofiler_buffer_tracing_kind_t kind,
    const rocprofiler_tracing_operation_t* operations,
    size_t operations_count,
    rocprofiler_buffer_id_t buffer_id);
rocprofiler_status_t rocprofiler_query_callback_tracing_kind_operation_name(
    rocprofiler_callback_tracing_kind_t kind,
    rocprofiler_tracing_operation_t operation,
    const char** name,
    uint64_t* name_len);
rocprofiler_status_t rocprofiler_query_available_agents(
    rocprofiler_agent_version_t version,
    rocprofiler_query_available_agents_cb_t callback,
    size_t agent_size,
    void* user_data);

#ifdef __cplusplus
}
#endif

#endif
