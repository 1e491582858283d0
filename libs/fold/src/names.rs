//! Frame text: sanitising and kernel name shortening (the toolbox's). Names arrive demangled
//! by the host (the string definitions' display text).

use std::borrow::Cow;

/// Makes `name` safe as one folded frame: `;` (the frame separator) becomes `:`, and line
/// breaks and other control characters become spaces.
pub fn sanitize_frame(name: &str) -> Cow<'_, str> {
    if !name.chars().any(|c| c == ';' || c.is_control()) {
        return Cow::Borrowed(name);
    }
    Cow::Owned(
        name.chars()
            .map(|c| match c {
                ';' => ':',
                c if c.is_control() => ' ',
                c => c,
            })
            .collect(),
    )
}

pub use xpuprof_toolbox::kernel_name::short as shorten_kernel_name;

/// The file name of a module path (`/usr/lib/libcuda.so.1` → `libcuda.so.1`).
pub fn basename(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitize_replaces_separators_and_newlines() {
        assert_eq!(sanitize_frame("a;b\nc\r"), "a:b c ");
        assert!(matches!(sanitize_frame("plain name"), Cow::Borrowed(_)));
    }
}
