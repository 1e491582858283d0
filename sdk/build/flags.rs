//! Which rustc flags decide `Record`'s layout; shared by `build.rs` and its unit test
//! (`src/model/record_fingerprint.rs`).

/// The rustc flags (`CARGO_ENCODED_RUSTFLAGS`, separated by `\x1f`) less those that only reach
/// the linker: `-C link-arg(s)=…`, in one argument or two. Linking does not move a field.
pub fn layout_flags(encoded: &str) -> String {
    let link_only = |codegen: &str| codegen.starts_with("link-arg=") || codegen.starts_with("link-args=");
    let mut kept = Vec::new();
    let mut flags = encoded.split('\x1f').filter(|f| !f.is_empty());
    while let Some(f) = flags.next() {
        if f == "-C" {
            match flags.next() {
                Some(c) if link_only(c) => {}
                Some(c) => kept.extend(["-C", c]),
                None => kept.push(f),
            }
        } else if !f.strip_prefix("-C").is_some_and(link_only) {
            kept.push(f);
        }
    }
    kept.join("\x1f")
}
