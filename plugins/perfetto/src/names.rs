//! Display names: file names (names arrive demangled by the host, as display texts).

/// The file name of a path (`/usr/lib/libgpu.so.1` → `libgpu.so.1`).
pub fn basename(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}
