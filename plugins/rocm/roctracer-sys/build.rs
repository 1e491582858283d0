//! Generates the bindings with bindgen from `include/roctracer_decls.h`, the declarations this
//! project wrote from AMD's public roctracer documentation. Limited to roctracer's name
//! patterns; the library is never linked: the `Roctracer` function table is filled at run time.

use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let header = manifest.join("include/roctracer_decls.h");
    println!("cargo:rerun-if-changed={}", header.display());
    let bindings = bindgen::Builder::default()
        .header(header.display().to_string())
        .allowlist_function("roctracer_.*")
        .allowlist_type("roctracer_.*")
        .allowlist_type("activity_.*")
        .allowlist_type("hip_api_data_head_t")
        .allowlist_type("roctx_api_data_head_t")
        .allowlist_var("ROCTRACER_.*")
        .allowlist_var("ACTIVITY_.*")
        .allowlist_var("HIP_OP_ID_.*")
        .allowlist_var("ROCTX_API_ID_.*")
        .dynamic_library_name("Roctracer")
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
