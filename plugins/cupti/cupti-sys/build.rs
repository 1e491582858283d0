//! Generates the CUPTI bindings with bindgen from the CUDA/CUPTI headers.
//!
//! Header search order (the first directory holding `cupti.h` wins):
//! 1. `CUPTI_INCLUDE_DIR`;
//! 2. `CUDA_HOME` / `CUDA_PATH`: `include`, `targets/x86_64-linux/include`, `extras/CUPTI/include`;
//! 3. the `nvidia/cu13/include` folder of the pip wheels `nvidia-cuda-cupti`,
//!    `nvidia-cuda-runtime` and `nvidia-cuda-crt` (found through `python3`);
//! 4. `/usr/local/cuda/...`.
//!
//! The library is never linked: the agent loads `libcupti.so` at run time (bindgen's dynamic
//! loading mode generates the `Cupti` function table).

use std::path::{Path, PathBuf};
use std::process::Command;

fn cuda_roots() -> Vec<PathBuf> {
    let mut roots = Vec::new();
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(v) = std::env::var_os(var) {
            roots.push(PathBuf::from(v));
        }
    }
    roots
}

fn include_dirs_of(root: &Path) -> Vec<PathBuf> {
    ["include", "targets/x86_64-linux/include", "extras/CUPTI/include"].iter().map(|d| root.join(d)).collect()
}

fn wheel_include_dirs() -> Vec<PathBuf> {
    let script = "import nvidia, os\nfor p in nvidia.__path__:\n    for d in sorted(os.listdir(p), reverse=True):\n        print(os.path.join(p, d, 'include'))\n    print(os.path.join(p, 'cuda_cupti', 'include'))";
    let Ok(out) = Command::new("python3").arg("-c").arg(script).output() else { return Vec::new() };
    String::from_utf8_lossy(&out.stdout).lines().map(PathBuf::from).collect()
}

fn candidates() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(v) = std::env::var_os("CUPTI_INCLUDE_DIR") {
        dirs.push(PathBuf::from(v));
    }
    for root in cuda_roots() {
        dirs.extend(include_dirs_of(&root));
    }
    dirs.extend(wheel_include_dirs());
    dirs.extend(include_dirs_of(Path::new("/usr/local/cuda")));
    dirs
}

fn main() {
    for var in ["CUPTI_INCLUDE_DIR", "CUDA_HOME", "CUDA_PATH"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    println!("cargo:rerun-if-changed=wrapper.h");
    let dirs = candidates();
    let Some(cupti_dir) = dirs.iter().find(|d| d.join("cupti.h").is_file()).cloned() else {
        panic!(
            "failed to find the CUPTI headers (cupti.h) in any of: {}\nhint: set CUDA_HOME to a CUDA 13 toolkit, or `pip install nvidia-cuda-cupti==13.5.25 nvidia-cuda-runtime==13.5.37 nvidia-cuda-crt==13.5.37`",
            dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", ")
        );
    };
    // cuda.h and crt/host_defines.h may come from sibling folders (separate wheels or toolkit parts).
    let mut clang_args = vec![format!("-I{}", cupti_dir.display())];
    for d in &dirs {
        if d != &cupti_dir && (d.join("cuda.h").is_file() || d.join("crt/host_defines.h").is_file()) {
            clang_args.push(format!("-I{}", d.display()));
        }
    }
    println!("cargo:include={}", cupti_dir.display());
    println!("cargo:rerun-if-changed={}", cupti_dir.join("cupti_version.h").display());
    let bindings = bindgen::Builder::default()
        .header("wrapper.h")
        .clang_args(&clang_args)
        .allowlist_function("cupti.*")
        .allowlist_type("CUpti_.*")
        .allowlist_type("CUptiResult")
        .allowlist_var("CUPTI_.*")
        .default_enum_style(bindgen::EnumVariation::ModuleConsts)
        .dynamic_library_name("Cupti")
        .dynamic_link_require_all(false)
        .derive_default(true)
        .derive_debug(true)
        .layout_tests(false)
        .generate_comments(false)
        .generate()
        .unwrap_or_else(|e| panic!("failed to generate CUPTI bindings from {}: {e}", cupti_dir.display()));
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    bindings.write_to_file(out.join("bindings.rs")).expect("failed to write bindings.rs");
    std::fs::write(out.join("include_dir.txt"), cupti_dir.display().to_string())
        .expect("failed to write include_dir.txt");
}
