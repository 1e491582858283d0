//! The executable mappings of this process (`/proc/self/maps`), sent to the host so it can turn
//! return addresses into module + file offset even after the process is gone; re-sent when a new
//! stack uses an address outside them (a library loaded later, JIT code).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::RwLock;

use crate::wire::maps::{self, Mapping};

/// This process's executable mappings now.
pub fn own() -> Vec<Mapping> {
    let text = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    maps::parse(&text).into_iter().filter(|m| m.exec).collect()
}

/// Executable ranges of the mapped files whose canonical path is one of `files` (the agent's own
/// code and the vendor library: leading launch-stack frames inside them are instrumentation).
pub fn ranges_of(files: &[&str]) -> Vec<(u64, u64)> {
    let wanted: Vec<_> = files.iter().filter_map(|f| std::fs::canonicalize(f).ok()).collect();
    own()
        .into_iter()
        .filter(|m| m.is_file() && std::fs::canonicalize(&m.path).is_ok_and(|p| wanted.contains(&p)))
        .map(|m| (m.start, m.end))
        .collect()
}

/// The path of the agent's own library (the kit is linked into it), from `dladdr` on one of the
/// kit's functions, canonical when it can be.
pub fn own_path() -> Option<String> {
    let mut info = libc::Dl_info {
        dli_fname: std::ptr::null(),
        dli_fbase: std::ptr::null_mut(),
        dli_sname: std::ptr::null(),
        dli_saddr: std::ptr::null_mut(),
    };
    // SAFETY: dladdr only reads the address and fills `info`, a valid out-pointer.
    if unsafe { libc::dladdr(own_path as *const () as *const libc::c_void, &mut info) } == 0
        || info.dli_fname.is_null()
    {
        return None;
    }
    // SAFETY: dladdr returned a valid NUL-terminated path.
    let p = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) }.to_string_lossy().into_owned();
    Some(std::fs::canonicalize(&p).map(|c| c.display().to_string()).unwrap_or(p))
}

/// The ranges known to the host, and whether a stack used an address outside them.
#[derive(Debug, Default)]
pub struct Known {
    ranges: RwLock<Vec<(u64, u64)>>,
    stale: AtomicBool,
}

impl Known {
    /// Re-reads `/proc/self/maps`; returns the module message to send.
    pub fn refresh(&self) -> Vec<u8> {
        let maps = own();
        let mut ranges: Vec<(u64, u64)> = maps.iter().map(|m| (m.start, m.end)).collect();
        ranges.sort_unstable();
        if let Ok(mut r) = self.ranges.write() {
            *r = ranges;
        }
        self.stale.store(false, Ordering::Release);
        let mut out = Vec::new();
        maps::encode_modules(&maps, &mut out);
        out
    }

    /// Notes the addresses of a new stack; marks the map stale if one is outside every range.
    pub fn check(&self, addrs: &[u64]) {
        let Ok(r) = self.ranges.read() else { return };
        let outside = addrs.iter().filter(|&&a| !crate::wire::is_python_frame(a)).any(|&a| {
            let i = r.partition_point(|&(s, _)| s <= a);
            i == 0 || a >= r[i - 1].1
        });
        if outside {
            self.stale.store(true, Ordering::Release);
        }
    }

    /// True (once) when a refresh is due.
    pub fn take_stale(&self) -> bool {
        self.stale.swap(false, Ordering::AcqRel)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_addresses_outside_known_ranges() {
        let k = Known::default();
        *k.ranges.write().unwrap() = vec![(0x1000, 0x2000), (0x5000, 0x6000)];
        k.check(&[0x1500, 0x5fff]);
        assert!(!k.take_stale());
        k.check(&[0x1500, crate::wire::PY_FRAME_TAG | 3]);
        assert!(!k.take_stale(), "python frames are not addresses");
        k.check(&[0x1500, 0x3000]);
        assert!(k.take_stale());
        assert!(!k.take_stale());
    }

    #[test]
    fn finds_the_ranges_of_this_test_binary() {
        let exe = std::env::current_exe().unwrap();
        let r = ranges_of(&[exe.to_str().unwrap()]);
        let here = ranges_of as *const () as usize as u64;
        assert!(r.iter().any(|&(s, e)| s <= here && here < e), "{r:x?}");
    }
}
