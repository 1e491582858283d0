//! Every struct's size and field offsets, pinned (x86-64, SDK 1.x), and the same facts measured
//! by a C compiler from the rocprofiler-sdk headers the triton wheel ships
//! (`triton/backends/amd/include/rocprofiler-sdk`, SDK 1.2 at the time of writing), where
//! `pip install triton` put them. The wheel's subset lacks the copy, allocation, scratch and
//! retirement records: those are pinned from AMD's documentation only.

use std::mem::offset_of;

use rocprofiler_sdk_sys::*;
use xpuprof_testkit::offset_facts as facts;
use xpuprof_testkit::struct_offsets::{self, Check, Fact};

/// Facts also present in the triton wheel's trimmed headers.
fn shared_facts() -> Vec<Fact> {
    facts! {
        rocprofiler_correlation_id_t { size 24, internal = 0, external = 8, ancestor = 16 }
        rocprofiler_async_correlation_id_t { size 16, internal = 0, external = 8 }
        rocprofiler_callback_tracing_record_t {
            size 64, context_id = 0, thread_id = 8, correlation_id = 16, kind = 40, operation = 44,
            phase = 48, payload = 56,
        }
        rocprofiler_record_header_t { size 16, payload = 8 }
        rocprofiler_kernel_dispatch_info_t {
            size 128, agent_id = 8, queue_id = 16, kernel_id = 24, dispatch_id = 32,
            private_segment_size = 40, group_segment_size = 44, workgroup_size = 48, grid_size = 60,
        }
        rocprofiler_buffer_tracing_kernel_dispatch_record_t {
            size 184, kind = 8, operation = 12, correlation_id = 16, thread_id = 32,
            start_timestamp = 40, end_timestamp = 48, dispatch_info = 56,
            dispatch_info.kernel_id = 80, dispatch_info.grid_size = 116,
        }
        rocprofiler_callback_tracing_code_object_kernel_symbol_register_data_t {
            size 88, kernel_id = 8, code_object_id = 16, kernel_name = 24, kernel_object = 32,
            group_segment_size = 48, private_segment_size = 52, sgpr_count = 56, arch_vgpr_count = 60,
            accum_vgpr_count = 64, kernel_code_entry_byte_offset = 72, kernel_address = 80,
        }
        rocprofiler_hip_api_retval_t { size 24 }
        rocprofiler_tool_configure_result_t { size 32, initialize = 8, finalize = 16, tool_data = 24 }
        rocprofiler_client_id_t { size 24, name = 8, handle = 16 }
    }
}

/// Enumerator values xpuprof uses (names as in the SDK), compared with the triton headers' enums.
fn enum_values() -> Vec<(&'static str, i64)> {
    macro_rules! values { ($($n:ident),* $(,)?) => { vec![$((stringify!($n), $n as i64)),*] }; }
    values![
        ROCPROFILER_STATUS_SUCCESS,
        ROCPROFILER_BUFFER_CATEGORY_TRACING,
        ROCPROFILER_AGENT_TYPE_CPU,
        ROCPROFILER_AGENT_TYPE_GPU,
        ROCPROFILER_CALLBACK_PHASE_ENTER,
        ROCPROFILER_CALLBACK_PHASE_EXIT,
        ROCPROFILER_CALLBACK_TRACING_HIP_RUNTIME_API,
        ROCPROFILER_CALLBACK_TRACING_MARKER_CORE_API,
        ROCPROFILER_CALLBACK_TRACING_CODE_OBJECT,
        ROCPROFILER_CALLBACK_TRACING_HIP_STREAM,
        ROCPROFILER_BUFFER_TRACING_MEMORY_COPY,
        ROCPROFILER_BUFFER_TRACING_KERNEL_DISPATCH,
        ROCPROFILER_BUFFER_TRACING_SCRATCH_MEMORY,
        ROCPROFILER_BUFFER_TRACING_CORRELATION_ID_RETIREMENT,
        ROCPROFILER_BUFFER_TRACING_MEMORY_ALLOCATION,
        ROCPROFILER_CODE_OBJECT_LOAD,
        ROCPROFILER_CODE_OBJECT_DEVICE_KERNEL_SYMBOL_REGISTER,
        ROCPROFILER_HIP_STREAM_CREATE,
        ROCPROFILER_HIP_STREAM_DESTROY,
        ROCPROFILER_HIP_STREAM_SET,
        ROCPROFILER_MEMORY_COPY_HOST_TO_HOST,
        ROCPROFILER_MEMORY_COPY_HOST_TO_DEVICE,
        ROCPROFILER_MEMORY_COPY_DEVICE_TO_HOST,
        ROCPROFILER_MEMORY_COPY_DEVICE_TO_DEVICE,
        ROCPROFILER_MEMORY_ALLOCATION_ALLOCATE,
        ROCPROFILER_MEMORY_ALLOCATION_VMEM_ALLOCATE,
        ROCPROFILER_MEMORY_ALLOCATION_FREE,
        ROCPROFILER_MEMORY_ALLOCATION_VMEM_FREE,
        ROCPROFILER_SCRATCH_MEMORY_ALLOC,
        ROCPROFILER_SCRATCH_MEMORY_FREE,
        ROCPROFILER_SCRATCH_MEMORY_ASYNC_RECLAIM,
        ROCPROFILER_KERNEL_DISPATCH_COMPLETE,
        ROCPROFILER_BUFFER_POLICY_DISCARD,
        ROCPROFILER_BUFFER_POLICY_LOSSLESS,
        ROCPROFILER_AGENT_INFO_VERSION_0,
        ROCPROFILER_MARKER_CORE_API_ID_roctxMarkA,
        ROCPROFILER_MARKER_CORE_API_ID_roctxRangePushA,
        ROCPROFILER_MARKER_CORE_API_ID_roctxRangePop,
    ]
}

/// Facts of the agent struct: the triton header's agent is longer (it appends fields), so only
/// offsets are compared.
fn agent_facts() -> Vec<Fact> {
    vec![
        ("rocprofiler_agent_v0_t", "id", offset_of!(rocprofiler_agent_v0_t, id), 8),
        ("rocprofiler_agent_v0_t", "type", offset_of!(rocprofiler_agent_v0_t, type_), 16),
        ("rocprofiler_agent_v0_t", "cu_count", offset_of!(rocprofiler_agent_v0_t, cu_count), 72),
        (
            "rocprofiler_agent_v0_t",
            "gfx_target_version",
            offset_of!(rocprofiler_agent_v0_t, gfx_target_version),
            100,
        ),
        ("rocprofiler_agent_v0_t", "local_mem_size", offset_of!(rocprofiler_agent_v0_t, local_mem_size), 176),
        ("rocprofiler_agent_v0_t", "name", offset_of!(rocprofiler_agent_v0_t, name), 248),
        ("rocprofiler_agent_v0_t", "product_name", offset_of!(rocprofiler_agent_v0_t, product_name), 264),
        ("rocprofiler_agent_v0_t", "node_id", offset_of!(rocprofiler_agent_v0_t, node_id), 280),
        (
            "rocprofiler_agent_v0_t",
            "logical_node_id",
            offset_of!(rocprofiler_agent_v0_t, logical_node_id),
            284,
        ),
    ]
}

/// Facts of records the triton wheel does not ship (pinned from the documentation).
fn documented_facts() -> Vec<Fact> {
    facts! {
        rocprofiler_buffer_tracing_memory_copy_record_t {
            size 96, kind = 8, operation = 12, correlation_id = 16, thread_id = 32,
            start_timestamp = 40, end_timestamp = 48, dst_agent_id = 56, src_agent_id = 64, bytes = 72,
            dst_address = 80, src_address = 88,
        }
        rocprofiler_buffer_tracing_memory_allocation_record_t {
            size 88, kind = 8, operation = 12, correlation_id = 16, thread_id = 40,
            start_timestamp = 48, end_timestamp = 56, agent_id = 64, address = 72, allocation_size = 80,
        }
        rocprofiler_buffer_tracing_scratch_memory_record_t {
            size 88, kind = 8, operation = 12, correlation_id = 16, agent_id = 40, queue_id = 48,
            thread_id = 56, start_timestamp = 64, end_timestamp = 72, flags = 80,
        }
        rocprofiler_buffer_tracing_correlation_id_retirement_record_t {
            size 32, kind = 8, timestamp = 16, internal_correlation_id = 24,
        }
        rocprofiler_callback_tracing_hip_stream_data_t { size 24, stream_id = 8, stream_value = 16 }
        rocprofiler_callback_tracing_marker_api_data_head_t { size 16, message = 8 }
    }
}

#[test]
fn sizes_and_offsets_are_pinned() {
    let facts: Vec<Fact> =
        shared_facts().into_iter().chain(agent_facts()).chain(documented_facts()).collect();
    let wrong = struct_offsets::pinned_mismatches(&facts);
    assert!(wrong.is_empty(), "layouts moved:\n{}", wrong.join("\n"));
}

#[test]
fn enum_values_are_those_of_sdk_1() {
    assert_eq!(ROCPROFILER_CALLBACK_TRACING_HIP_RUNTIME_API, 5);
    assert_eq!(ROCPROFILER_CALLBACK_TRACING_MARKER_CORE_API, 7);
    assert_eq!(ROCPROFILER_CALLBACK_TRACING_CODE_OBJECT, 10);
    assert_eq!(ROCPROFILER_CALLBACK_TRACING_HIP_STREAM, 20);
    assert_eq!(ROCPROFILER_BUFFER_TRACING_MEMORY_COPY, 10);
    assert_eq!(ROCPROFILER_BUFFER_TRACING_KERNEL_DISPATCH, 11);
    assert_eq!(ROCPROFILER_BUFFER_TRACING_SCRATCH_MEMORY, 12);
    assert_eq!(ROCPROFILER_BUFFER_TRACING_CORRELATION_ID_RETIREMENT, 13);
    assert_eq!(ROCPROFILER_BUFFER_TRACING_MEMORY_ALLOCATION, 16);
    assert_eq!(ROCPROFILER_BUFFER_POLICY_DISCARD, 1);
}

/// Every shared fact and enumerator, measured by a C++ compiler from triton's headers, must
/// equal our bindings'.
#[test]
fn triton_headers_agree() {
    let Some(inc) = struct_offsets::triton_amd_include("rocprofiler-sdk/fwd.h") else { return };
    let headers = [
        "rocprofiler-sdk/registration.h",
        "rocprofiler-sdk/buffer_tracing.h",
        "rocprofiler-sdk/callback_tracing.h",
        "rocprofiler-sdk/agent.h",
        "rocprofiler-sdk/hip/api_args.h",
        "rocprofiler-sdk/marker/api_id.h",
    ];
    let checks: Vec<Check> = shared_facts()
        .iter()
        .chain(&agent_facts())
        .map(Check::fact)
        .chain(enum_values().into_iter().map(|(n, v)| Check::value(n, v)))
        .collect();
    let wrong = struct_offsets::disagreements(std::slice::from_ref(&inc), &headers, &checks);
    assert!(wrong.is_empty(), "our declarations disagree with {}:\n{}", inc.display(), wrong.join("\n"));
}
