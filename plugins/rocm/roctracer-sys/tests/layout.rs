//! The record and property layouts, pinned (x86-64), and cross-checked against the roctracer
//! headers of the triton wheel (`triton/backends/amd/include/roctracer`) where it is installed.

use std::mem::{offset_of, size_of};
use std::process::Command;

use roctracer_sys::*;

type Fact = (&'static str, &'static str, usize, usize);

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
    for (t, f, ours, pinned) in facts() {
        assert_eq!(ours, pinned, "{t}.{f}");
    }
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

fn triton_include() -> Option<std::path::PathBuf> {
    let o = Command::new("python3")
        .args([
            "-c",
            "import importlib.util as u; s = u.find_spec('triton'); print(s.submodule_search_locations[0] if s else '')",
        ])
        .output()
        .ok()?;
    let dir = String::from_utf8_lossy(&o.stdout).trim().to_owned();
    let inc = std::path::Path::new(&dir).join("backends/amd/include/roctracer");
    inc.join("roctracer.h").is_file().then_some(inc)
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

#[test]
fn triton_headers_agree() {
    let Some(inc) = triton_include() else {
        let why = "the triton wheel's roctracer headers are not installed (pip install --no-deps triton; scripts/install-deps.sh does it)";
        assert!(std::env::var_os("CI").is_none(), "{why}: the cross-check cannot be skipped in CI");
        eprintln!("SKIPPED triton_headers_agree: {why}");
        return;
    };
    // C++: roctracer_hip.h pulls in the HIP headers, C++ on the AMD platform.
    let mut c = String::from(
        "#include <stdio.h>\n#include <stddef.h>\n#include <roctracer.h>\n#include <roctracer_hip.h>\n\
         #include <roctracer_roctx.h>\nint main(void) {\n",
    );
    let mut expect = Vec::new();
    for (t, f, ours, _) in facts() {
        let e = if f.is_empty() { format!("sizeof({t})") } else { format!("offsetof({t}, {f})") };
        c.push_str(&format!("  printf(\"%zu\\n\", (size_t){e});\n"));
        expect.push((format!("{t}.{f}"), ours));
    }
    for (m, at) in union_members() {
        c.push_str(&format!("  printf(\"%zu\\n\", (size_t)offsetof(activity_record_t, {m}));\n"));
        expect.push((format!("activity_record_t.{m}"), at));
    }
    for (n, v) in enum_values() {
        c.push_str(&format!("  printf(\"%zu\\n\", (size_t){n});\n"));
        expect.push((n.to_owned(), v as usize));
    }
    c.push_str("  return 0;\n}\n");
    let dir = std::env::temp_dir().join(format!("roctracer-sys-layout-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("facts.cpp"), c).unwrap();
    let o = Command::new("c++")
        .args(["-x", "c++", "-D__HIP_PLATFORM_AMD__", "-w", "-I"])
        .arg(&inc)
        .arg("-I")
        .arg(inc.parent().expect("the include folder"))
        .arg(dir.join("facts.cpp"))
        .arg("-o")
        .arg(dir.join("facts"))
        .output()
        .expect("run c++: install a C++ compiler (scripts/install-deps.sh)");
    assert!(
        o.status.success(),
        "compiling against {}: {}",
        inc.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    let out = Command::new(dir.join("facts")).output().unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let theirs: Vec<usize> =
        String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| l.parse().ok()).collect();
    assert_eq!(theirs.len(), expect.len());
    for ((what, ours), t) in expect.iter().zip(theirs) {
        assert_eq!(*ours, t, "{what}: ours vs triton's roctracer headers");
    }
}
