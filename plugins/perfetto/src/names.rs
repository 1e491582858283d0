//! Display names: file names (names arrive demangled by the host, as display texts).

/// The file name of a path (`/usr/lib/libgpu.so.1` → `libgpu.so.1`).
pub fn basename(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// The executable's file name in a command line (`/usr/bin/python3 x.py` → `python3`).
pub fn exe_name(command: &str) -> &str {
    basename(command.split_whitespace().next().unwrap_or("process"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(exe_name("/usr/bin/python3.12 train.py"), "python3.12");
        assert_eq!(exe_name(""), "process");
    }
}
