//! Pins the version stamp `abi_stable` puts on this crate's type layouts to the plugin ABI.
//!
//! `abi_stable` stamps every `StableAbi` type with `CARGO_PKG_VERSION` and refuses a layout
//! stamped with another `0.x` minor, which would tie plugin compatibility to this crate's
//! version. The ABI identity is `ABI_VERSION` (`src/abi.rs`); the stamp is `0.<ABI_VERSION>.0`
//! (SDK 0.1.0, the first release, stamped `0.1.0`). The crate's real version is passed on as
//! `XPUPROF_SDK_VERSION`. A unit test in `src/abi.rs` checks that both places agree.

/// `0.<ABI_VERSION>.0`; change it together with `ABI_VERSION` only.
const ABI_STAMP: &str = "0.1.0";

fn main() {
    let real = std::env::var("CARGO_PKG_VERSION").expect("cargo sets CARGO_PKG_VERSION");
    println!("cargo:rustc-env=XPUPROF_SDK_VERSION={real}");
    println!("cargo:rustc-env=XPUPROF_ABI_STAMP={ABI_STAMP}");
    println!("cargo:rustc-env=CARGO_PKG_VERSION={ABI_STAMP}");
    println!("cargo:rerun-if-changed=build.rs");
}
