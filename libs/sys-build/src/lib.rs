//! # xpuprof-sys-build: the bindgen setup of xpuprof's `-sys` crates
//!
//! Every `-sys` crate (CUPTI, Level Zero, rocprofiler-sdk, roctracer) binds a vendor library the
//! same way: it finds the vendor's headers (or uses declarations of its own), generates the
//! bindings with bindgen limited to the library's name patterns, never links the library (its
//! functions are a table filled when the agent loads it at run time, every entry optional so a
//! function an older library lacks is an error at the call, never a failed load), and writes
//! `bindings.rs` into `OUT_DIR`. A `build.rs` says only what is its own:
//!
//! ```no_run
//! let dirs = vec![std::path::PathBuf::from("/usr/include")];
//! let dir = xpuprof_sys_build::find_headers("Level Zero", "level_zero/ze_api.h", &dirs, "`apt-get install libze-dev`");
//! xpuprof_sys_build::Bindings {
//!     what: "Level Zero",
//!     header: "wrapper.h".into(),
//!     include_dirs: vec![dir.clone()],
//!     table: "ZeLoader",
//!     functions: &["ze.*"],
//!     types: &["_?ze.*"],
//!     vars: &["ZE_.*"],
//!     enums_as_modules: true,
//! }
//! .generate();
//! xpuprof_sys_build::record_include_dir(&dir);
//! ```
//!
//! Build scripts report failures by panicking with the message (cargo shows it): these functions
//! do the same, naming what was looked for and how to fix it.

use std::path::{Path, PathBuf};

/// One set of bindings: where the declarations are, what to take from them, and the name of the
/// generated function table.
#[derive(Debug, Clone)]
pub struct Bindings<'a> {
    /// The library, for messages (`CUPTI`).
    pub what: &'a str,
    /// The header bindgen reads (a crate's `wrapper.h`, or its own declarations).
    pub header: PathBuf,
    /// Folders searched for the headers it includes.
    pub include_dirs: Vec<PathBuf>,
    /// The name of the generated function table (`Cupti`: `Cupti::new(path)` loads the library).
    pub table: &'a str,
    /// Name patterns (regular expressions) of the functions to bind.
    pub functions: &'a [&'a str],
    /// Name patterns of the types to bind (besides those the functions use).
    pub types: &'a [&'a str],
    /// Name patterns of the constants to bind.
    pub vars: &'a [&'a str],
    /// C enums become modules of constants (`CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_KERNEL`)
    /// instead of prefixed constants.
    pub enums_as_modules: bool,
}

impl Bindings<'_> {
    /// Generates the bindings into `$OUT_DIR/bindings.rs` (and asks cargo to run the build
    /// again when the header changes).
    pub fn generate(&self) {
        cargo(format_args!("rerun-if-changed={}", self.header.display()));
        let mut b = bindgen::Builder::default()
            .header(self.header.display().to_string())
            .clang_args(self.include_dirs.iter().map(|d| format!("-I{}", d.display())));
        for f in self.functions {
            b = b.allowlist_function(f);
        }
        for t in self.types {
            b = b.allowlist_type(t);
        }
        for v in self.vars {
            b = b.allowlist_var(v);
        }
        if self.enums_as_modules {
            b = b.default_enum_style(bindgen::EnumVariation::ModuleConsts);
        }
        let bindings = b
            .dynamic_library_name(self.table)
            .dynamic_link_require_all(false)
            .derive_default(true)
            .derive_debug(true)
            .layout_tests(false)
            .generate_comments(false)
            .generate()
            .unwrap_or_else(|e| {
                panic!("failed to generate the {} bindings from {}: {e}", self.what, self.header.display())
            });
        bindings.write_to_file(out_dir().join("bindings.rs")).expect("failed to write bindings.rs");
    }
}

/// The first of `dirs` that holds `file` (a path relative to the folder); panics listing every
/// folder tried, with `hint` (how to install the headers or point at them).
pub fn find_headers(what: &str, file: &str, dirs: &[PathBuf], hint: &str) -> PathBuf {
    match dirs.iter().find(|d| d.join(file).is_file()) {
        Some(d) => d.clone(),
        None => panic!(
            "failed to find the {what} headers ({file}) in any of: {}\nhint: {hint}",
            dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", ")
        ),
    }
}

/// Tells dependents where the headers are (`DEP_<links>_INCLUDE` for the crates that build C
/// against them) and writes `$OUT_DIR/include_dir.txt` (the crate's `INCLUDE_DIR`).
pub fn record_include_dir(dir: &Path) {
    cargo(format_args!("include={}", dir.display()));
    std::fs::write(out_dir().join("include_dir.txt"), dir.display().to_string())
        .expect("failed to write include_dir.txt");
}

/// Asks cargo to run the build again when one of `vars` changes.
pub fn rerun_if_env_changed(vars: &[&str]) {
    for var in vars {
        cargo(format_args!("rerun-if-env-changed={var}"));
    }
}

/// Writes `cargo:<directive>`: a build script talks to cargo on its standard output.
#[allow(clippy::print_stdout)]
fn cargo(directive: std::fmt::Arguments<'_>) {
    println!("cargo:{directive}");
}

fn out_dir() -> PathBuf {
    PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR for build scripts"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_first_folder_holding_the_header() {
        let root = std::env::temp_dir().join(format!("xpuprof-sys-build-{}", std::process::id()));
        let (a, b) = (root.join("a"), root.join("b"));
        std::fs::create_dir_all(b.join("vendor")).unwrap();
        std::fs::create_dir_all(&a).unwrap();
        std::fs::write(b.join("vendor/api.h"), "").unwrap();
        assert_eq!(find_headers("Vendor", "vendor/api.h", &[a.clone(), b.clone()], "install it"), b);
        let missing = std::panic::catch_unwind(|| {
            find_headers("Vendor", "vendor/none.h", std::slice::from_ref(&a), "install it")
        });
        let msg = *missing.unwrap_err().downcast::<String>().unwrap();
        assert!(
            msg.contains("Vendor headers (vendor/none.h)") && msg.contains(&a.display().to_string()),
            "{msg}"
        );
        assert!(msg.ends_with("hint: install it"), "{msg}");
        std::fs::remove_dir_all(root).unwrap();
    }
}
