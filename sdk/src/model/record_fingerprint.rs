//! The fingerprint of [`Record`]'s in-memory layout, which decides whether the host may lend a
//! sink the records it decoded instead of encoding them again.
//!
//! Rust does not promise a layout for `Record` (an enum of structs holding `String`s and
//! `Vec`s), but one compiler lays out one type definition for one target the same way every
//! time: the layout is a function of the compiler's version, the target, the flags given to
//! rustc and the type's source. The SDK's build script hashes exactly those (`build.rs`), and
//! [`record_layout`] adds the size and alignment. A host and a plugin with the same fingerprint
//! therefore see the same bytes as the same `&[Record]`; any difference (an older SDK, a grown
//! model, another compiler) makes the fingerprints differ and the host falls back to the batch
//! codec, the ABI's stable encoding. The fingerprint is never 0, which means "unknown".

use std::sync::OnceLock;

use super::Record;

/// The fingerprint of `Record`'s layout in this build (never 0).
pub fn record_layout() -> u64 {
    static LAYOUT: OnceLock<u64> = OnceLock::new();
    *LAYOUT.get_or_init(|| {
        let source = u64::from_str_radix(env!("XPUPROF_RECORD_LAYOUT"), 16).unwrap_or(0);
        let shape = (std::mem::size_of::<Record>() as u64) << 8 | std::mem::align_of::<Record>() as u64;
        (source ^ shape.wrapping_mul(0x9e37_79b9_7f4a_7c15)).max(1)
    })
}

#[cfg(test)]
#[path = "../../build/flags.rs"]
mod flags;

#[cfg(test)]
mod tests {
    use super::flags::layout_flags;
    use super::*;

    #[test]
    fn the_fingerprint_is_stable_and_never_unknown() {
        assert_ne!(record_layout(), 0);
        assert_eq!(record_layout(), record_layout());
    }

    #[test]
    fn flags_that_only_reach_the_linker_do_not_change_the_fingerprint() {
        let sep = |flags: &[&str]| flags.join("\x1f");
        let compress = "link-arg=-Wl,--compress-debug-sections=zlib";
        let plain = sep(&["-C", "target-cpu=native"]);
        for with_link in [
            sep(&["-C", compress, "-C", "target-cpu=native"]),
            sep(&["-C", "target-cpu=native", &format!("-C{compress}")]),
            sep(&["-C", "target-cpu=native", "-C", "link-args=-Wl,-z,now -Wl,-O1"]),
        ] {
            assert_eq!(layout_flags(&with_link), layout_flags(&plain), "{with_link:?}");
        }
        assert_eq!(layout_flags(""), "");
        assert_ne!(layout_flags(&sep(&["-C", "opt-level=3"])), layout_flags(""), "codegen flags count");
        assert_ne!(layout_flags(&sep(&["-Z", "randomize-layout"])), layout_flags(""), "layout flags count");
    }
}
