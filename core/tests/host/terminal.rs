//! What xpuprof writes to stderr: a closed stderr never costs the outputs, and colour codes go
//! only to a terminal.

use std::os::fd::{FromRawFd, OwnedFd};
use std::process::{Command, Stdio};

use super::common::*;

/// A pipe whose read end is already closed: every write to it fails with EPIPE, as after
/// `xpuprof … 2>&1 | head -1` once `head` has exited.
fn closed_pipe() -> OwnedFd {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    // SAFETY: both descriptors were just created and are owned here alone.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    drop(read);
    write
}

#[test]
fn a_closed_stderr_does_not_stop_the_outputs() {
    require_plugin("scripted");
    require_plugin("panicky");
    let dir = tempfile::tempdir().unwrap();
    let pipe = closed_pipe();
    // `panicky` fails, so xpuprof logs an error on top of its summary; the summary sink prints
    // its digest too. Every one of those writes meets EPIPE.
    let status = Command::new(xpuprof())
        .args(["--source", "scripted,panicky", "--sink", "folded,summary", "-o", "out", "--"])
        .args(["sh", "-c", "exit 3"])
        .current_dir(dir.path())
        .env("XPUPROF_PLUGIN_PATH", test_plugin_path())
        .stdout(Stdio::from(pipe.try_clone().unwrap()))
        .stderr(Stdio::from(pipe))
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(3), "the exit code is the target's");
    for f in ["profile.folded", "summary.json", "summary.txt"] {
        let p = dir.path().join("out").join(f);
        assert!(p.is_file() && std::fs::metadata(&p).unwrap().len() > 0, "{} was not written", p.display());
    }
}

#[test]
fn a_closed_stdout_does_not_abort_plugins() {
    let dir = tempfile::tempdir().unwrap();
    let status = Command::new(xpuprof())
        .arg("plugins")
        .current_dir(dir.path())
        .stdout(Stdio::from(closed_pipe()))
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(0));
}

#[test]
fn no_colour_codes_in_a_pipe() {
    require_plugin("scripted");
    require_plugin("panicky");
    let (o, _d) = run(&["--source", "scripted,panicky", "--sink", "folded", "--", "true"]);
    let e = stderr(&o);
    assert!(e.contains("plugin `panicky` failed"), "an error was logged: {e}");
    assert!(!e.contains('\x1b'), "colour codes written into a pipe: {e:?}");
}
