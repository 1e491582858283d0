//! Bounds on text that comes from plugins, before the host prints or stores it.
//!
//! A plugin's log messages and error strings are printed, and the strings it defines (names,
//! paths, loss causes) are stored for the whole session and written by sinks. A buggy plugin
//! once sent a 64 MiB loss cause that was printed whole, twice. Text past the cap is cut at a
//! character boundary and the cut is said, with the number of bytes dropped.

use std::borrow::Cow;

/// Longest log message or error string printed from a plugin, in bytes.
pub const MAX_MESSAGE_BYTES: usize = 4 * 1024;

/// Longest string definition stored from a source, in bytes. Generous: demangled C++ kernel
/// names of template libraries reach several KiB and must stay whole.
pub const MAX_STRING_BYTES: usize = 64 * 1024;

/// `text`, cut to at most `max` bytes (plus a note saying how much was cut).
pub fn cap(text: &str, max: usize) -> Cow<'_, str> {
    if text.len() <= max {
        return Cow::Borrowed(text);
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    Cow::Owned(format!("{}… [{} more bytes cut by xpuprof]", &text[..end], text.len() - end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_kept_as_is() {
        assert!(matches!(cap("loss", 8), Cow::Borrowed("loss")));
    }

    #[test]
    fn long_text_is_cut_and_says_so() {
        let t = "x".repeat(64 << 20);
        let c = cap(&t, MAX_MESSAGE_BYTES);
        assert!(c.len() < MAX_MESSAGE_BYTES + 64, "{}", c.len());
        assert!(c.ends_with(&format!("… [{} more bytes cut by xpuprof]", (64 << 20) - MAX_MESSAGE_BYTES)));
    }

    #[test]
    fn cuts_fall_on_character_boundaries() {
        assert_eq!(cap("ééé", 3), "é… [4 more bytes cut by xpuprof]");
    }
}
