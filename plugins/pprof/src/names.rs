//! Display names (names arrive demangled by the host, as display texts) and the names pprof
//! shows for functions.

use std::collections::{HashMap, HashSet};

use xpuprof_toolbox::kernel_name;

/// The file name of a path (`/usr/lib/libgpu.so.1` → `libgpu.so.1`).
pub fn basename(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// True for a shared library's path (pprof's own test: `.so` at the end or before a version).
pub fn is_library(path: &str) -> bool {
    let name = basename(path);
    name.ends_with(".so") || name.contains(".so.") || name.contains(".so_")
}

/// The names pprof shows for native functions: a C++ name without its template arguments,
/// parameter list and return type, with a short id of the full name beside it where two
/// different full names would read the same (`at::native::vectorized_elementwise_kernel
/// #1a2b3c4d`), so instantiations stay apart. Names without brackets stay as they are.
#[derive(Debug, Default)]
pub struct Readable {
    by_short: HashMap<String, HashSet<String>>,
}

impl Readable {
    /// Notes full name `full` (before any [`Readable::name`]).
    pub fn add(&mut self, full: &str) {
        self.by_short.entry(kernel_name::short(full)).or_default().insert(full.to_owned());
    }

    /// The readable, unique name of `full`.
    pub fn name(&self, full: &str) -> String {
        let short = kernel_name::short(full);
        if short == full {
            return short;
        }
        match self.by_short.get(&short) {
            Some(fulls) if fulls.len() > 1 => format!("{short} {}", kernel_name::id(full)),
            _ => short,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libraries_are_told_from_executables() {
        assert!(is_library("/usr/lib/libgpu.so"));
        assert!(is_library("/usr/lib/x86_64-linux-gnu/libc.so.6"));
        assert!(!is_library("/usr/bin/python3.12"));
    }

    #[test]
    fn readable_names_keep_instantiations_apart() {
        let a =
            "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int, float*)";
        let b =
            "void at::native::vectorized_elementwise_kernel<4, at::native::AbsFunctor<float>>(int, float*)";
        let c = "void at::native::(anonymous namespace)::CatArrayBatchedCopy<float, 4>(float*)";
        let mut r = Readable::default();
        for n in [a, b, c, "PyObject_Call"] {
            r.add(n);
        }
        assert_ne!(r.name(a), r.name(b));
        assert!(r.name(a).starts_with("at::native::vectorized_elementwise_kernel #"), "{}", r.name(a));
        assert_eq!(r.name(c), "at::native::{anonymous}::CatArrayBatchedCopy");
        assert_eq!(r.name("PyObject_Call"), "PyObject_Call");
    }
}
