//! Display names. (Demangling moves to the host's one demangler when it lands; until then
//! each sink that shows kernel names demangles them itself.)

/// Demangles an Itanium C++ name (`_Z...`); `None` when `name` is not one.
pub fn demangle(name: &str) -> Option<String> {
    if !name.starts_with("_Z") {
        return None;
    }
    cpp_demangle::Symbol::new(name).ok()?.demangle().ok()
}

/// The file name of a path (`/usr/lib/libcuda.so.1` → `libcuda.so.1`).
pub fn basename(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}
