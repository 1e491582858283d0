//! The record and property layouts, pinned (x86-64), and cross-checked against the roctracer
//! headers of the triton wheel (`triton/backends/amd/include/roctracer`) where it is installed.

use std::mem::{offset_of, size_of};

use roctracer_sys::*;
use xpuprof_testkit::struct_offsets::{self, Check, Fact};

fn facts() -> Vec<Fact> {
    vec![
        ("activity_record_t", "", size_of::<activity_record_t>(), 64),
        ("activity_record_t", "domain", offset_of!(activity_record_t, domain), 0),
        ("activity_record_t", "kind", offset_of!(activity_record_t, kind), 4),
        ("activity_record_t", "op", offset_of!(activity_record_t, op), 8),
        ("activity_record_t", "correlation_id", offset_of!(activity_record_t, __bindgen_anon_1), 16),
        ("activity_record_t", "device_id", offset_of!(activity_record_t, __bindgen_anon_2), 40),
        ("activity_record_t", "bytes", offset_of!(activity_record_t, __bindgen_anon_3), 56),
        ("roctracer_properties_t", "", size_of::<roctracer_properties_t>(), 48),
        ("roctracer_properties_t", "buffer_size", offset_of!(roctracer_properties_t, buffer_size), 8),
        (
            "roctracer_properties_t",
            "buffer_callback_fun",
            offset_of!(roctracer_properties_t, buffer_callback_fun),
            32,
        ),
    ]
}

/// The members inside the anonymous unions, at the offsets named above.
fn union_members() -> Vec<(&'static str, usize)> {
    vec![("begin_ns", 24), ("end_ns", 32), ("queue_id", 48), ("kernel_name", 56)]
}

#[test]
fn sizes_and_offsets_are_pinned() {
    let wrong = struct_offsets::pinned_mismatches(&facts());
    assert!(wrong.is_empty(), "layouts moved:\n{}", wrong.join("\n"));
    let r = activity_record_t::default();
    let base = &r as *const _ as usize;
    // SAFETY: only addresses of union members are taken, nothing is read.
    let at = unsafe {
        [
            &r.__bindgen_anon_1.__bindgen_anon_1.begin_ns as *const _ as usize,
            &r.__bindgen_anon_1.__bindgen_anon_1.end_ns as *const _ as usize,
            &r.__bindgen_anon_2.__bindgen_anon_1.queue_id as *const _ as usize,
            &r.__bindgen_anon_3.kernel_name as *const _ as usize,
        ]
    };
    for ((name, pinned), addr) in union_members().into_iter().zip(at) {
        assert_eq!(addr - base, pinned, "activity_record_t.{name}");
    }
    assert_eq!(size_of::<hip_api_data_head_t>(), 16);
    assert_eq!(offset_of!(hip_api_data_head_t, phase), 8);
}

/// Constant values xpuprof uses, compared with the triton headers' enums.
fn enum_values() -> Vec<(&'static str, i64)> {
    macro_rules! values { ($($n:ident),* $(,)?) => { vec![$((stringify!($n), $n as i64)),*] }; }
    values![
        ACTIVITY_DOMAIN_HSA_API,
        ACTIVITY_DOMAIN_HSA_OPS,
        ACTIVITY_DOMAIN_HIP_OPS,
        ACTIVITY_DOMAIN_HIP_API,
        ACTIVITY_DOMAIN_ROCTX,
        ACTIVITY_API_PHASE_ENTER,
        ACTIVITY_API_PHASE_EXIT,
        HIP_OP_ID_DISPATCH,
        HIP_OP_ID_COPY,
        HIP_OP_ID_BARRIER,
        ROCTX_API_ID_roctxMarkA,
        ROCTX_API_ID_roctxRangePushA,
        ROCTX_API_ID_roctxRangePop,
    ]
}

/// Every fact, union member and constant, measured by a C++ compiler from triton's headers,
/// must equal our bindings'.
#[test]
fn triton_headers_agree() {
    let Some(inc) = struct_offsets::triton_amd_include("roctracer/roctracer.h") else { return };
    // C++: roctracer_hip.h pulls in the HIP headers, C++ on the AMD platform.
    let headers = ["roctracer.h", "roctracer_hip.h", "roctracer_roctx.h"];
    let checks: Vec<Check> = facts()
        .iter()
        .map(Check::fact)
        .chain(union_members().into_iter().map(|(m, at)| Check {
            what: format!("activity_record_t.{m}"),
            expr: format!("offsetof(activity_record_t, {m})"),
            ours: at as i64,
        }))
        .chain(enum_values().into_iter().map(|(n, v)| Check::value(n, v)))
        .collect();
    let wrong = struct_offsets::disagreements(&[inc.join("roctracer"), inc.clone()], &headers, &checks);
    assert!(wrong.is_empty(), "our declarations disagree with {}:\n{}", inc.display(), wrong.join("\n"));
}
