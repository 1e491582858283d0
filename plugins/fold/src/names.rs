//! Frame text: sanitising, kernel name shortening and demangling.

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

pub use xpuprof_toolbox::demangle::demangle;

/// Shortens a demangled kernel name to its qualified function name: drops template arguments,
/// the parameter list and the return type.
///
/// `void at::native::elementwise_kernel<4, Functor<float>>(int, float*)` becomes
/// `at::native::elementwise_kernel`. Names without brackets are returned unchanged.
pub fn shorten_kernel_name(name: &str) -> String {
    let name = name.replace("(anonymous namespace)", "{anonymous}");
    let mut out = String::with_capacity(name.len());
    let mut depth = 0usize;
    for c in name.chars() {
        match c {
            '<' | '(' | '[' => depth += 1,
            '>' | ')' | ']' => depth = depth.saturating_sub(1),
            c if depth == 0 => out.push(c),
            _ => {}
        }
    }
    // What is left of the return type and qualifiers sits before the last space.
    let trimmed = out.trim();
    let short = trimmed.rsplit(' ').next().unwrap_or(trimmed);
    if short.is_empty() {
        name.to_string()
    } else {
        short.to_string()
    }
}

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

    #[test]
    fn shortens_templates_parameters_and_return_types() {
        assert_eq!(
            shorten_kernel_name("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int, float*)"),
            "at::native::vectorized_elementwise_kernel"
        );
        assert_eq!(shorten_kernel_name("add_kernel(float*, float*, int)"), "add_kernel");
        assert_eq!(shorten_kernel_name("ampere_sgemm_128x64_nn"), "ampere_sgemm_128x64_nn");
        assert_eq!(shorten_kernel_name("void (anonymous namespace)::k<1>()"), "{anonymous}::k");
    }
}
