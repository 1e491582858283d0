//! Running a check in a child process, so a plugin that crashes (a C plugin's segfault, an
//! abort) is reported as a finding, with the step it crashed in, instead of taking the check
//! down with it.

use std::ffi::OsString;
use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};

/// The prefix of the progress lines the child prints (one per step, before the step starts).
pub const STEP_MARK: &str = "@@xpuprof-check-step ";

/// Runs `exe args` (the check in-process), passing its other output to `out`; returns whether
/// it passed. A child killed by a signal is reported with the step it was in.
pub fn run(exe: &Path, args: &[OsString], out: &mut dyn FnMut(&str)) -> std::io::Result<bool> {
    let mut child = Command::new(exe).args(args).stdout(Stdio::piped()).stdin(Stdio::null()).spawn()?;
    let mut step = String::from("load");
    if let Some(stdout) = child.stdout.take() {
        for line in BufReader::new(stdout).lines() {
            let line = line?;
            match line.strip_prefix(STEP_MARK) {
                Some(s) => step = s.to_owned(),
                None => out(&line),
            }
        }
    }
    let status = child.wait()?;
    if let Some(sig) = status.signal() {
        out(&format!(
            "ERROR   the plugin does not crash: the check died of signal {sig} ({}) in {step}; in a session \
             this takes xpuprof and every output down (run the check under gdb or valgrind to see where)",
            signal_name(sig)
        ));
        out("the plugin fails the conformance check");
        return Ok(false);
    }
    Ok(status.success())
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGSEGV => "SIGSEGV, a bad memory access",
        libc::SIGABRT => "SIGABRT, abort() or a failed assertion",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE, an arithmetic fault",
        libc::SIGILL => "SIGILL",
        libc::SIGKILL => "SIGKILL",
        _ => "a signal",
    }
}
