//! Generates the bindings with bindgen from `include/rocprofiler_sdk_decls.h`, the declarations
//! this project wrote from AMD's public rocprofiler-sdk documentation (no package reachable from
//! these machines installs the SDK's headers). Limited to the SDK's name patterns; the library
//! is never linked: bindgen's dynamic-loading mode generates the `RocprofilerSdk` function table,
//! filled from the library the process already mapped.

use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let header = manifest.join("include/rocprofiler_sdk_decls.h");
    println!("cargo:rerun-if-changed={}", header.display());
    println!("cargo:include={}", manifest.join("include").display());
    let bindings = bindgen::Builder::default()
        .header(header.display().to_string())
        .allowlist_function("rocprofiler_.*")
        .allowlist_type("rocprofiler_.*")
        .allowlist_var("ROCPROFILER_.*")
        .dynamic_library_name("RocprofilerSdk")
        .dynamic_link_require_all(false)
        .derive_default(true)
        .derive_debug(true)
        .layout_tests(false)
        .generate_comments(false)
        .generate()
        .unwrap_or_else(|e| panic!("failed to generate bindings from {}: {e}", header.display()));
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    bindings.write_to_file(out.join("bindings.rs")).expect("failed to write bindings.rs");
}
