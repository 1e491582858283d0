//! Through the real host: `xpuprof --source ebpf --sink folded -- <workload>`, with the host's
//! plugin loading and symboliser (skipped when the binary has not been built).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{root_or_skip, workload};

/// `target/<profile>/xpuprof` next to this test binary's `deps/` directory, when it exists with
/// the folded sink beside it.
pub fn xpuprof() -> Option<PathBuf> {
    let dir = std::env::current_exe().ok()?.parent()?.parent()?.to_path_buf();
    let bin = dir.join("xpuprof");
    let folded = dir.join("libxpuprof_plugin_folded.so");
    if !bin.is_file() || !folded.is_file() {
        xpuprof_testkit::skip::missing(&format!(
            "{} or the folded sink is not built (cargo build --workspace first)",
            bin.display()
        ));
        return None;
    }
    // The plugin next to the binary must have been built from the current sources.
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let plugin = modified(&dir.join("libxpuprof_plugin_ebpf.so"));
    let sources = newest(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    if plugin < sources {
        xpuprof_testkit::skip::missing(&format!(
            "{}/libxpuprof_plugin_ebpf.so is older than its sources (cargo build first)",
            dir.display()
        ));
        return None;
    }
    Some(bin)
}

/// The newest modification time of the files under `dir`.
fn newest(dir: &Path) -> Option<std::time::SystemTime> {
    let mut latest = None;
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        let t = if path.is_dir() { newest(&path) } else { entry.metadata().and_then(|m| m.modified()).ok() };
        latest = latest.max(t);
    }
    latest
}

/// Sums of folded weights of lines whose frames include `name`.
fn weight_with(folded: &str, name: &str) -> u64 {
    folded
        .lines()
        .filter_map(|l| l.rsplit_once(' '))
        .filter(|(stack, _)| stack.split(';').any(|f| f == name))
        .map(|(_, w)| w.parse::<u64>().unwrap())
        .sum()
}

#[test]
fn xpuprof_folded_shows_the_shell_child_in_the_known_ratio() {
    if !root_or_skip("xpuprof_folded_shows_the_shell_child_in_the_known_ratio") {
        return;
    }
    let Some(bin) = xpuprof() else { return };
    let out = tempfile::tempdir().unwrap();
    // Fixed work (about 2 s of CPU) sampled at 499 Hz: enough samples for the ratio however busy
    // the machine is, in long calls that the sampling period cannot alias with.
    let cfg = out.path().join("xpuprof.toml");
    std::fs::write(&cfg, "[source.ebpf]\nsample_hz = 499\n").unwrap();
    let cmd = format!("{} -n 8 60", workload("burn"));
    let status = Command::new(&bin)
        .args(["--quiet", "--source", "ebpf", "--sink", "folded", "-c"])
        .arg(&cfg)
        .arg("-o")
        .arg(out.path())
        .args(["--", "/bin/sh", "-c", &cmd])
        .status()
        .expect("run xpuprof");
    assert!(status.success(), "xpuprof exited with {status}");
    let folded = std::fs::read_to_string(out.path().join("profile.folded")).expect("profile.folded");
    let (three, one) = (weight_with(&folded, "burn_three"), weight_with(&folded, "burn_one"));
    assert!(one > 0, "no burn_one samples in:\n{folded}");
    let ratio = three as f64 / one as f64;
    assert!((2.1..=3.9).contains(&ratio), "burn_three:burn_one = {ratio:.2} in:\n{folded}");
    assert!(
        folded.lines().any(|l| l.contains("main;fixed_rounds;burn_three;spin ")),
        "host did not symbolise:\n{folded}"
    );
}

#[test]
fn jit_code_is_named_by_its_perf_map() {
    if !root_or_skip("jit_code_is_named_by_its_perf_map") {
        return;
    }
    let Some(bin) = xpuprof() else { return };
    let out = tempfile::tempdir().unwrap();
    let cfg = out.path().join("xpuprof.toml");
    std::fs::write(&cfg, "[source.ebpf]\nsample_hz = 499\n").unwrap();
    // burn_in_c runs under a function in anonymous executable memory that the program names in
    // /tmp/perf-PID.map: the stack goes through it (frame pointer) and the host names it.
    let status = Command::new(&bin)
        .args(["--quiet", "--source", "ebpf", "--sink", "folded", "-c"])
        .arg(&cfg)
        .arg("-o")
        .arg(out.path())
        .args(["--", &workload("jit"), "1.5"])
        .status()
        .expect("run xpuprof");
    assert!(status.success(), "xpuprof exited with {status}");
    let folded = std::fs::read_to_string(out.path().join("profile.folded")).expect("profile.folded");
    let through: u64 = folded
        .lines()
        .filter(|l| l.contains("main;jit_burn_loop;burn_in_c "))
        .filter_map(|l| l.rsplit_once(' ')?.1.parse::<u64>().ok())
        .sum();
    let all = weight_with(&folded, "burn_in_c");
    assert!(through > 0, "no stack through the JIT frame by its perf-map name in:\n{folded}");
    assert!(
        through as f64 >= 0.9 * all as f64,
        "{through} of {all} burn_in_c weight through the JIT frame:\n{folded}"
    );
}

#[test]
fn without_privileges_the_session_goes_on_and_says_what_is_missing() {
    if !root_or_skip("without_privileges_the_session_goes_on_and_says_what_is_missing") {
        return;
    }
    let Some(bin) = xpuprof() else { return };
    if !std::path::Path::new("/usr/bin/setpriv").exists() {
        xpuprof_testkit::skip::missing("setpriv (util-linux) is not installed");
        return;
    }
    let out = tempfile::tempdir().unwrap();
    std::fs::set_permissions(out.path(), std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    // Drop to `nobody` with no capabilities, as an ordinary user would run it.
    let run = Command::new("/usr/bin/setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all"])
        .arg(&bin)
        .args(["--source", "ebpf", "--sink", "folded", "-o"])
        .arg(out.path().join("o"))
        .args(["--", "/bin/sh", "-c", "exit 3"])
        .output()
        .expect("run xpuprof through setpriv");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(stderr.contains("CAP_BPF + CAP_PERFMON") && stderr.contains("sudo"), "stderr:\n{stderr}");
    assert_eq!(run.status.code(), Some(3), "the target still ran; stderr:\n{stderr}");
}

#[test]
fn a_launch_symbol_found_nowhere_is_named_in_a_warning() {
    if !root_or_skip("a_launch_symbol_found_nowhere_is_named_in_a_warning") {
        return;
    }
    let Some(bin) = xpuprof() else { return };
    let out = tempfile::tempdir().unwrap();
    let cfg = out.path().join("xpuprof.toml");
    std::fs::write(&cfg, "[source.ebpf]\nsample_hz = 0\nlaunch_probes = [\"noSuchLaunchKernel\"]\n").unwrap();
    let run = Command::new(&bin)
        .args(["--source", "ebpf", "--sink", "folded", "-c"])
        .arg(&cfg)
        .arg("-o")
        .arg(out.path().join("o"))
        .args(["--", &workload("launch")])
        .output()
        .expect("run xpuprof");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "stderr:\n{stderr}");
    assert!(stderr.contains("failed to find launch symbol `noSuchLaunchKernel`"), "stderr:\n{stderr}");
}

#[test]
fn xpuprof_folded_shows_where_threads_blocked_and_for_how_long() {
    if !root_or_skip("xpuprof_folded_shows_where_threads_blocked_and_for_how_long") {
        return;
    }
    let Some(bin) = xpuprof() else { return };
    let out = tempfile::tempdir().unwrap();
    let cfg = out.path().join("xpuprof.toml");
    std::fs::write(&cfg, "[source.ebpf]\nsample_hz = 0\noffcpu = true\noffcpu_min_us = 5000\n").unwrap();
    let status = Command::new(&bin)
        .args(["--quiet", "--source", "ebpf", "--sink", "folded", "-c"])
        .arg(&cfg)
        .arg("-o")
        .arg(out.path().join("o"))
        .args(["--", &workload("block")])
        .status()
        .expect("run xpuprof");
    assert!(status.success());
    let folded = std::fs::read_to_string(out.path().join("o/profile.folded")).expect("profile.folded");
    // Folded weights are µs: 20 waits of 25 ms on each path.
    for path in ["sleep_path", "futex_path"] {
        let us = weight_with(&folded, path);
        assert!((450_000..=700_000).contains(&us), "{path}: {us} us off-CPU in:\n{folded}");
    }
    assert!(folded.lines().all(|l| l.starts_with("[off-cpu];")), "only off-CPU lines expected:\n{folded}");
}

#[test]
fn ebpf_alone_through_the_host_does_not_look_for_the_trampoline() {
    if !root_or_skip("ebpf_alone_through_the_host_does_not_look_for_the_trampoline") {
        return;
    }
    let Some(bin) = xpuprof() else { return };
    let out = tempfile::tempdir().unwrap();
    // The host used to fill the declared default (true) before the plugin saw the table, so
    // every `--source ebpf` run searched every file for the trampoline and warned.
    let run = Command::new(&bin)
        .args(["--quiet", "--source", "ebpf", "--sink", "folded", "-o"])
        .arg(out.path().join("o"))
        .args(["--", "/bin/true"])
        .output()
        .expect("run xpuprof");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "stderr:\n{stderr}");
    assert!(!stderr.contains("xpuprof_agent_launch"), "spurious trampoline warning:\n{stderr}");
}
