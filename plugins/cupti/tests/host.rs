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

const REPLAY: &str = r#"
import os, socket, sys
for k in ("CUDA_INJECTION64_PATH", "XPUPROF_CUPTI_OPTS"):
    assert os.environ.get(k), k + " not set"
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(os.environ["XPUPROF_CUPTI_SOCKET"])
data = open(sys.argv[1], "rb").read()
for i in range(0, len(data), 777):
    s.sendall(data[i:i + 777])
s.close()
"#;

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
    let fixture =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/cupti/graph_launch/stream.bin");
    let out = std::env::temp_dir().join(format!("xpuprof-cupti-host-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let o = Command::new(&xpuprof)
        .args(["--plugin-dir"])
        .arg(&dir)
        .args(["--source", "cupti", "--sink", "folded", "-o"])
        .arg(&out)
        .args(["--", "python3", "-c", REPLAY])
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
