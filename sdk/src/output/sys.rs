//! The few `*at` system calls the output directory is walked, created and cleaned with, each
//! turned into an `io::Result` by [`check`]. `dir == None` means the current directory.

use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};

/// The one place a C status becomes a `Result`: -1 means `errno` holds the cause.
fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

fn raw(dir: Option<BorrowedFd<'_>>) -> RawFd {
    dir.map_or(libc::AT_FDCWD, |d| d.as_raw_fd())
}

fn c_name(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte in a name"))
}

/// `openat(dir, name, flags | O_CLOEXEC, mode)`.
pub fn openat(
    dir: Option<BorrowedFd<'_>>,
    name: &OsStr,
    flags: libc::c_int,
    mode: u32,
) -> io::Result<OwnedFd> {
    let name = c_name(name)?;
    // SAFETY: `name` is a NUL-terminated string that outlives the call; `dir` is an open fd or AT_FDCWD.
    let fd = check(unsafe { libc::openat(raw(dir), name.as_ptr(), flags | libc::O_CLOEXEC, mode) })?;
    // SAFETY: openat returned a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `mkdirat(dir, name, mode)`.
pub fn mkdirat(dir: Option<BorrowedFd<'_>>, name: &OsStr, mode: u32) -> io::Result<()> {
    let name = c_name(name)?;
    // SAFETY: as in `openat`.
    check(unsafe { libc::mkdirat(raw(dir), name.as_ptr(), mode as libc::mode_t) }).map(drop)
}

/// `unlinkat(dir, name, flags)` (`libc::AT_REMOVEDIR` removes an empty directory).
pub fn unlinkat(dir: BorrowedFd<'_>, name: &OsStr, flags: libc::c_int) -> io::Result<()> {
    let name = c_name(name)?;
    // SAFETY: as in `openat`.
    check(unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), flags) }).map(drop)
}

/// `fstatat(dir, name, AT_SYMLINK_NOFOLLOW)`: the entry itself, never a link's target.
pub fn lstatat(dir: Option<BorrowedFd<'_>>, name: &OsStr) -> io::Result<libc::stat> {
    let name = c_name(name)?;
    // SAFETY: a zeroed `stat` is a valid value for fstatat to fill.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: as in `openat`; `st` is a valid, writable `stat`.
    check(unsafe { libc::fstatat(raw(dir), name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) })?;
    Ok(st)
}

/// `fstat(fd)`, or the current directory's when `fd` is `None`.
pub fn fstat(fd: Option<BorrowedFd<'_>>) -> io::Result<libc::stat> {
    let Some(fd) = fd else { return lstatat(None, OsStr::new(".")) };
    // SAFETY: a zeroed `stat` is a valid value for fstat to fill.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `fd` is open; `st` is a valid, writable `stat`.
    check(unsafe { libc::fstat(fd.as_raw_fd(), &mut st) })?;
    Ok(st)
}

/// `readlinkat(dir, name)`: the text of a symbolic link.
pub fn readlinkat(dir: Option<BorrowedFd<'_>>, name: &OsStr) -> io::Result<OsString> {
    let name = c_name(name)?;
    let mut buf = vec![0u8; libc::PATH_MAX as usize];
    // SAFETY: as in `openat`; `buf` is writable for `buf.len()` bytes.
    let n = unsafe { libc::readlinkat(raw(dir), name.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    buf.truncate(n as usize);
    Ok(OsString::from_vec(buf))
}

/// `flock(fd, LOCK_EX | LOCK_NB)`: `Ok(false)` when another open description holds the lock.
pub fn try_lock(fd: BorrowedFd<'_>) -> io::Result<bool> {
    // SAFETY: `fd` is an open descriptor.
    match check(unsafe { libc::flock(fd.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) }) {
        Ok(_) => Ok(true),
        Err(e) if e.raw_os_error() == Some(libc::EWOULDBLOCK) => Ok(false),
        Err(e) => Err(e),
    }
}
