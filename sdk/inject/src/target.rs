//! What is checked about the target before anything touches it: its architecture, whether it is
//! traced or stopped, where its `dlopen` is, and which of its threads may run the call.

use std::path::Path;

use crate::elf::Loaded;
use crate::error::InjectError;
use crate::maps::{self, Mapping};

/// `RTLD_NOW`.
pub const RTLD_NOW: u64 = 2;
/// glibc's private flag that makes `__libc_dlopen_mode` behave like `dlopen`.
const RTLD_DLOPEN: u64 = 0x8000_0000;

/// True for the file names of libraries that may hold `dlopen`: glibc's libc (2.34 and later),
/// its libdl (before), musl's loader.
pub fn is_dl_library(name: &str) -> bool {
    ["libc.so", "libc-2.", "libdl.so", "libdl-2.", "ld-musl-"].iter().any(|p| name.starts_with(p))
}

/// The target's loader functions.
#[derive(Debug, Clone, Copy)]
pub struct DlFunctions {
    /// `dlopen` (or glibc's `__libc_dlopen_mode`).
    pub dlopen: u64,
    /// The `mode` argument that asks for an immediately bound load.
    pub mode: u64,
    /// `dlerror`, when the same library has it.
    pub dlerror: Option<u64>,
}

/// Finds `dlopen` in the libraries of `maps`.
pub fn dl_functions(pid: u32, maps: &[Mapping]) -> Result<DlFunctions, InjectError> {
    let mut seen: Vec<&str> = Vec::new();
    for m in maps.iter().filter(|m| m.offset == 0 && is_dl_library(maps::file_name(&m.path))) {
        if seen.contains(&m.path.as_str()) {
            continue;
        }
        seen.push(&m.path);
        let Ok(lib) = Loaded::read(&maps::mapped_file(pid, m), m) else { continue };
        if let Some(dlopen) = lib.function(&["dlopen"]) {
            return Ok(DlFunctions { dlopen, mode: RTLD_NOW, dlerror: lib.function(&["dlerror"]) });
        }
        if let Some(dlopen) = lib.function(&["__libc_dlopen_mode"]) {
            return Ok(DlFunctions { dlopen, mode: RTLD_NOW | RTLD_DLOPEN, dlerror: None });
        }
    }
    Err(InjectError::NoDlopen {
        pid,
        looked: if seen.is_empty() {
            "libc.so, libdl.so or ld-musl; none is mapped".to_owned()
        } else {
            format!("dlopen in {}", seen.join(", "))
        },
    })
}

/// One field of `/proc/PID/task/TID/status` (or `/proc/PID/status` with `tid == pid`).
pub(crate) fn status_field(pid: u32, tid: u32, key: &str) -> Option<String> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/status")).ok()?;
    text.lines().find_map(|l| l.strip_prefix(key)?.strip_prefix(':').map(|v| v.trim().to_owned()))
}

/// Refuses a target that is not x86_64, is stopped, or is traced by someone else.
pub fn preflight(pid: u32) -> Result<(), InjectError> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .map_err(|source| InjectError::NoProcess { pid, source })?;
    let exe = Path::new("/proc").join(pid.to_string()).join("exe");
    if let Some((arch, is_64)) = crate::elf::architecture(&exe) {
        if arch != object::Architecture::X86_64 || !is_64 {
            return Err(InjectError::WrongArchitecture { pid, what: format!("{arch:?}") });
        }
    }
    if status.lines().any(|l| l.starts_with("State:") && l.contains("T (stopped)")) {
        return Err(InjectError::Stopped { pid });
    }
    for tid in threads(pid) {
        let tracer: u32 = status_field(pid, tid, "TracerPid").and_then(|v| v.parse().ok()).unwrap_or(0);
        if tracer != 0 && tracer != std::process::id() {
            let tracer_name = std::fs::read_to_string(format!("/proc/{tracer}/comm"))
                .map(|s| s.trim().to_owned())
                .unwrap_or_else(|_| "another process".to_owned());
            return Err(InjectError::AlreadyTraced { pid, tracer, tracer_name });
        }
    }
    Ok(())
}

/// The threads of `pid`, the main thread first.
pub fn threads(pid: u32) -> Vec<u32> {
    let mut t: Vec<u32> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| d.flatten().filter_map(|e| e.file_name().to_str()?.parse().ok()).collect())
        .unwrap_or_default();
    t.sort_by_key(|&tid| (tid != pid, tid));
    t
}

/// Why thread `tid` should not run the call, if it should not: it blocks SIGSEGV (the fault
/// that ends the call would then reset the program's SIGSEGV handler), or it is not sleeping
/// (a running thread may be inside the allocator or the loader, whose locks `dlopen` takes).
pub fn unsuitable(pid: u32, tid: u32, want_sleeping: bool) -> Option<String> {
    const SEGV_BIT: u64 = 1 << (libc::SIGSEGV - 1);
    let mask = |key| status_field(pid, tid, key).and_then(|v| u64::from_str_radix(&v, 16).ok()).unwrap_or(0);
    if mask("SigBlk") & SEGV_BIT != 0 {
        return Some(format!("thread {tid} blocks SIGSEGV"));
    }
    if mask("SigIgn") & SEGV_BIT != 0 {
        return Some("the process ignores SIGSEGV".to_owned());
    }
    let state = status_field(pid, tid, "State").unwrap_or_default();
    if want_sleeping && !state.starts_with('S') {
        return Some(format!("thread {tid} is not sleeping ({state})"));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_this_process_dlopen() {
        let maps = maps::read(std::process::id()).unwrap();
        let f = dl_functions(std::process::id(), &maps).unwrap();
        assert_eq!(f.dlopen, libc::dlopen as *const () as u64);
        assert_eq!(f.dlerror, Some(libc::dlerror as *const () as u64));
        assert!(preflight(std::process::id()).is_ok());
        assert_eq!(threads(std::process::id())[0], std::process::id());
    }

    #[test]
    fn names_what_a_static_program_lacks() {
        let e = dl_functions(1, &[]).unwrap_err().to_string();
        assert!(e.contains("statically linked") && e.contains("none is mapped"), "{e}");
    }
}
