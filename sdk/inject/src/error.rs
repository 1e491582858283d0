//! What can go wrong, each with what failed, on which process, why, and the fix where one is
//! known.

use std::path::PathBuf;

/// An injection that did not happen (the target was left as it was) or whose call failed in
/// the target (the target's thread was restored and released).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InjectError {
    /// This machine cannot inject (only x86_64 Linux is supported).
    #[error("injection into a running process is supported on x86_64 Linux only (this build is {0})")]
    Unsupported(&'static str),
    /// The process does not exist or cannot be read.
    #[error("failed to read process {pid}: {source}")]
    NoProcess {
        /// The process.
        pid: u32,
        /// The cause.
        source: std::io::Error,
    },
    /// The target is not an x86_64 program.
    #[error("process {pid} runs a {what} program; only x86_64 programs can be injected")]
    WrongArchitecture {
        /// The process.
        pid: u32,
        /// Its architecture.
        what: String,
    },
    /// Another debugger or profiler traces the target.
    #[error("process {pid} is already traced by {tracer_name} (pid {tracer}); detach it first (a debugger, strace, or another profiler's injector)")]
    AlreadyTraced {
        /// The process.
        pid: u32,
        /// The tracer.
        tracer: u32,
        /// The tracer's command name.
        tracer_name: String,
    },
    /// The target is stopped by job control.
    #[error("process {pid} is stopped (state T); continue it (kill -CONT {pid}) and attach again")]
    Stopped {
        /// The process.
        pid: u32,
    },
    /// ptrace was refused.
    #[error("not permitted to trace process {pid}: {hint}")]
    Permission {
        /// The process.
        pid: u32,
        /// What allows it.
        hint: String,
    },
    /// No `dlopen` in the target.
    #[error("process {pid} has no dynamic loader with dlopen mapped (looked for {looked}): a statically linked program (or one with an unusual libc) cannot load a library; start it under `xpuprof record` instead")]
    NoDlopen {
        /// The process.
        pid: u32,
        /// What was looked for.
        looked: String,
    },
    /// No thread of the target could be used.
    #[error("no thread of process {pid} can run the call safely: {why}")]
    NoThread {
        /// The process.
        pid: u32,
        /// Why each candidate was passed over.
        why: String,
    },
    /// A ptrace or memory operation failed.
    #[error("failed to {what} thread {tid} of process {pid}: {source}")]
    Ptrace {
        /// What was being done.
        what: &'static str,
        /// The process.
        pid: u32,
        /// The thread.
        tid: u32,
        /// The cause.
        source: std::io::Error,
    },
    /// The target exited while it was being injected.
    #[error("process {pid} exited during the injection")]
    Exited {
        /// The process.
        pid: u32,
    },
    /// The library does not exist or cannot be read here.
    #[error("failed to read the library {path}: {why}")]
    Library {
        /// The library.
        path: PathBuf,
        /// The cause.
        why: String,
    },
    /// The target cannot load the library: it does not see it at that path (a container's
    /// mount namespace) or its user may not read it.
    #[error("process {pid} cannot load {path}: {why}")]
    Unreachable {
        /// The process.
        pid: u32,
        /// The library.
        path: PathBuf,
        /// Why, and what to do.
        why: String,
    },
    /// `dlopen` returned NULL in the target.
    #[error("dlopen of {path} in process {pid} failed: {message}")]
    Dlopen {
        /// The process.
        pid: u32,
        /// The library.
        path: PathBuf,
        /// `dlerror()` in the target.
        message: String,
    },
    /// The loaded library does not export the function to call.
    #[error("{path} loaded in process {pid} exports no function {symbol}")]
    NoSymbol {
        /// The process.
        pid: u32,
        /// The library.
        path: PathBuf,
        /// The function.
        symbol: String,
    },
    /// The call did not come back.
    #[error("{call} in process {pid} {how}; its thread was restored and released")]
    CallFailed {
        /// The process.
        pid: u32,
        /// The function called.
        call: String,
        /// What happened instead (timed out, a signal at an address).
        how: String,
    },
}

impl InjectError {
    /// True for refusals made before anything in the target was changed.
    pub fn is_refusal(&self) -> bool {
        !matches!(
            self,
            Self::Dlopen { .. } | Self::NoSymbol { .. } | Self::CallFailed { .. } | Self::Exited { .. }
        )
    }
}

/// The error for a failed read of `/proc/PID/...`: a refusal of access is a missing permission.
pub(crate) fn proc_error(pid: u32, source: std::io::Error) -> InjectError {
    if source.kind() == std::io::ErrorKind::PermissionDenied {
        InjectError::Permission { pid, hint: permission_hint(pid) }
    } else {
        InjectError::NoProcess { pid, source }
    }
}

/// What allows this process to trace `pid`, for an `EPERM` from ptrace: the Yama setting, the
/// capability, and a target that made itself non-dumpable.
pub(crate) fn permission_hint(pid: u32) -> String {
    let yama = std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope").ok();
    let yama = yama.as_deref().map(str::trim);
    // This process's effective uid owns its /proc entry.
    let euid = std::fs::metadata("/proc/self").map(|m| std::os::unix::fs::MetadataExt::uid(&m)).unwrap_or(0);
    let owner = owner(pid);
    let mut parts = Vec::new();
    match yama {
        Some("1") => parts.push(
            "Yama ptrace_scope is 1 (/proc/sys/kernel/yama/ptrace_scope): only a parent may trace its children; \
             run xpuprof as root (sudo), grant it CAP_SYS_PTRACE, or set ptrace_scope to 0"
                .to_owned(),
        ),
        Some("2") => parts.push(
            "Yama ptrace_scope is 2 (/proc/sys/kernel/yama/ptrace_scope): only CAP_SYS_PTRACE may trace; run xpuprof as root (sudo)"
                .to_owned(),
        ),
        Some("3") => parts.push(
            "Yama ptrace_scope is 3 (/proc/sys/kernel/yama/ptrace_scope): ptrace is disabled until reboot; \
             start the program under `xpuprof record` instead"
                .to_owned(),
        ),
        _ => {}
    }
    if euid != 0 {
        if let Some(uid) = owner.filter(|&u| u != euid) {
            parts.push(format!(
                "the process belongs to uid {uid} and xpuprof runs as uid {euid}: run xpuprof as root (sudo) or as that user"
            ));
        }
    }
    parts.push(
        "without CAP_SYS_PTRACE a process can only be traced by its own user, and not once it made itself non-dumpable \
         (setuid programs, prctl(PR_SET_DUMPABLE, 0)); in a container add the capability (docker run --cap-add SYS_PTRACE)"
            .to_owned(),
    );
    parts.join("; ")
}

/// The real uid process `pid` runs as.
fn owner(pid: u32) -> Option<u32> {
    crate::target::status_field(pid, pid, "Uid")?.split_whitespace().next()?.parse().ok()
}
