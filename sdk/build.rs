//! Pins the version stamp `abi_stable` puts on this crate's type layouts to the plugin ABI.
//!
//! `abi_stable` stamps every `StableAbi` type with `CARGO_PKG_VERSION` and refuses a layout
//! stamped with another `0.x` minor, which would tie plugin compatibility to this crate's
//! version. The ABI identity is `ABI_VERSION` (`src/abi.rs`); the stamp is `0.<ABI_VERSION>.0`
//! (SDK 0.1.0, the first release, stamped `0.1.0`). The crate's real version is passed on as
//! `XPUPROF_SDK_VERSION`. A unit test in `src/abi.rs` checks that both places agree.
//!
//! It also fingerprints what decides the in-memory layout of `model::Record`
//! (`XPUPROF_RECORD_LAYOUT`, see `src/model/record_fingerprint.rs`): the compiler's full version, the target,
//! the flags given to rustc (less those that only reach the linker, such as the workspace's
//! `-C link-arg=-Wl,--compress-debug-sections=zlib`), and the source of the model's types. Two
//! builds with the same fingerprint lay `Record` out identically, so the host may lend a sink its
//! decoded records.

#[path = "build/flags.rs"]
mod flags;

/// `0.<ABI_VERSION>.0`; change it together with `ABI_VERSION` only.
const ABI_STAMP: &str = "0.1.0";

fn main() {
    let real = std::env::var("CARGO_PKG_VERSION").expect("cargo sets CARGO_PKG_VERSION");
    println!("cargo:rustc-env=XPUPROF_SDK_VERSION={real}");
    println!("cargo:rustc-env=XPUPROF_ABI_STAMP={ABI_STAMP}");
    println!("cargo:rustc-env=CARGO_PKG_VERSION={ABI_STAMP}");
    println!("cargo:rustc-env=XPUPROF_RECORD_LAYOUT={:016x}", record_layout_fingerprint());
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src/model");
    println!("cargo:rerun-if-env-changed=RUSTFLAGS");
    println!("cargo:rerun-if-env-changed=CARGO_ENCODED_RUSTFLAGS");
}

/// FNV-1a over everything that decides `Record`'s layout (see the module docs).
fn record_layout_fingerprint() -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut add = |bytes: &[u8]| {
        for &b in bytes.iter().chain(&[0xff]) {
            h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    };
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
    let version = std::process::Command::new(&rustc)
        .arg("-vV")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| o.stdout)
        // Without the compiler's identity no two builds may claim the same layout.
        .unwrap_or_else(|| format!("unknown rustc {:?}", std::time::SystemTime::now()).into_bytes());
    add(&version);
    for var in ["TARGET", "CARGO_CFG_TARGET_FEATURE"] {
        add(std::env::var(var).unwrap_or_default().as_bytes());
    }
    add(flags::layout_flags(&std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default()).as_bytes());
    let dir = std::path::Path::new("src/model");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .expect("src/model exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .collect();
    files.sort();
    for f in files {
        add(f.file_name().unwrap_or_default().as_encoded_bytes());
        add(&std::fs::read(&f).expect("model source readable"));
    }
    h
}
