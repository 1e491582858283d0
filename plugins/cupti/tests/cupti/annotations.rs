//! XLA's NVTX annotations end to end on the CUDA test double (issue 33): `xla_nvtx`
//! (`tests/doubles/xla_nvtx.c`) makes the NVTX calls JAX's XLA made on the H200 (registered
//! strings in the `TSL` domain, operation ranges pushed with a registered title and an extended
//! payload of string handles, compiler ranges on the main thread and on a compiler thread)
//! around kernel launches, under `xpuprof record --source cupti` with the real agent, host and
//! folded sink, with the defaults (annotations are on by default: what a JAX user running
//! `xpuprof --source cupti -- python train.py` gets).
//!
//! - The operations' launches sit under `[xla] jit(train_step)/<op> (<file>:<line>)`, the line
//!   from the payload's source-locations string (the second of XLA's three handles; the agent
//!   read the first, the HLO text, and gave no line), and the compiler's under `[compile]`.
//! - Malformed calls (null or short attributes, UNICODE and unknown message types, handles never
//!   registered, extended payloads whose pointers are unmapped, pops without a push, a range
//!   popped on another thread) are counted and reported, never followed: before the checked
//!   reads the agent read the payload at an unmapped address and the program died of SIGSEGV,
//!   as JAX did on the H200 with annotations on.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use xpuprof_testkit::host;

use super::double::build_program;

/// Builds the double and `xla_nvtx` on it in `dir`; returns the program.
fn build(dir: &Path) -> PathBuf {
    build_program(dir, "xla_nvtx.c", "xla_nvtx", &["-Wall", "-O1", "-fno-omit-frame-pointer"], &["-lpthread"])
}

/// Runs `xla_nvtx MODE` under xpuprof with the default settings and `sets` (`KEY=VALUE`);
/// returns its output and the GPU profile.
fn record(xpuprof: &Path, dir: &Path, mode: &str, sets: &[&str]) -> (Output, String) {
    let out = dir.join(format!("out-{mode}-{}", sets.len()));
    let o = Command::new(xpuprof)
        .arg("record")
        .arg("--plugin-dir")
        .arg(host::target_dir())
        .args(sets.iter().flat_map(|s| ["--set", s]))
        .args(["--source", "cupti", "--sink", "folded", "-o"])
        .arg(&out)
        .arg("--")
        .arg(dir.join("xla_nvtx"))
        .arg(mode)
        .env("XPUPROF_CUPTI_LIB", dir.join("libcuda.so.1"))
        .output()
        .expect("run xpuprof record");
    let folded = std::fs::read_to_string(out.join("profile.gpu.folded")).unwrap_or_default();
    (o, folded)
}

/// The folded lines of `kernel`.
fn lines<'a>(folded: &'a str, kernel: &str) -> Vec<&'a str> {
    let k = format!(";[GPU_Kernel]{kernel} ");
    folded.lines().filter(|l| l.contains(&k)).collect()
}

fn setup(mode: &str, sets: &[&str]) -> Option<(Output, String, String)> {
    let xpuprof = host::xpuprof(&["cupti", "folded"])?;
    if !host::target_dir().join("libxpuprof_cupti_agent.so").exists() {
        xpuprof_testkit::skip::missing("libxpuprof_cupti_agent.so not built");
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    build(dir.path());
    let (o, folded) = record(&xpuprof, dir.path(), mode, sets);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    Some((o, folded, err))
}

#[test]
fn xla_operations_and_compile_time_work_become_frames_with_the_operations_lines() {
    let Some((o, folded, err)) = setup("xla", &[]) else { return };
    assert!(o.status.success(), "{}\n{err}", o.status);
    assert!(err.contains("target exited with code 0"), "{err}");
    for (kernel, label) in [
        ("dot_kernel", "[xla] jit(train_step)/layer1/dot_general (/w/train.py:30)"),
        ("add_kernel", "[xla] jit(train_step)/layer1/add (/w/train.py:31)"),
        ("sub_kernel", "[xla] jit(train_step)/sgd/sub (/w/train.py:50)"),
    ] {
        // The label names a source line, so it reads as a frame of interpreted code: the GPU
        // view keeps the launch's native frames inside it (JAX's Python frames stand above it;
        // this C program has none).
        let l = lines(&folded, kernel);
        assert_eq!(l.len(), 1, "{kernel}: one stack for its four launches:\n{folded}");
        assert!(l[0].starts_with(&format!("{label};cuLaunchKernel;[GPU_Kernel]{kernel} ")), "{}", l[0]);
        assert!(l[0].ends_with(" 80"), "four launches of 20 ns: {}", l[0]);
    }
    for (kernel, caller) in
        [("redzone_check_kernel", ";compile_step;"), ("autotune_candidate_kernel", ";autotuner;")]
    {
        let l = lines(&folded, kernel);
        assert_eq!(l.len(), 1, "{kernel}:\n{folded}");
        assert!(l[0].contains(caller) && l[0].contains(";[compile];[GPU_Kernel]"), "{}", l[0]);
        assert!(!l[0].contains("[xla]"), "compile-time work is no operation: {}", l[0]);
    }
    assert!(!err.contains("NVTX calls not read"), "well-formed calls are all read: {err}");
    // The program's own domain is not XLA's: its range (null attributes) is not read at all.
    let app = lines(&folded, "app_kernel");
    assert!(app.len() == 1 && !app[0].contains("[xla]") && !app[0].contains("[compile]"), "{folded}");
}

#[test]
fn malformed_nvtx_calls_are_counted_and_never_crash_the_program() {
    let Some((o, folded, err)) = setup("hostile", &[]) else { return };
    assert!(
        err.contains("target exited with code 0"),
        "the program survives every malformed call (the agent used to follow an unmapped payload \
         pointer: SIGSEGV): {}\n{err}",
        o.status
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains("launches="), "the program ran to its end");
    let report = err.lines().find(|l| l.contains("NVTX calls not read")).unwrap_or_else(|| panic!("{err}"));
    for (why, n) in [
        ("event attributes null, unreadable or smaller than 48 bytes: 3", "null, 16 bytes, no version"),
        // nvtxRangePushA(NULL) is the default domain's, never XLA's: not read at all.
        ("messages neither ASCII nor registered strings, or unreadable: 4", "UNICODE, type 77, 2 null"),
        ("registered strings never seen registered: 1", "a handle never registered"),
        ("extended payloads unreadable: 4", "unmapped data, unmapped payload, null payload, 100000"),
        ("calls without their parameters: 3", "no return value, 2 without parameters"),
        ("pops without a push on their thread: 4", "here, other domain, other thread twice"),
    ] {
        assert!(report.contains(why), "{n}: {report}");
    }
    assert!(report.contains("annotations: 19 NVTX calls not read"), "{report}");
    // What was readable still reads right: the steps' operations, and the range pushed here and
    // popped (wrongly) on another thread still holds this thread's launch.
    assert_eq!(lines(&folded, "dot_kernel").len(), 1, "{folded}");
    assert!(lines(&folded, "dot_kernel")[0]
        .starts_with("[xla] jit(train_step)/layer1/dot_general (/w/train.py:30);"));
    let inside = lines(&folded, "still_inside_kernel");
    assert!(inside.len() == 1 && inside[0].starts_with("[xla] layer1/add (/w/train.py:31);"), "{folded}");
    let other = lines(&folded, "other_thread_kernel");
    assert!(!other.is_empty() && other.iter().all(|l| !l.contains("[xla]")), "{folded}");
    // Ranges whose attributes could not be read give no frame; those with a readable title and
    // an unreadable payload give the operation without its line.
    for l in lines(&folded, "after_bad_push_kernel") {
        assert!(!l.contains("[xla]") || l.contains(";[xla] layer1/dot_general;"), "{l}");
    }
}

#[test]
fn annotations_off_leave_operations_and_compiler_ranges_as_records_only() {
    let Some((o, folded, err)) = setup("xla", &["source.cupti.annotations=false"]) else { return };
    assert!(err.contains("target exited with code 0"), "{}\n{err}", o.status);
    assert!(!lines(&folded, "dot_kernel").is_empty(), "the kernels are still recorded:\n{folded}");
    assert!(!folded.contains("[xla]") && !folded.contains("[compile]"), "switched off:\n{folded}");
}
