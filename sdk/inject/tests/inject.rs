//! The injector against real running programs compiled here (`tests/c/`): a library loaded and
//! its function called in a program blocked in a system call and in one that never makes one,
//! the program going on and exiting with its own code; a second injection reusing the loaded
//! library; refusals (another tracer, no permission, a static program) and a failed `dlopen`,
//! each leaving the program running untouched.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};

use xpuprof_inject::{inject, is_loaded, Arg, InjectError, Request};

fn c_file(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c").join(name)
}

fn cc(dir: &Path, out: &str, args: &[&str]) -> PathBuf {
    let exe = dir.join(out);
    let o = Command::new("cc").args(args).arg("-o").arg(&exe).output().expect("run cc");
    assert!(o.status.success(), "cc {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    exe
}

fn program(dir: &Path) -> PathBuf {
    cc(dir, "target", &["-O2", "-pthread", c_file("target.c").to_str().unwrap()])
}

fn library(dir: &Path) -> PathBuf {
    cc(dir, "libinjected.so", &["-O2", "-shared", "-fPIC", c_file("library.c").to_str().unwrap()])
}

/// A running target and its stdout, after it printed "ready".
struct Target {
    child: Child,
    _out: BufReader<ChildStdout>,
}

impl Target {
    fn start(exe: &Path, dir: &Path, args: &[&str]) -> Self {
        let mut child = Command::new(exe)
            .args(args)
            .env("INJECT_TEST_DIR", dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        assert_eq!(line, "ready\n");
        // Let it reach its blocking read.
        std::thread::sleep(std::time::Duration::from_millis(50));
        Self { child, _out: out }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Lets a `sleep` target go on; returns its exit code and stderr.
    fn finish(mut self) -> (i32, String) {
        if let Some(mut stdin) = self.child.stdin.take() {
            let _ = stdin.write_all(b"go\n");
        }
        let o = self.child.wait_with_output().unwrap();
        (o.status.code().unwrap_or(-1), String::from_utf8_lossy(&o.stderr).into_owned())
    }
}

fn lines(dir: &Path, name: &str) -> Vec<String> {
    std::fs::read_to_string(dir.join(name)).unwrap_or_default().lines().map(str::to_owned).collect()
}

fn kick(lib: &Path, n: u64) -> Request {
    Request::new(lib).call("kick", vec![Arg::Text("hello".into()), Arg::Int(n)])
}

#[test]
fn loads_into_a_program_blocked_in_a_system_call_which_then_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let (exe, lib) = (program(dir.path()), library(dir.path()));
    let t = Target::start(&exe, dir.path(), &["sleep"]);
    assert!(!is_loaded(t.pid(), &lib).unwrap());
    let done = inject(t.pid(), &kick(&lib, 21)).unwrap();
    assert_eq!((done.already_loaded, done.returned, done.tid), (false, Some(42), t.pid()));
    assert_eq!(lines(dir.path(), "constructor"), [format!("pid {}", t.pid())], "the constructor ran once");
    assert_eq!(lines(dir.path(), "kick"), ["hello 21"]);
    assert!(is_loaded(t.pid(), &lib).unwrap());
    // Again: the library is not loaded twice, only its function is called.
    let again = inject(t.pid(), &kick(&lib, 5)).unwrap();
    assert_eq!((again.already_loaded, again.returned), (true, Some(10)));
    assert_eq!(lines(dir.path(), "constructor").len(), 1);
    assert_eq!(lines(dir.path(), "kick"), ["hello 21", "hello 5"]);
    let (code, err) = t.finish();
    assert_eq!(code, 7, "its blocking read was restarted and the program exited with its own code: {err}");
}

#[test]
fn loads_into_a_program_that_never_makes_a_system_call_without_changing_its_registers() {
    let dir = tempfile::tempdir().unwrap();
    let (exe, lib) = (program(dir.path()), library(dir.path()));
    let t = Target::start(&exe, dir.path(), &["spin", "1.5"]);
    let done = inject(t.pid(), &kick(&lib, 1)).unwrap();
    assert_eq!(done.returned, Some(2));
    assert_eq!(lines(dir.path(), "kick"), ["hello 1"]);
    let (code, err) = t.finish();
    assert_eq!(code, 7, "every register it computes with was put back: {err}");
}

#[test]
fn a_library_the_loader_refuses_leaves_the_program_running() {
    let dir = tempfile::tempdir().unwrap();
    let exe = program(dir.path());
    let bogus = dir.path().join("libnot-elf.so");
    std::fs::write(&bogus, "not a library\n").unwrap();
    let t = Target::start(&exe, dir.path(), &["sleep"]);
    let e = inject(t.pid(), &Request::new(&bogus)).unwrap_err();
    assert!(matches!(e, InjectError::Dlopen { .. }), "{e}");
    assert!(e.to_string().contains("libnot-elf.so") && !e.is_refusal(), "dlerror's text: {e}");
    let (code, err) = t.finish();
    assert_eq!(code, 7, "{err}");
}

#[test]
fn a_program_traced_by_another_tracer_is_refused_and_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let (exe, lib) = (program(dir.path()), library(dir.path()));
    let tracer_exe = cc(dir.path(), "tracer", &[c_file("tracer.c").to_str().unwrap()]);
    let t = Target::start(&exe, dir.path(), &["sleep"]);
    let mut tracer = Command::new(&tracer_exe)
        .arg(t.pid().to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(tracer.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert_eq!(line, "seized\n");
    let e = inject(t.pid(), &kick(&lib, 1)).unwrap_err();
    assert!(e.is_refusal(), "{e}");
    let text = e.to_string();
    assert!(text.contains("already traced by tracer") && text.contains("detach it first"), "{text}");
    drop(tracer.stdin.take());
    tracer.wait().unwrap();
    assert!(lines(dir.path(), "constructor").is_empty(), "nothing ran in the target");
    let (code, err) = t.finish();
    assert_eq!(code, 7, "{err}");
}

#[test]
fn a_statically_linked_program_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let lib = library(dir.path());
    let exe = cc(dir.path(), "static", &["-O2", "-static", c_file("target.c").to_str().unwrap()]);
    let t = Target::start(&exe, dir.path(), &["sleep"]);
    let e = inject(t.pid(), &Request::new(&lib)).unwrap_err();
    assert!(e.to_string().contains("statically linked"), "{e}");
    let (code, err) = t.finish();
    assert_eq!(code, 7, "{err}");
}

/// Needs root, to run the injector as another user: in CI a missing prerequisite fails.
#[test]
fn without_permission_the_refusal_names_the_fix_and_the_program_is_untouched() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        assert!(std::env::var_os("CI").is_none(), "this test needs root in CI");
        eprintln!("SKIPPED: needs root to run the injector as another user");
        return;
    }
    use std::os::unix::process::CommandExt;
    let dir = tempfile::tempdir().unwrap();
    let (exe, lib) = (program(dir.path()), library(dir.path()));
    let t = Target::start(&exe, dir.path(), &["sleep"]);
    let o = Command::new(env!("CARGO_BIN_EXE_xpuprof-inject"))
        .arg(t.pid().to_string())
        .arg(&lib)
        .arg("kick")
        .uid(65534)
        .gid(65534)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "a refusal: {err}");
    assert!(err.contains("not permitted to trace process") && err.contains("CAP_SYS_PTRACE"), "{err}");
    assert!(err.contains("run xpuprof as root"), "{err}");
    assert!(lines(dir.path(), "constructor").is_empty());
    let (code, err) = t.finish();
    assert_eq!(code, 7, "{err}");
}

#[test]
fn a_library_replaced_on_disk_after_loading_is_called_as_loaded() {
    let dir = tempfile::tempdir().unwrap();
    let (exe, lib) = (program(dir.path()), library(dir.path()));
    let t = Target::start(&exe, dir.path(), &["sleep"]);
    assert_eq!(inject(t.pid(), &kick(&lib, 3)).unwrap().returned, Some(6));
    // A rebuild at the same path (a new file renamed over it) whose functions sit elsewhere.
    let src = dir.path().join("moved.c");
    let padding: String =
        (0..200).map(|i| format!("long pad{i}(long x) {{ return x * {i} + 1; }}\n")).collect();
    std::fs::write(&src, padding + &std::fs::read_to_string(c_file("library.c")).unwrap()).unwrap();
    let rebuilt = cc(dir.path(), "librebuilt.so", &["-O0", "-shared", "-fPIC", src.to_str().unwrap()]);
    std::fs::rename(&rebuilt, &lib).unwrap();
    let again = inject(t.pid(), &kick(&lib, 4)).unwrap();
    assert_eq!((again.already_loaded, again.returned), (true, Some(8)), "the loaded build's kick ran");
    assert_eq!(lines(dir.path(), "kick"), ["hello 3", "hello 4"]);
    let (code, err) = t.finish();
    assert_eq!(code, 7, "{err}");
}

/// Needs root, to run the target as another user: in CI a missing prerequisite fails.
#[test]
fn a_library_the_targets_user_cannot_read_is_refused_before_anything_runs() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        assert!(std::env::var_os("CI").is_none(), "this test needs root in CI");
        eprintln!("SKIPPED: needs root to run the target as another user");
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let exe = program(dir.path());
    // The library in a folder only root may enter, the target running as nobody.
    let private = dir.path().join("private");
    std::fs::create_dir(&private).unwrap();
    let lib = library(&private);
    std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o700)).unwrap();
    let mut child = Command::new(&exe)
        .arg("sleep")
        .env("INJECT_TEST_DIR", dir.path())
        .uid(65534)
        .gid(65534)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(line, "ready\n");
    let e = inject(child.id(), &kick(&lib, 3)).unwrap_err();
    assert!(matches!(e, InjectError::Unreachable { .. }) && e.is_refusal(), "{e}");
    let text = e.to_string();
    assert!(text.contains("uid 65534") && text.contains("may not enter the folder"), "{text}");
    assert!(!is_loaded(child.id(), &lib).unwrap(), "nothing was loaded");
    let _ = child.stdin.take().unwrap().write_all(b"go\n");
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(7), "the target goes on: {}", String::from_utf8_lossy(&o.stderr));
}
