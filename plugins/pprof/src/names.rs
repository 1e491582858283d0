//! Display names (names arrive demangled by the host, as display texts), Python frame texts and
//! the names pprof shows for functions.

use std::collections::{HashMap, HashSet};

use xpuprof_toolbox::kernel_name;

/// The file name of a path (`/usr/lib/libgpu.so.1` → `libgpu.so.1`).
pub fn basename(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// A Python frame as the sources name it, `function (file.py:line)`, taken apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PyFrame<'a> {
    /// `co_qualname` (`Module._call_impl`, `<module>`).
    pub function: &'a str,
    /// `co_filename`.
    pub file: &'a str,
    /// The line running.
    pub line: i64,
}

/// `text` taken apart when it is a Python frame's name, else `None`. A qualified name never
/// holds ` (`, a path may: the function ends at the first ` (`, the line starts after the last `:`.
pub fn python_frame(text: &str) -> Option<PyFrame<'_>> {
    let inner = text.strip_suffix(')')?;
    let (function, place) = inner.split_once(" (")?;
    let (file, line) = place.rsplit_once(':')?;
    if function.is_empty() || file.is_empty() || line.is_empty() || !line.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    Some(PyFrame { function, file, line: line.parse().ok()? })
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
    fn python_frames_are_taken_apart() {
        let f = python_frame("Module._call_impl (/venv/torch/nn/modules/module.py:1750)").unwrap();
        assert_eq!(
            (f.function, f.file, f.line),
            ("Module._call_impl", "/venv/torch/nn/modules/module.py", 1750)
        );
        let f = python_frame("<module> (<frozen importlib._bootstrap>:1360)").unwrap();
        assert_eq!((f.function, f.file, f.line), ("<module>", "<frozen importlib._bootstrap>", 1360));
        let f = python_frame("run (/home/me/My Project (copy)/x.py:3)").unwrap();
        assert_eq!((f.function, f.file), ("run", "/home/me/My Project (copy)/x.py"));
        assert_eq!(python_frame("add_kernel(float*, float*, int)"), None);
        assert_eq!(python_frame("f (x.py:)"), None);
        assert_eq!(python_frame("libc.so.6+0x1234"), None);
    }

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
