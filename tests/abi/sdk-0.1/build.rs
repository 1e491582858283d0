//! Restores the package name SDK 0.1.0 was released under. A workspace cannot hold two packages
//! named `xpuprof-sdk`, so this copy has another name; `abi_stable` stamps every type layout with
//! the package name and version, and the stamp must be the one a real SDK 0.1.0 plugin carries.

fn main() {
    println!("cargo:rustc-env=CARGO_PKG_NAME=xpuprof-sdk");
    println!("cargo:rerun-if-changed=build.rs");
}
