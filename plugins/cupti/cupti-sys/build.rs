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

use xpuprof_sys_build::{find_headers, record_include_dir, rerun_if_env_changed, Bindings};

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
    rerun_if_env_changed(&["CUPTI_INCLUDE_DIR", "CUDA_HOME", "CUDA_PATH"]);
    let dirs = candidates();
    let cupti_dir = find_headers(
        "CUPTI",
        "cupti.h",
        &dirs,
        "set CUDA_HOME to a CUDA 13 toolkit, or `pip install nvidia-cuda-cupti==13.5.25 nvidia-cuda-runtime==13.5.37 nvidia-cuda-crt==13.5.37`",
    );
    // cuda.h and crt/host_defines.h may come from sibling folders (separate wheels or toolkit parts).
    let mut include_dirs = vec![cupti_dir.clone()];
    for d in &dirs {
        if d != &cupti_dir && (d.join("cuda.h").is_file() || d.join("crt/host_defines.h").is_file()) {
            include_dirs.push(d.clone());
        }
    }
    println!("cargo:rerun-if-changed={}", cupti_dir.join("cupti_version.h").display());
    Bindings {
        what: "CUPTI",
        header: "wrapper.h".into(),
        include_dirs,
        table: "Cupti",
        functions: &["cupti.*"],
        types: &["CUpti_.*", "CUptiResult"],
        vars: &["CUPTI_.*"],
        enums_as_modules: true,
    }
    .generate();
    record_include_dir(&cupti_dir);
}
