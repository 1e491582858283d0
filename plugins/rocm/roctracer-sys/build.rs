//! Generates the bindings with bindgen from `include/roctracer_decls.h`, the declarations this
//! project wrote from AMD's public roctracer documentation. Limited to roctracer's name
//! patterns; the library is never linked: the `Roctracer` function table is filled at run time.

use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    xpuprof_sys_build::Bindings {
        what: "roctracer",
        header: manifest.join("include/roctracer_decls.h"),
        include_dirs: Vec::new(),
        table: "Roctracer",
        functions: &["roctracer_.*"],
        types: &["roctracer_.*", "activity_.*", "hip_api_data_head_t", "roctx_api_data_head_t"],
        vars: &["ROCTRACER_.*", "ACTIVITY_.*", "HIP_OP_ID_.*", "ROCTX_API_ID_.*"],
        enums_as_modules: false,
    }
    .generate();
}
