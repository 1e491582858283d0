//! The profiled command: resolved, forked and held before `exec` so sources can attach first,
//! then released; its exit status mapped to xpuprof's exit code.

use std::ffi::{CString, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::runas::RunAs;
use crate::signals::FORWARDED;

/// Why the command could not be started.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SpawnError {
    /// No such file, or not found in `PATH` (exit code 127).
    #[error("command not found: {0}")]
    NotFound(String),
    /// The file exists, but the interpreter of its `#!` line or its ELF dynamic loader does
    /// not (exit code 127, as the shells say).
    #[error("cannot execute {path}: {interpreter} was not found; {hint}")]
    MissingInterpreter {
        /// The file.
        path: String,
        /// What is missing, in words (`its interpreter /x (from its #! line)`).
        interpreter: String,
        /// The fix.
        hint: String,
    },
    /// Found but cannot be executed (exit code 126).
    #[error("cannot execute {path}: {reason}")]
    NotExecutable {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
    /// An operating-system call failed (exit code 125).
    #[error("failed to start the command: {0}")]
    Os(String),
}

impl SpawnError {
    /// The exit code this error maps to.
    pub fn exit_code(&self) -> i32 {
        match self {
            Self::NotFound(_) | Self::MissingInterpreter { .. } => 127,
            Self::NotExecutable { .. } => 126,
            Self::Os(_) => 125,
        }
    }
}

/// Finds the executable the way `execvp` would, so that "not found" and "not executable" are
/// told apart before anything is forked.
pub fn resolve(program: &str) -> Result<PathBuf, SpawnError> {
    if program.is_empty() {
        return Err(SpawnError::NotFound("(empty command)".into()));
    }
    if program.contains('/') {
        return check_executable(Path::new(program)).map(|()| PathBuf::from(program));
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
    let mut not_exec = None;
    for dir in std::env::split_paths(&path) {
        let cand = dir.join(program);
        if cand.exists() {
            match check_executable(&cand) {
                Ok(()) => return Ok(cand),
                Err(e) => not_exec = not_exec.or(Some(e)),
            }
        }
    }
    Err(not_exec.unwrap_or_else(|| SpawnError::NotFound(format!("{program} (searched PATH)"))))
}

fn check_executable(p: &Path) -> Result<(), SpawnError> {
    let meta = std::fs::metadata(p).map_err(|_| SpawnError::NotFound(p.display().to_string()))?;
    let path = p.display().to_string();
    if meta.is_dir() {
        return Err(SpawnError::NotExecutable { path, reason: "it is a directory".into() });
    }
    if meta.permissions().mode() & 0o111 == 0 {
        return Err(SpawnError::NotExecutable {
            path,
            reason: "it is not executable (no execute permission); fix with chmod +x".into(),
        });
    }
    Ok(())
}

/// A forked target, held before `exec` until [`HeldTarget::release`].
#[derive(Debug)]
pub struct HeldTarget {
    /// Its pid.
    pub pid: u32,
    program: String,
    gate: libc::c_int,
    errors: libc::c_int,
}

fn cstring(s: &OsStr) -> Result<CString, SpawnError> {
    CString::new(s.as_bytes()).map_err(|_| SpawnError::Os(format!("argument contains a NUL byte: {s:?}")))
}

fn pipe() -> Result<[libc::c_int; 2], SpawnError> {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(SpawnError::Os(format!("pipe2: {}", std::io::Error::last_os_error())));
    }
    Ok(fds)
}

/// Forks `argv` with environment `env`; the child waits before `exec` until released, then
/// takes the identity `run_as` (the invoking user under sudo) when given.
pub fn spawn_held(
    program: &Path,
    argv: &[String],
    env: &[(String, String)],
    run_as: Option<&RunAs>,
) -> Result<HeldTarget, SpawnError> {
    let prog = cstring(program.as_os_str())?;
    let args: Vec<CString> = argv.iter().map(|a| cstring(OsStr::new(a))).collect::<Result<_, _>>()?;
    let mut vars: Vec<(String, String)> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .filter(|(k, _)| !env.iter().any(|(ek, _)| ek == k))
        .collect();
    vars.extend(env.iter().cloned());
    let envs: Vec<CString> =
        vars.iter().map(|(k, v)| cstring(OsStr::new(&format!("{k}={v}")))).collect::<Result<_, _>>()?;
    let mut argp: Vec<*const libc::c_char> = args.iter().map(|a| a.as_ptr()).collect();
    argp.push(std::ptr::null());
    let mut envp: Vec<*const libc::c_char> = envs.iter().map(|a| a.as_ptr()).collect();
    envp.push(std::ptr::null());
    let gate = pipe()?;
    let errors = pipe()?;
    // A signal sent to the child before it restored the default dispositions would run the
    // host's handler in the child and be lost: block them across the fork; the child unblocks
    // them once the defaults are back, so a pending one then takes effect.
    let old_mask = block_forwarded_signals();
    // SAFETY: fork has no preconditions; the child below only calls async-signal-safe functions
    // (close, read, execve, write, _exit, signal, pthread_sigmask) on memory prepared before it.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: in the child; see above.
        unsafe { child_after_fork(gate, errors, &prog, &argp, &envp, &old_mask, run_as) }
    }
    // SAFETY: restoring this thread's signal mask saved above.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &old_mask, std::ptr::null_mut()) };
    if pid < 0 {
        return Err(SpawnError::Os(format!("fork: {}", std::io::Error::last_os_error())));
    }
    // SAFETY: closing our copies of the child's ends of the pipes.
    unsafe {
        libc::close(gate[0]);
        libc::close(errors[1]);
    }
    Ok(HeldTarget {
        pid: pid as u32,
        program: program.display().to_string(),
        gate: gate[1],
        errors: errors[0],
    })
}

/// Blocks the signals the host forwards ([`FORWARDED`]) in this thread; returns the previous mask.
fn block_forwarded_signals() -> libc::sigset_t {
    // SAFETY: sigset_t is plain data, initialised by sigemptyset before use; pthread_sigmask
    // writes the old mask into `old`.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for sig in FORWARDED {
            libc::sigaddset(&mut set, sig);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
        old
    }
}

/// # Safety
/// Must only be called in a freshly forked child; the pointers must stay valid (they point
/// into the parent's memory image, which the child has a copy of).
unsafe fn child_after_fork(
    gate: [libc::c_int; 2],
    errors: [libc::c_int; 2],
    prog: &CString,
    argp: &[*const libc::c_char],
    envp: &[*const libc::c_char],
    old_mask: &libc::sigset_t,
    run_as: Option<&RunAs>,
) -> ! {
    // SAFETY: async-signal-safe calls on descriptors and buffers prepared before the fork.
    unsafe {
        libc::close(gate[1]);
        libc::close(errors[0]);
        // Restore default signal dispositions the host may have changed, then the mask.
        for sig in FORWARDED {
            libc::signal(sig, libc::SIG_DFL);
        }
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        libc::pthread_sigmask(libc::SIG_SETMASK, old_mask, std::ptr::null_mut());
        let mut b = 0u8;
        // Wait until the host releases us (writes a byte or closes the gate).
        while libc::read(gate[0], (&mut b as *mut u8).cast(), 1) < 0 {}
        libc::close(gate[0]);
        if let Some(Err(errno)) = run_as.map(|r| r.apply()) {
            // A negative errno tells the host the identity switch failed, not the exec.
            let bytes = (-errno).to_ne_bytes();
            libc::write(errors[1], bytes.as_ptr().cast(), bytes.len());
            libc::_exit(126);
        }
        libc::execve(prog.as_ptr(), argp.as_ptr(), envp.as_ptr());
        let errno = *libc::__errno_location();
        let bytes = errno.to_ne_bytes();
        libc::write(errors[1], bytes.as_ptr().cast(), bytes.len());
        libc::_exit(127);
    }
}

impl HeldTarget {
    /// Lets the child `exec`. Returns an error if `exec` failed.
    pub fn release(self) -> Result<u32, SpawnError> {
        let b = 1u8;
        let mut errno = [0u8; 4];
        // SAFETY: valid descriptors owned by `self`; buffers of the stated sizes.
        let n = unsafe {
            libc::write(self.gate, (&b as *const u8).cast(), 1);
            libc::close(self.gate);
            let n = libc::read(self.errors, errno.as_mut_ptr().cast(), 4);
            libc::close(self.errors);
            n
        };
        if n == 4 && i32::from_ne_bytes(errno) < 0 {
            let e = std::io::Error::from_raw_os_error(-i32::from_ne_bytes(errno));
            let mut status = 0;
            // SAFETY: waiting for our own child, which exited after the failed switch.
            unsafe { libc::waitpid(self.pid as libc::pid_t, &mut status, 0) };
            return Err(SpawnError::Os(format!("failed to run the target as the invoking user: {e}")));
        }
        if n == 4 {
            let e = std::io::Error::from_raw_os_error(i32::from_ne_bytes(errno));
            let reason = e.to_string();
            // Reap the child, which exited with 127 after the failed exec.
            let mut status = 0;
            // SAFETY: waiting for our own child.
            unsafe { libc::waitpid(self.pid as libc::pid_t, &mut status, 0) };
            return Err(match e.raw_os_error() {
                Some(libc::ENOENT) if Path::new(&self.program).is_file() => missing_interpreter(self.program),
                Some(libc::ENOENT) => SpawnError::NotFound(self.program),
                _ => SpawnError::NotExecutable { path: self.program, reason },
            });
        }
        Ok(self.pid)
    }

    /// Kills the held child (when the session cannot start).
    pub fn abort(self) {
        // SAFETY: signalling and reaping our own child; closing descriptors we own.
        unsafe {
            libc::kill(self.pid as libc::pid_t, libc::SIGKILL);
            libc::close(self.gate);
            libc::close(self.errors);
            let mut status = 0;
            libc::waitpid(self.pid as libc::pid_t, &mut status, 0);
        }
    }
}

/// `exec` said ENOENT for a file that exists: what it runs is missing. Names the `#!`
/// interpreter when there is one.
fn missing_interpreter(path: String) -> SpawnError {
    let mut head = [0u8; 256];
    let n = std::fs::File::open(&path).and_then(|mut f| std::io::Read::read(&mut f, &mut head)).unwrap_or(0);
    let head = &head[..n];
    if let Some(line) = head.strip_prefix(b"#!") {
        let line = line.split(|&b| b == b'\n').next().unwrap_or_default();
        let line = String::from_utf8_lossy(line);
        let interp = line.split_whitespace().next().unwrap_or("").to_owned();
        let hint = if line.ends_with('\r') {
            "its #! line ends with a carriage return (Windows line endings); convert it with dos2unix"
        } else {
            "fix the #! line or install that interpreter"
        };
        return SpawnError::MissingInterpreter {
            path,
            interpreter: format!("its interpreter {interp} (from its #! line)"),
            hint: hint.into(),
        };
    }
    SpawnError::MissingInterpreter {
        path,
        interpreter: "its ELF dynamic loader (program interpreter)".into(),
        hint: "it was built for another system or architecture; check it with `file`".into(),
    }
}

/// Maps a wait status to an exit code: the code itself, or 128+N for signal N.
pub fn exit_code_of(status: libc::c_int) -> i32 {
    if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else if libc::WIFSIGNALED(status) {
        128 + libc::WTERMSIG(status)
    } else {
        125
    }
}

/// Makes this process the reaper of orphaned descendants, so children of the target that
/// outlive it are still waited for (and their events still belong to the session).
pub fn become_subreaper() {
    // SAFETY: prctl with PR_SET_CHILD_SUBREAPER takes one integer argument.
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
}
