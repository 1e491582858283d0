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

use xpuprof_sys_build::{find_headers, record_include_dir, rerun_if_env_changed, Bindings};

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
    rerun_if_env_changed(&["LEVEL_ZERO_INCLUDE_DIR"]);
    let dirs = candidates();
    let dir = find_headers(
        "Level Zero",
        "level_zero/ze_api.h",
        &dirs,
        "`apt-get install libze-dev` (Debian 12 ships loader 1.8.12), or set LEVEL_ZERO_INCLUDE_DIR to the folder \
         that contains level_zero/",
    );
    println!("cargo:rerun-if-changed={}", dir.join("level_zero/ze_api.h").display());
    Bindings {
        what: "Level Zero",
        header: "wrapper.h".into(),
        include_dirs: vec![dir.clone()],
        table: "ZeLoader",
        functions: &["ze.*", "zel.*", "zet.*", "zes.*"],
        types: &["_?ze.*", "_?zel.*", "_?zet.*", "_?zes.*"],
        vars: &["ZE_.*", "ZEL_.*", "ZET_.*", "ZES_.*"],
        enums_as_modules: true,
    }
    .generate();
    record_include_dir(&dir);
}
