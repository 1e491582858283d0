//! Names for people: Itanium C++ mangled names (`_Z...`, CUDA and HIP kernels, C++ functions)
//! demangled with `cpp_demangle`; anything else is already readable.
//!
//! The host demangles once, for every sink: it gives each string definition its display text
//! ([`set_display`]) live and on replay, under the session's one `demangle` switch. Sinks show
//! what [`crate::Definitions::str`] returns and never demangle themselves.

use std::borrow::Cow;

use xpuprof_sdk::model::StrDef;

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

/// Sets what people are shown of string definition `def` ([`StrDef::display`]): its demangled
/// form when `demangle` is on and its text is a mangled name, else empty (the text itself).
pub fn set_display(def: &mut StrDef, demangle: bool) {
    def.display = match demangle {
        true => self::demangle(&def.text).unwrap_or_default(),
        false => String::new(),
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use xpuprof_sdk::model::StrId;

    #[test]
    fn the_display_text_is_set_only_for_mangled_names_and_only_when_on() {
        let mut d = StrDef::new(StrId(1), "_Z10add_kernelPfS_i");
        set_display(&mut d, true);
        assert_eq!((d.text.as_str(), d.shown()), ("_Z10add_kernelPfS_i", "add_kernel(float*, float*, int)"));
        set_display(&mut d, false);
        assert_eq!(d.shown(), "_Z10add_kernelPfS_i");
        let mut plain = StrDef::new(StrId(2), "ampere_sgemm");
        set_display(&mut plain, true);
        assert!(plain.display.is_empty());
    }

    #[test]
    fn demangles_itanium_names_only() {
        assert_eq!(demangle("_Z10add_kernelPfS_i").as_deref(), Some("add_kernel(float*, float*, int)"));
        assert_eq!(demangle("ampere_sgemm"), None);
        assert_eq!(demangle("_Znot a symbol"), None);
        assert_eq!(display("cudaLaunchKernel"), "cudaLaunchKernel");
        assert_eq!(display("_Z3fooi"), "foo(int)");
    }
}
