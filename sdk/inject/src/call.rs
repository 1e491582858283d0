//! Calling a function in the target on a stopped thread, the way debuggers do (x86_64 System V):
//! arguments in `rdi, rsi, rdx, rcx, r8, r9`, a 16-byte aligned stack below the thread's red zone
//! whose return address is 0, so that the function's `ret` faults and the thread stops again with
//! SIGSEGV at address 0, which is caught here and never delivered. The thread's own registers and
//! memory are put back by [`Stopped`] when it is released.

use std::time::{Duration, Instant};

use crate::error::InjectError;
use crate::sys::{self, Status};
use crate::thread::Stopped;

/// The System V red zone below `rsp` that leaf code may use without moving `rsp`.
const RED_ZONE: u64 = 128;
/// Most integer arguments passed in registers.
const MAX_ARGS: usize = 6;
/// The direction flag, which the ABI wants clear at a call.
const EFLAGS_DF: u64 = 0x400;

/// Scratch space on the stopped thread's stack, below its red zone, growing down.
#[derive(Debug)]
pub struct Scratch {
    next: u64,
}

impl Scratch {
    /// Scratch below the red zone of the thread's stack pointer.
    pub fn new(t: &Stopped) -> Self {
        Self { next: (t.regs.rsp - RED_ZONE - 256) & !15 }
    }

    /// Copies `text` with its NUL into the target; returns its address.
    pub fn text(&mut self, t: &mut Stopped, text: &str) -> Result<u64, InjectError> {
        let mut bytes = text.as_bytes().to_vec();
        bytes.push(0);
        self.next = (self.next - bytes.len() as u64) & !15;
        t.write(self.next, &bytes)?;
        Ok(self.next)
    }
}

/// Calls `func(args...)` on thread `t` and returns its result (`rax`); `name` names the call in
/// errors. A call that does not return within `timeout` is interrupted.
pub fn call(
    t: &mut Stopped,
    scratch: &Scratch,
    func: u64,
    args: &[u64],
    name: &str,
    timeout: Duration,
) -> Result<u64, InjectError> {
    assert!(args.len() <= MAX_ARGS, "at most {MAX_ARGS} arguments");
    let tid = t.tid as i32;
    // Return address 0 at rsp, with rsp + 8 16-byte aligned as at any function's entry.
    let rsp = ((scratch.next - 64) & !15) - 8;
    t.write(rsp, &0u64.to_le_bytes())?;
    let mut r = t.regs;
    for (reg, &a) in
        [&mut r.rdi, &mut r.rsi, &mut r.rdx, &mut r.rcx, &mut r.r8, &mut r.r9].into_iter().zip(args)
    {
        *reg = a;
    }
    r.rip = func;
    r.rsp = rsp;
    r.rax = 0;
    // Not in a system call: the kernel must not restart one into the called function (the
    // thread's own interrupted call restarts when its registers are put back).
    r.orig_rax = u64::MAX;
    r.eflags &= !EFLAGS_DF;
    sys::set_regs(tid, &r).map_err(|e| t.err("set up the call on", e))?;
    sys::cont(tid, 0).map_err(|e| t.err("resume", e))?;
    let deadline = Instant::now() + timeout;
    let mut interrupted = false;
    let mut pause = Duration::from_micros(50);
    loop {
        let status = sys::wait(tid, false).map_err(|e| t.err("wait for", e))?;
        let Some(status) = status else {
            if !interrupted && Instant::now() >= deadline {
                sys::interrupt(tid).map_err(|e| t.err("stop", e))?;
                interrupted = true;
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(5));
            continue;
        };
        let Status::Stopped { sig, event } = status else { return Err(t.gone()) };
        if event == 0 && sig == libc::SIGSEGV {
            let now = sys::get_regs(tid).map_err(|e| t.err("read the registers of", e))?;
            if now.rip == 0 {
                return Ok(now.rax);
            }
            return Err(failed(t, name, format!("faulted (SIGSEGV at {:#x})", now.rip)));
        }
        if interrupted && event == sys::EVENT_STOP {
            return Err(failed(
                t,
                name,
                format!(
                    "did not return within {} s (it may wait for a lock its thread held when it was stopped)",
                    timeout.as_secs()
                ),
            ));
        }
        // Another signal arrived during the call: the program's handler runs now, as it would
        // have at any other point. Stops of other kinds just resume.
        let deliver = if event == 0 { sig } else { 0 };
        sys::cont(tid, deliver).map_err(|e| t.err("resume", e))?;
    }
}

fn failed(t: &Stopped, call: &str, how: String) -> InjectError {
    InjectError::CallFailed { pid: t.pid, call: call.to_owned(), how }
}
