//! Generates the bindings with bindgen from `include/rocprofiler_sdk_decls.h`, the declarations
//! this project wrote from AMD's public rocprofiler-sdk documentation (no package reachable from
//! these machines installs the SDK's headers). Limited to the SDK's name patterns; the library
//! is never linked: bindgen's dynamic-loading mode generates the `RocprofilerSdk` function table,
//! filled from the library the process already mapped.

use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    println!("cargo:include={}", manifest.join("include").display());
    xpuprof_sys_build::Bindings {
        what: "rocprofiler-sdk",
        header: manifest.join("include/rocprofiler_sdk_decls.h"),
        include_dirs: Vec::new(),
        table: "RocprofilerSdk",
        functions: &["rocprofiler_.*"],
        types: &["rocprofiler_.*"],
        vars: &["ROCPROFILER_.*"],
        enums_as_modules: false,
    }
    .generate();
}
