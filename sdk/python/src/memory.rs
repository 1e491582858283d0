//! Reading the interpreter's memory: in this process (the agent, at API entry) or in another one
//! (`process_vm_readv`, for samples and tests). The readers above this module see only
//! [`Memory`], so the same code decodes frames in both places.

use crate::Error;

/// A source of target memory.
pub trait Memory {
    /// Fills `buf` from `addr`, or fails without partial results.
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), Error>;

    /// The little-endian u64 at `addr`.
    fn u64(&self, addr: u64) -> Result<u64, Error> {
        let mut b = [0u8; 8];
        self.read(addr, &mut b)?;
        Ok(u64::from_le_bytes(b))
    }

    /// The little-endian u32 at `addr`.
    fn u32(&self, addr: u64) -> Result<u32, Error> {
        let mut b = [0u8; 4];
        self.read(addr, &mut b)?;
        Ok(u32::from_le_bytes(b))
    }

    /// The byte at `addr`.
    fn u8(&self, addr: u64) -> Result<u8, Error> {
        let mut b = [0u8; 1];
        self.read(addr, &mut b)?;
        Ok(b[0])
    }
}

/// This process's memory, read directly.
///
/// Only pointers that the interpreter's own structures hold (live thread states, frames, code
/// objects and their strings, which the calling thread's frames keep alive) are read through it;
/// null and misaligned pointers are refused before the read.
#[derive(Debug, Clone, Copy, Default)]
pub struct OwnMemory;

impl Memory for OwnMemory {
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), Error> {
        if addr < 4096 || addr.checked_add(buf.len() as u64).is_none() {
            return Err(Error::Read { addr, len: buf.len() });
        }
        // SAFETY: the callers read only objects the interpreter keeps alive for the calling
        // thread (see the type's docs); the address is not null and does not wrap.
        unsafe { std::ptr::copy_nonoverlapping(addr as *const u8, buf.as_mut_ptr(), buf.len()) };
        Ok(())
    }

    fn u64(&self, addr: u64) -> Result<u64, Error> {
        if addr < 4096 || addr % 8 != 0 {
            return Err(Error::Read { addr, len: 8 });
        }
        // SAFETY: aligned, non-null, inside a live interpreter object (see the type's docs).
        Ok(unsafe { std::ptr::read(addr as *const u64) })
    }
}

/// Another process's memory, through `process_vm_readv` (needs ptrace rights on it: root, or
/// the same user with `ptrace_scope` 0).
#[derive(Debug, Clone, Copy)]
pub struct ProcessMemory {
    /// The process read.
    pub pid: u32,
}

impl Memory for ProcessMemory {
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), Error> {
        let local = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
        let remote = libc::iovec { iov_base: addr as *mut libc::c_void, iov_len: buf.len() };
        // SAFETY: `local` describes `buf`, writable for its length; the kernel checks `remote`.
        let n = unsafe { libc::process_vm_readv(self.pid as libc::pid_t, &local, 1, &remote, 1, 0) };
        if n == buf.len() as isize {
            Ok(())
        } else {
            Err(Error::Read { addr, len: buf.len() })
        }
    }
}

/// Most ranges [`ProcessMemory::read_ranges`] reads in one call.
pub const MAX_RANGES: usize = 16;

impl ProcessMemory {
    /// Reads the ranges `at` (address, length) one after the other into `out`, in one
    /// `process_vm_readv` call (one system call however many ranges: what the repeated checks
    /// of other threads' state cost); false unless all of them were read whole. At most
    /// [`MAX_RANGES`] ranges, no more bytes than `out` holds.
    pub fn read_ranges(&self, at: &[(u64, usize)], out: &mut [u8]) -> bool {
        let n = at.len();
        let total: usize = at.iter().map(|r| r.1).sum();
        if n > MAX_RANGES || total > out.len() {
            return false;
        }
        let empty = libc::iovec { iov_base: std::ptr::null_mut(), iov_len: 0 };
        let mut remote = [empty; MAX_RANGES];
        for (r, &(addr, len)) in remote.iter_mut().zip(at) {
            *r = libc::iovec { iov_base: addr as *mut libc::c_void, iov_len: len };
        }
        let local = libc::iovec { iov_base: out.as_mut_ptr().cast(), iov_len: total };
        // SAFETY: `local` describes the first `total` bytes of `out`, writable; the kernel checks
        // `remote`.
        let got =
            unsafe { libc::process_vm_readv(self.pid as libc::pid_t, &local, 1, remote.as_ptr(), n as _, 0) };
        got == total as isize
    }
}

/// A byte slice standing for memory at `base` (unit tests and captured snapshots).
#[derive(Debug, Clone, Copy)]
pub struct SliceMemory<'a> {
    /// Address of `bytes[0]`.
    pub base: u64,
    /// The memory.
    pub bytes: &'a [u8],
}

impl Memory for SliceMemory<'_> {
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), Error> {
        let at = addr.checked_sub(self.base).ok_or(Error::Read { addr, len: buf.len() })? as usize;
        let src = self.bytes.get(at..at + buf.len()).ok_or(Error::Read { addr, len: buf.len() })?;
        buf.copy_from_slice(src);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_own_other_and_slice_memory() {
        let v: u64 = 0x1122_3344_5566_7788;
        let at = &v as *const u64 as u64;
        assert_eq!(OwnMemory.u64(at).unwrap(), v);
        assert!(OwnMemory.u64(0).is_err() && OwnMemory.u64(at + 1).is_err());
        assert_eq!(ProcessMemory { pid: std::process::id() }.u64(at).unwrap(), v);
        assert!(ProcessMemory { pid: std::process::id() }.u64(8).is_err());
        let s = SliceMemory { base: 0x1000, bytes: &[1, 2, 3, 4, 5] };
        assert_eq!(s.u32(0x1001).unwrap(), u32::from_le_bytes([2, 3, 4, 5]));
        assert!(s.u32(0x1002).is_err() && s.u8(0xfff).is_err());
    }

    #[test]
    fn reads_scattered_ranges_in_one_call() {
        let (a, b): (u64, u32) = (0x1122_3344_5566_7788, 0xaabb_ccdd);
        let at = [(&a as *const u64 as u64, 8), (&b as *const u32 as u64, 4), (&a as *const u64 as u64, 1)];
        let mem = ProcessMemory { pid: std::process::id() };
        let mut out = [0u8; 16];
        assert!(mem.read_ranges(&at, &mut out));
        assert_eq!(out[..8], a.to_le_bytes());
        assert_eq!(out[8..12], b.to_le_bytes());
        assert_eq!(out[12], 0x88);
        assert!(!mem.read_ranges(&[(at[0].0, 8), (8, 8)], &mut out), "an unreadable range fails the call");
        assert!(!mem.read_ranges(&[(at[0].0, 8), (at[0].0, 9)], &mut out), "more than `out` holds");
    }
}
