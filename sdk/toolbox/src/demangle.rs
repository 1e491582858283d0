//! Names for people: Itanium C++ mangled names (`_Z...`, CUDA and HIP kernels, C++ functions)
//! demangled with `cpp_demangle`; anything else is already readable.

use std::borrow::Cow;

/// The demangled form of `name`, or `None` when it is not a mangled Itanium C++ name.
pub fn demangle(name: &str) -> Option<String> {
    if !name.starts_with("_Z") {
        return None;
    }
    cpp_demangle::Symbol::new(name).ok()?.demangle().ok()
}

/// `name` for display: demangled when it is mangled, unchanged otherwise.
pub fn display(name: &str) -> Cow<'_, str> {
    match demangle(name) {
        Some(d) => Cow::Owned(d),
        None => Cow::Borrowed(name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demangles_itanium_names_only() {
        assert_eq!(demangle("_Z10add_kernelPfS_i").as_deref(), Some("add_kernel(float*, float*, int)"));
        assert_eq!(demangle("ampere_sgemm"), None);
        assert_eq!(demangle("_Znot a symbol"), None);
        assert_eq!(display("cudaLaunchKernel"), "cudaLaunchKernel");
        assert_eq!(display("_Z3fooi"), "foo(int)");
    }
}
