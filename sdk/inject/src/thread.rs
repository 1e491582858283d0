//! One thread of the target, stopped under ptrace, with everything needed to put it back: its
//! registers (general and extended), the signal it was about to receive, and every byte of its
//! memory that was overwritten. Dropping it restores all of that and detaches, so every path out
//! of an injection, failures included, leaves the thread as it was.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

use crate::error::InjectError;
use crate::sys::{self, Regs, Status};

/// Signals whose stop is job control: a stopped process is not resumed to run a call.
const STOP_SIGNALS: [i32; 4] = [libc::SIGSTOP, libc::SIGTSTP, libc::SIGTTIN, libc::SIGTTOU];

/// A stopped thread of the target.
#[derive(Debug)]
pub struct Stopped {
    pub(crate) pid: u32,
    pub(crate) tid: u32,
    /// The registers it stopped with.
    pub(crate) regs: Regs,
    /// `regs` holds what was read (only then are registers written back).
    have_regs: bool,
    xstate: Option<Vec<u8>>,
    mem: Option<File>,
    /// Overwritten memory: (address, old bytes), restored last first.
    saved: Vec<(u64, Vec<u8>)>,
    /// The signal it was about to receive when it stopped (delivered at detach).
    signal: i32,
    /// Nothing left to restore (released, or the thread is gone).
    done: bool,
}

impl Stopped {
    /// Attaches to thread `tid` of `pid` (`PTRACE_SEIZE`), stops it (`PTRACE_INTERRUPT`) and saves
    /// its state. On error the thread is running and detached.
    pub fn stop(pid: u32, tid: u32) -> Result<Self, InjectError> {
        let t = tid as i32;
        sys::seize(t).map_err(|e| match e.raw_os_error() {
            Some(libc::EPERM) => InjectError::Permission { pid, hint: crate::error::permission_hint(pid) },
            Some(libc::ESRCH) => InjectError::Exited { pid },
            _ => InjectError::Ptrace { what: "attach to", pid, tid, source: e },
        })?;
        let mut s = Self {
            pid,
            tid,
            // SAFETY: an all-zero user_regs_struct is a valid value of this plain C struct.
            regs: unsafe { std::mem::zeroed() },
            have_regs: false,
            xstate: None,
            mem: None,
            saved: Vec::new(),
            signal: 0,
            done: true,
        };
        if let Err(e) = sys::interrupt(t) {
            let _ = sys::detach(t, 0);
            return Err(s.err("stop", e));
        }
        match sys::wait(t, true).map_err(|e| s.err("wait for", e))? {
            Some(Status::Stopped { sig, event }) => {
                s.done = false;
                if event == sys::EVENT_STOP && STOP_SIGNALS.contains(&sig) {
                    return Err(InjectError::Stopped { pid });
                }
                if event == 0 {
                    s.signal = sig;
                }
            }
            _ => return Err(InjectError::Exited { pid }),
        }
        s.regs = sys::get_regs(t).map_err(|e| s.err("read the registers of", e))?;
        s.have_regs = true;
        s.xstate = Some(sys::get_xstate(t).map_err(|e| s.err("read the vector registers of", e))?);
        s.mem = Some(
            std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(format!("/proc/{pid}/mem"))
                .map_err(|e| s.err("open the memory of", e))?,
        );
        Ok(s)
    }

    pub(crate) fn err(&self, what: &'static str, source: io::Error) -> InjectError {
        InjectError::Ptrace { what, pid: self.pid, tid: self.tid, source }
    }

    /// True when the thread stopped inside a system call (which restarts when it is released).
    pub fn in_syscall(&self) -> bool {
        (self.regs.orig_rax as i64) >= 0
    }

    /// Writes `bytes` at `addr`, keeping what was there.
    pub fn write(&mut self, addr: u64, bytes: &[u8]) -> Result<(), InjectError> {
        let mut old = vec![0u8; bytes.len()];
        let mem = self
            .mem
            .as_ref()
            .ok_or_else(|| self.err("write the memory of", io::ErrorKind::NotConnected.into()))?;
        mem.read_exact_at(&mut old, addr).map_err(|e| self.err("read the memory of", e))?;
        mem.write_all_at(bytes, addr).map_err(|e| self.err("write the memory of", e))?;
        self.saved.push((addr, old));
        Ok(())
    }

    /// Reads the NUL-terminated text at `addr` (at most `max` bytes).
    pub fn read_text(&self, addr: u64, max: usize) -> String {
        let mut buf = vec![0u8; max];
        let n = self.mem.as_ref().and_then(|m| m.read_at(&mut buf, addr).ok()).unwrap_or(0);
        buf.truncate(n);
        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        String::from_utf8_lossy(&buf[..end]).into_owned()
    }

    /// The thread is gone: nothing to restore.
    pub(crate) fn gone(&mut self) -> InjectError {
        self.done = true;
        InjectError::Exited { pid: self.pid }
    }

    /// Puts back the memory and registers, and detaches with the signal it was about to get.
    pub fn release(mut self) -> Result<(), InjectError> {
        self.restore()
    }

    fn restore(&mut self) -> Result<(), InjectError> {
        if self.done {
            return Ok(());
        }
        self.done = true;
        let t = self.tid as i32;
        let mut first: Option<InjectError> = None;
        if let Some(mem) = &self.mem {
            for (addr, old) in self.saved.iter().rev() {
                if let Err(e) = mem.write_all_at(old, *addr) {
                    first.get_or_insert(InjectError::Ptrace {
                        what: "restore the memory of",
                        pid: self.pid,
                        tid: self.tid,
                        source: e,
                    });
                }
            }
        }
        if let Some(x) = &self.xstate {
            if let Err(e) = sys::set_xstate(t, x) {
                first.get_or_insert(self.err("restore the vector registers of", e));
            }
        }
        if self.have_regs {
            if let Err(e) = sys::set_regs(t, &self.regs) {
                first.get_or_insert(self.err("restore the registers of", e));
            }
        }
        if let Err(e) = sys::detach(t, self.signal) {
            first.get_or_insert(self.err("detach from", e));
        }
        first.map_or(Ok(()), Err)
    }
}

impl Drop for Stopped {
    fn drop(&mut self) {
        let _ = self.restore();
    }
}
