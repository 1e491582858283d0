//! # xpuprof-inject: load a library into a running process
//!
//! `xpuprof attach PID` brings a process that was not started under xpuprof into a session; its
//! GPU agent must then be loaded without restarting it. This crate does it the way debuggers call
//! functions in a target: it stops **one** thread with ptrace (`PTRACE_SEIZE` +
//! `PTRACE_INTERRUPT`; the others keep running), saves its registers (general and extended) and
//! makes it call the process's own `dlopen` (found in `/proc/PID/maps` and the dynamic symbols of
//! its libc, or libdl before glibc 2.34), then optionally a function the library exports (an
//! agent's attach function, with text and integer arguments), catches the return, puts every
//! register and overwritten byte back and detaches. A thread stopped inside a system call gets the
//! call restarted, as after a debugger's stop.
//!
//! ```no_run
//! use std::path::Path;
//! use xpuprof_inject::{inject, Arg, Request};
//!
//! let req = Request::new(Path::new("/opt/xpuprof/libxpuprof_cupti_agent.so"))
//!     .call("xpuprof_cupti_attach", vec![Arg::Text("/tmp/xpuprof-x/agent.sock".into()), Arg::Int(0)]);
//! let done = inject(4242, &req)?;
//! println!("thread {} ran it; it returned {:?}", done.tid, done.returned);
//! # Ok::<(), xpuprof_inject::InjectError>(())
//! ```
//!
//! **Never harms the target**: everything is checked before the first ptrace call (architecture,
//! another tracer, a job-control stop, a `dlopen` to call), refusals name the fix (Yama
//! `ptrace_scope`, `CAP_SYS_PTRACE`, a statically linked program), and once a thread is stopped
//! every path out (errors included) restores it and detaches ([`InjectError::is_refusal`] tells
//! whether anything ran in the target). The thread that runs the call is a sleeping one (inside a
//! system call, so neither in the allocator nor in the loader, whose locks `dlopen` takes) that
//! does not block SIGSEGV; only when none is found is a running thread used. A library already
//! loaded (the same file in the maps) is not loaded again: only its function is called.
//!
//! Limits: x86_64 Linux only; the library path must be valid inside the target's mount namespace
//! and readable by its user (both checked first: a refusal names the fix); a call that does not return within the timeout is interrupted and
//! reported (its thread is restored, but a lock taken inside the call may stay held).

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod call;
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod elf;
mod error;
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod inject;
mod maps;
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod reach;
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod sys;
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod target;
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod thread;

use std::path::{Path, PathBuf};
use std::time::Duration;

pub use error::InjectError;

/// An argument of the function called after loading.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Arg {
    /// An integer (or pointer-sized) value.
    Int(u64),
    /// Text, passed as a `const char*` to a NUL-terminated copy in the target.
    Text(String),
}

/// What to load and call.
#[derive(Debug, Clone)]
pub struct Request {
    /// The library, by a path valid in the target.
    pub library: PathBuf,
    /// A function the library exports and its arguments (at most six), called once it is loaded.
    pub call: Option<(String, Vec<Arg>)>,
    /// The longest each call in the target may take.
    pub timeout: Duration,
}

impl Request {
    /// Loads `library`; nothing called; 10 s per call in the target.
    pub fn new(library: &Path) -> Self {
        Self { library: library.to_path_buf(), call: None, timeout: Duration::from_secs(10) }
    }

    /// Then calls `symbol(args...)`.
    pub fn call(mut self, symbol: &str, args: Vec<Arg>) -> Self {
        self.call = Some((symbol.to_owned(), args));
        self
    }
}

/// What an injection did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Injected {
    /// The thread that ran the calls.
    pub tid: u32,
    /// The library was loaded before (only the function was called).
    pub already_loaded: bool,
    /// What the called function returned (`rax`), if one was called.
    pub returned: Option<u64>,
}

/// Loads `req.library` into process `pid` and calls `req.call`; see the crate documentation.
pub fn inject(pid: u32, req: &Request) -> Result<Injected, InjectError> {
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    {
        inject::run(pid, req)
    }
    #[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
    {
        let _ = (pid, req);
        Err(InjectError::Unsupported(std::env::consts::ARCH))
    }
}

/// True when process `pid` has `library` loaded (the same file in its maps).
pub fn is_loaded(pid: u32, library: &Path) -> Result<bool, InjectError> {
    let maps = maps::read(pid).map_err(|e| crate::error::proc_error(pid, e))?;
    Ok(maps::loaded(&maps, library).is_some())
}

/// True when process `pid` has a library whose file name starts with `prefix` loaded
/// (`libcuda.so`: a CUDA process).
pub fn maps_library(pid: u32, prefix: &str) -> Result<bool, InjectError> {
    maps_file(pid, |path| maps::file_name(path).starts_with(prefix))
}

/// True when process `pid` maps a file whose path `matches` (`/dev/nvidia`: a GPU device open).
pub fn maps_file(pid: u32, matches: impl Fn(&str) -> bool) -> Result<bool, InjectError> {
    let maps = maps::read(pid).map_err(|e| crate::error::proc_error(pid, e))?;
    Ok(maps.iter().any(|m| matches(&m.path)))
}
