//! The one place this crate calls ptrace and waitpid: each call's status becomes an
//! `io::Result` here, so the rest of the crate never sees a raw return code.

use std::io;

/// The registers of a stopped thread (`PTRACE_GETREGS`).
pub type Regs = libc::user_regs_struct;

/// `NT_X86_XSTATE`: the whole extended register state (x87, SSE, AVX, AVX-512, ...).
const NT_X86_XSTATE: libc::c_int = 0x202;
/// Room for the extended state of any current x86_64 CPU (AMX tiles included: about 11 KiB).
const XSTATE_BYTES: usize = 16 * 1024;
/// `PTRACE_EVENT_STOP`: the stop `PTRACE_INTERRUPT` (or a group-stop) causes under `PTRACE_SEIZE`.
pub const EVENT_STOP: i32 = 128;

fn check(r: libc::c_long) -> io::Result<libc::c_long> {
    if r == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// `ptrace(request, tid, addr, data)`.
fn ptrace(request: libc::c_uint, tid: i32, addr: usize, data: usize) -> io::Result<libc::c_long> {
    // SAFETY: every request this module makes passes either plain numbers or a pointer to a local
    // buffer of the size the request writes (checked at each caller below).
    check(unsafe { libc::ptrace(request, tid, addr, data) })
}

/// Attaches to thread `tid` without stopping it (`PTRACE_SEIZE`, no options).
pub fn seize(tid: i32) -> io::Result<()> {
    ptrace(libc::PTRACE_SEIZE, tid, 0, 0).map(drop)
}

/// Stops a seized thread (`PTRACE_INTERRUPT`); the stop is then reported by [`wait`].
pub fn interrupt(tid: i32) -> io::Result<()> {
    ptrace(libc::PTRACE_INTERRUPT, tid, 0, 0).map(drop)
}

/// Resumes a stopped thread, delivering signal `sig` (0: none).
pub fn cont(tid: i32, sig: i32) -> io::Result<()> {
    ptrace(libc::PTRACE_CONT, tid, 0, sig as usize).map(drop)
}

/// Detaches from a stopped thread, delivering signal `sig` (0: none).
pub fn detach(tid: i32, sig: i32) -> io::Result<()> {
    ptrace(libc::PTRACE_DETACH, tid, 0, sig as usize).map(drop)
}

/// The general registers of a stopped thread.
pub fn get_regs(tid: i32) -> io::Result<Regs> {
    // SAFETY: an all-zero user_regs_struct is a valid value of this plain C struct.
    let mut r: Regs = unsafe { std::mem::zeroed() };
    ptrace(libc::PTRACE_GETREGS, tid, 0, &mut r as *mut Regs as usize)?;
    Ok(r)
}

/// Sets the general registers of a stopped thread.
pub fn set_regs(tid: i32, r: &Regs) -> io::Result<()> {
    ptrace(libc::PTRACE_SETREGS, tid, 0, r as *const Regs as usize).map(drop)
}

/// The extended register state of a stopped thread, as the kernel lays it out (its length is
/// what the kernel wrote).
pub fn get_xstate(tid: i32) -> io::Result<Vec<u8>> {
    let mut buf = vec![0u8; XSTATE_BYTES];
    let mut iov = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
    ptrace(libc::PTRACE_GETREGSET, tid, NT_X86_XSTATE as usize, &mut iov as *mut libc::iovec as usize)?;
    buf.truncate(iov.iov_len);
    Ok(buf)
}

/// Restores the extended register state [`get_xstate`] returned.
pub fn set_xstate(tid: i32, state: &[u8]) -> io::Result<()> {
    let mut copy = state.to_vec();
    let mut iov = libc::iovec { iov_base: copy.as_mut_ptr().cast(), iov_len: copy.len() };
    ptrace(libc::PTRACE_SETREGSET, tid, NT_X86_XSTATE as usize, &mut iov as *mut libc::iovec as usize)
        .map(drop)
}

/// What `waitpid` reported for a traced thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Stopped with signal `sig`; `event` is the ptrace event (0: a signal-delivery stop).
    Stopped { sig: i32, event: i32 },
    /// Exited or killed: nothing is left to restore.
    Gone,
}

/// Waits for a state change of thread `tid`; `Ok(None)` with `block == false` when there is none.
pub fn wait(tid: i32, block: bool) -> io::Result<Option<Status>> {
    let mut status = 0;
    let flags = libc::__WALL | if block { 0 } else { libc::WNOHANG };
    loop {
        // SAFETY: waitpid writes the status into a local.
        let r = unsafe { libc::waitpid(tid, &mut status, flags) };
        if r == -1 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if r == 0 {
            return Ok(None);
        }
        break;
    }
    Ok(Some(if libc::WIFSTOPPED(status) {
        Status::Stopped { sig: libc::WSTOPSIG(status), event: status >> 16 }
    } else {
        Status::Gone
    }))
}
