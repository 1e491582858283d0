//! Kernel names for tables and flame graph frames: the short form people read, and a stable id
//! that finds the full name again (in `summary.json`, in a flame graph's tooltip and search).
//!
//! Demangled GPU kernel names from C++ template libraries run to hundreds of characters
//! (PyTorch's elementwise kernels: 300 to 1,000), so every sink that shows them in a limited
//! space shows [`short`] and, where two different kernels share a short name, [`id`] beside it.

/// Shortens a demangled kernel name to its qualified function name: drops template arguments,
/// the parameter list and the return type.
///
/// `void at::native::elementwise_kernel<4, Functor<float>>(int, float*)` becomes
/// `at::native::elementwise_kernel`. Names without brackets are returned unchanged.
pub fn short(name: &str) -> String {
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

/// A stable id of a full kernel name: `#` and 8 hex digits of its 64-bit FNV-1a hash, folded to
/// 32 bits. The same name gives the same id in every run, sink and version (the hash is
/// spelled out here, not borrowed from a hasher whose output may change), so an id printed in
/// `summary.txt` or a flame graph finds the row of `summary.json` that holds the full name.
pub fn id(full_name: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in full_name.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("#{:08x}", (h ^ (h >> 32)) as u32)
}

/// The short name with the id beside it: `at::native::elementwise_kernel #1a2b3c4d`.
pub fn short_with_id(full_name: &str) -> String {
    format!("{} {}", short(full_name), id(full_name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shortens_templates_parameters_and_return_types() {
        assert_eq!(
            short("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int, float*)"),
            "at::native::vectorized_elementwise_kernel"
        );
        assert_eq!(short("add_kernel(float*, float*, int)"), "add_kernel");
        assert_eq!(short("ampere_sgemm_128x64_nn"), "ampere_sgemm_128x64_nn");
        assert_eq!(short("void (anonymous namespace)::k<1>()"), "{anonymous}::k");
    }

    #[test]
    fn ids_are_stable_and_tell_instantiations_apart() {
        // Pinned: ids are printed in reports that users compare across runs and versions.
        assert_eq!(id("add_kernel(float*, float*, int)"), id("add_kernel(float*, float*, int)"));
        assert_eq!(id("add_kernel(float*, float*, int)"), "#2161075b");
        assert_ne!(id("k<float>()"), id("k<double>()"));
        assert_eq!(id("a").len(), 9);
        assert_eq!(short_with_id("k<float>()"), format!("k {}", id("k<float>()")));
    }
}
