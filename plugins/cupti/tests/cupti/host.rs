//! The plugin inside the real host, without a GPU: `xpuprof --source cupti` runs a "target" that
//! connects to the socket the plugin prepared (`XPUPROF_CUPTI_SOCKET`) and replays a stream
//! captured on the H100, as the agent would. Checks that the environment is prepared, the
//! connection is accepted and drained at stop, and the kernels reach the sinks joined to their
//! launch sites. Skipped, with the reason printed, when the host cannot be built or python3 is
//! missing.
//!
//! The host and plugins are built first by the shared end-to-end harness
//! (`tests/support/host.rs`), so the libraries the host loads are the code under test.

use std::path::PathBuf;
use std::process::Command;

// The shared harness; this test uses only part of it.
#[allow(dead_code)]
use xpuprof_testkit::host;

/// Plays a captured stream into the plugin's socket as the agent would (`replay.py STREAM`).
fn replay_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/replay.py")
}

#[test]
fn replayed_agent_stream_reaches_the_sinks() {
    let Some(xpuprof) = host::xpuprof(&["cupti", "folded"]) else { return };
    let dir = host::target_dir();
    let agent = dir.join("libxpuprof_cupti_agent.so");
    if !agent.exists() {
        xpuprof_testkit::skip::missing(&format!("{} not built", agent.display()));
        return;
    }
    if Command::new("python3").arg("-c").arg("pass").status().map(|s| !s.success()).unwrap_or(true) {
        xpuprof_testkit::skip::missing("python3 not available");
        return;
    }
    let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/graph_launch/stream.bin");
    let out = std::env::temp_dir().join(format!("xpuprof-cupti-host-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let o = Command::new(&xpuprof)
        .args(["--plugin-dir"])
        .arg(&dir)
        .args(["--source", "cupti", "--sink", "folded", "-o"])
        .arg(&out)
        .args(["--", "python3"])
        .arg(replay_script())
        .arg(&fixture)
        .output()
        .expect("run xpuprof");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "xpuprof failed: {stderr}");
    let folded = std::fs::read_to_string(out.join("profile.folded")).expect("profile.folded");
    let kernel_lines: Vec<&str> = folded.lines().filter(|l| l.contains("[GPU_Kernel]")).collect();
    assert!(!kernel_lines.is_empty(), "no kernels in folded output:\n{folded}\n{stderr}");
    assert!(!folded.contains("unknown launch site"), "kernels without launch site:\n{folded}");
    assert!(kernel_lines.iter().all(|l| l.contains("graph_k")), "{kernel_lines:?}");
    let _ = std::fs::remove_dir_all(&out);
}

/// Runs `xpuprof --source cupti --sink folded` on a replayed agent stream with `config`;
/// returns `profile.folded` and stderr.
fn fold_replayed(xpuprof: &std::path::Path, stream: &str, config: &str) -> (String, String) {
    let dir = host::target_dir();
    let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(stream);
    let out = tempfile::tempdir().unwrap();
    let cfg = out.path().join("xpuprof.toml");
    std::fs::write(&cfg, config).unwrap();
    let o = Command::new(xpuprof)
        .args(["--plugin-dir"])
        .arg(&dir)
        .arg("-c")
        .arg(&cfg)
        .args(["--source", "cupti", "--sink", "folded", "-o"])
        .arg(out.path().join("out"))
        .args(["--", "python3"])
        .arg(replay_script())
        .arg(&fixture)
        .output()
        .expect("run xpuprof");
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "xpuprof failed: {stderr}");
    let folded = std::fs::read_to_string(out.path().join("out/profile.folded")).expect("profile.folded");
    (folded, stderr)
}

/// `folded` with the fixture program's frames named from its symbol table (`graph_launch.syms`)
/// and every other library's frames as `(lib)`: those libraries are symbolised against whatever
/// files of the same path this machine has, so their names differ between machines.
fn readable(folded: &str) -> String {
    let syms = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/graph_launch/graph_launch.syms"),
    )
    .expect("symbols");
    let syms: Vec<(u64, u64, &str)> = syms
        .lines()
        .filter_map(|l| {
            let mut it = l.splitn(4, ' ');
            let (a, sz, _, n) = (it.next()?, it.next()?, it.next()?, it.next()?);
            Some((u64::from_str_radix(a, 16).ok()?, u64::from_str_radix(sz, 16).ok()?, n))
        })
        .collect();
    let name = |frame: &str| -> String {
        if let Some(off) = frame.strip_prefix("graph_launch+0x") {
            let a = u64::from_str_radix(off, 16).unwrap_or(0);
            if let Some((_, _, n)) = syms.iter().find(|(s, sz, _)| a >= *s && a < s + sz) {
                return n.split('(').next().unwrap_or(n).to_owned();
            }
            return frame.to_owned();
        }
        let keep = frame.starts_with('[')
            || frame.starts_with("cuGraphLaunch")
            || frame.starts_with("cuLaunchKernel");
        if keep {
            frame.to_owned()
        } else {
            "(lib)".to_owned()
        }
    };
    let mut out = String::new();
    for line in folded.lines() {
        let (stack, weight) = line.rsplit_once(' ').unwrap_or((line, ""));
        let frames: Vec<String> = stack.split(';').map(name).collect();
        out.push_str(&format!("{} {weight}\n", frames.join(";")));
    }
    out
}

/// A replayed CUDA graph through the real host, in the three `graph_stacks` modes: each graph
/// kernel under the graph launch (`launch_graph`), under the capture-time launch of its node
/// (`build_graph`), or both with `[recorded at]` between them. The stream is
/// `graph_nodes_double` (the real `graph_launch` capture plus the node messages of a test double,
/// see its README); frames are addresses in the fixture's modules, which are not on this machine.
#[test]
fn replayed_graph_kernels_sit_under_their_replay_and_capture_stacks() {
    let Some(xpuprof) = host::xpuprof(&["cupti", "folded"]) else { return };
    for mode in ["replay", "capture", "both"] {
        let config = format!("[sink.folded]\ngraph_stacks = \"{mode}\"\n");
        let (folded, stderr) = fold_replayed(&xpuprof, "graph_nodes_double/stream.bin", &config);
        let kernels: Vec<&str> = folded.lines().filter(|l| l.contains("[GPU_Kernel]graph_k")).collect();
        assert_eq!(kernels.len(), 3, "{mode}: one line per node:\n{folded}");
        for l in &kernels {
            let graph_launch = l.contains("cuGraphLaunch");
            let recorded_at = l.contains("[recorded at]");
            let capture = l.contains("cuLaunchKernel");
            let expected = match mode {
                "replay" => (true, false, false),
                "capture" => (false, false, true),
                _ => (true, true, true),
            };
            assert_eq!((graph_launch, recorded_at, capture), expected, "{mode}: {l}");
        }
        assert!(
            stderr.contains("device ops run from recordings (graph replays, command lists): 6 (6 under the call that recorded them"),
            "{mode}: {stderr}"
        );
        xpuprof_testkit::golden::check(&format!("graph_stacks_{mode}.folded"), &readable(&folded));
    }
}

#[test]
fn a_target_without_cuda_is_reported_as_no_cuda_process_seen() {
    let Some(xpuprof) = host::xpuprof(&["cupti", "folded"]) else { return };
    let dir = host::target_dir();
    let out = tempfile::tempdir().unwrap();
    let o = Command::new(&xpuprof)
        .args(["--plugin-dir"])
        .arg(&dir)
        .args(["--source", "cupti", "--sink", "folded", "-o"])
        .arg(out.path())
        .args(["--", "true"])
        .output()
        .expect("run xpuprof");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "the target's exit code: {stderr}");
    assert!(stderr.contains("no CUDA process was seen"), "{stderr}");
}

/// `launch_stacks = "both"` in a session without the eBPF source: half of the setting cannot
/// work, and the user is told which half and how to fix it.
#[test]
fn ebpf_launch_stacks_without_the_ebpf_source_warn_with_the_fix() {
    let Some(xpuprof) = host::xpuprof(&["cupti", "folded"]) else { return };
    let out = tempfile::tempdir().unwrap();
    let cfg = out.path().join("xpuprof.toml");
    std::fs::write(&cfg, "[source.cupti]\nlaunch_stacks = \"both\"\n").unwrap();
    let o = Command::new(&xpuprof)
        .args(["--plugin-dir"])
        .arg(host::target_dir())
        .arg("-c")
        .arg(&cfg)
        .args(["--source", "cupti", "--sink", "folded", "-o"])
        .arg(out.path().join("out"))
        .args(["--", "true"])
        .output()
        .expect("run xpuprof");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(
        stderr.contains(
            "launch_stacks = \"both\" takes launch stacks from the eBPF source, which is not in \
             this session: only the agent's stacks are recorded\nhint: run with --source ebpf,cupti (root), or \
             set launch_stacks = \"agent\""
        ),
        "{stderr}"
    );
}
