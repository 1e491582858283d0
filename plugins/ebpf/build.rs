//! Builds the BPF object and its libbpf-rs skeleton into OUT_DIR.
//!
//! `vmlinux.h` is generated here from the build machine's kernel BTF with bpftool, so nothing
//! generated is committed. Needs: clang, bpftool, /sys/kernel/btf/vmlinux (and for libbpf-sys:
//! libelf-dev, zlib1g-dev, pkg-config).

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

use libbpf_cargo::SkeletonBuilder;

const BTF: &str = "/sys/kernel/btf/vmlinux";
const SRC: &str = "src/bpf/profile.bpf.c";

fn main() {
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    if let Err(e) = generate_vmlinux_h(&out) {
        panic!("\n\nxpuprof-plugin-ebpf build: {e}\n\n");
    }
    let clang_args = [format!("-I{}", out.display()), "-Isrc/bpf".to_owned(), "-Wall".to_owned()];
    let skel = out.join("profile.skel.rs");
    if let Err(e) = SkeletonBuilder::new().source(SRC).clang_args(clang_args).build_and_generate(&skel) {
        panic!(
            "\n\nxpuprof-plugin-ebpf build: failed to compile {SRC}: {e:#}\n\
             hint: clang must be installed (apt-get install clang); errors above are from compiling the BPF C code\n\n"
        );
    }
    println!("cargo:rerun-if-changed=src/bpf");
    println!("cargo:rerun-if-changed=build.rs");
}

/// Writes `OUT_DIR/vmlinux.h` from the running kernel's BTF.
fn generate_vmlinux_h(out: &Path) -> Result<(), String> {
    if !Path::new(BTF).exists() {
        return Err(format!(
            "failed to find kernel BTF at {BTF}: this kernel was built without CONFIG_DEBUG_INFO_BTF\n\
             hint: build on a kernel with BTF (most distribution kernels since 5.8 have it)"
        ));
    }
    let output =
        Command::new("bpftool").args(["btf", "dump", "file", BTF, "format", "c"]).output().map_err(|e| {
            format!("failed to run bpftool: {e}\nhint: install bpftool (apt-get install bpftool)")
        })?;
    if !output.status.success() {
        return Err(format!(
            "failed to dump {BTF} with bpftool ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    std::fs::write(out.join("vmlinux.h"), &output.stdout)
        .map_err(|e| format!("failed to write {}/vmlinux.h: {e}", out.display()))
}
