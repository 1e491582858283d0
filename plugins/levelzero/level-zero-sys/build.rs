//! Generates the Level Zero bindings with bindgen from the installed headers.
//!
//! Header search order (the first directory holding `level_zero/ze_api.h` wins):
//! 1. `LEVEL_ZERO_INCLUDE_DIR` (the directory that contains `level_zero/`);
//! 2. `pkg-config --variable=includedir level-zero`;
//! 3. `/usr/include`, `/usr/local/include`.
//!
//! The loader is never linked: the agent resolves `libze_loader.so.1` at run time (bindgen's
//! dynamic loading mode generates the `ZeLoader` function table, every entry optional, so
//! functions a loader lacks are `Err`, never assumed from a version number).

use std::path::PathBuf;
use std::process::Command;

fn candidates() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(v) = std::env::var_os("LEVEL_ZERO_INCLUDE_DIR") {
        dirs.push(PathBuf::from(v));
    }
    if let Ok(out) = Command::new("pkg-config").args(["--variable=includedir", "level-zero"]).output() {
        let s = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if !s.is_empty() {
            dirs.push(PathBuf::from(s));
        }
    }
    dirs.push(PathBuf::from("/usr/include"));
    dirs.push(PathBuf::from("/usr/local/include"));
    dirs
}

fn main() {
    println!("cargo:rerun-if-env-changed=LEVEL_ZERO_INCLUDE_DIR");
    println!("cargo:rerun-if-changed=wrapper.h");
    let dirs = candidates();
    let Some(dir) = dirs.iter().find(|d| d.join("level_zero/ze_api.h").is_file()).cloned() else {
        panic!(
            "failed to find the Level Zero headers (level_zero/ze_api.h) in any of: {}\n\
             hint: `apt-get install libze-dev` (Debian 12 ships loader 1.8.12), or set LEVEL_ZERO_INCLUDE_DIR \
             to the folder that contains level_zero/",
            dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", ")
        );
    };
    println!("cargo:include={}", dir.display());
    println!("cargo:rerun-if-changed={}", dir.join("level_zero/ze_api.h").display());
    let bindings = bindgen::Builder::default()
        .header("wrapper.h")
        .clang_arg(format!("-I{}", dir.display()))
        .allowlist_function("ze.*")
        .allowlist_function("zel.*")
        .allowlist_function("zet.*")
        .allowlist_function("zes.*")
        .allowlist_type("_?ze.*")
        .allowlist_type("_?zel.*")
        .allowlist_type("_?zet.*")
        .allowlist_type("_?zes.*")
        .allowlist_var("ZE_.*")
        .allowlist_var("ZEL_.*")
        .allowlist_var("ZET_.*")
        .allowlist_var("ZES_.*")
        .default_enum_style(bindgen::EnumVariation::ModuleConsts)
        .dynamic_library_name("ZeLoader")
        .dynamic_link_require_all(false)
        .derive_default(true)
        .derive_debug(true)
        .layout_tests(false)
        .generate_comments(false)
        .generate()
        .unwrap_or_else(|e| panic!("failed to generate Level Zero bindings from {}: {e}", dir.display()));
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    bindings.write_to_file(out.join("bindings.rs")).expect("failed to write bindings.rs");
    std::fs::write(out.join("include_dir.txt"), dir.display().to_string())
        .expect("failed to write include_dir.txt");
}
