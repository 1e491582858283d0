//! The sink inside the real host: a live scripted session, `xpuprof report` of its archive, and
//! real CUDA agent streams captured on the H100 (`plugins/cupti/tests/fixtures`) replayed through the
//! cupti source, recorded, and converted again with `xpuprof report`.

use std::path::{Path, PathBuf};
use std::process::Command;

use xpuprof_plugin_perfetto::FILE_NAME;

use crate::check;
use crate::golden;
use crate::host;

/// Sends a captured agent stream to the socket the cupti plugin prepared, as the agent would.
const REPLAY_AGENT: &str = "import os, socket, sys\n\
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n\
s.connect(os.environ['XPUPROF_CUPTI_SOCKET'])\n\
s.sendall(open(sys.argv[1], 'rb').read())\n\
s.close()\n";

/// Checks the perfetto trace and the pprof profile of `dir`; returns the trace's summary.
fn check_outputs(bin: &Path, dir: &Path) -> serde_json::Value {
    let summary = check::check(&dir.join(FILE_NAME));
    let profile = dir.join("profile.pb.gz");
    assert!(std::fs::metadata(&profile).is_ok_and(|m| m.len() > 0), "no profile in {}", dir.display());
    let _ = bin;
    summary
}

/// `xpuprof report <archive> --sink perfetto,pprof -o <out>`.
fn report(bin: &Path, archive: &Path, out: &Path) {
    host::run(
        bin,
        &["report", archive.to_str().unwrap(), "--sink", "perfetto,pprof", "-o", out.to_str().unwrap()],
    );
}

#[test]
fn scripted_session_live_and_replayed_writes_the_same_valid_trace() {
    let Some(bin) = host::xpuprof(&["scripted", "perfetto", "pprof", "archive"]) else { return };
    let live = tempfile::tempdir().unwrap();
    host::record(&bin, "perfetto,pprof,archive", live.path());
    let summary = check_outputs(&bin, live.path());
    assert!(summary["flows"].as_u64().unwrap() > 0, "{summary}");
    let dump = check::dump(&live.path().join(FILE_NAME));
    golden::check("scripted.perfetto-trace.txt", &dump);
    let replay = tempfile::tempdir().unwrap();
    report(&bin, live.path(), replay.path());
    check_outputs(&bin, replay.path());
    assert_eq!(check::dump(&replay.path().join(FILE_NAME)), dump, "report reproduces the live trace");
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../plugins/cupti/tests/fixtures")
        .join(name)
        .join("stream.bin")
}

#[test]
fn real_cuda_streams_convert_and_pass_the_checks() {
    let Some(bin) = host::xpuprof(&["cupti", "perfetto", "pprof", "archive"]) else { return };
    for name in ["basic", "graph_launch", "multi_stream", "multi_thread"] {
        let out = tempfile::tempdir().unwrap();
        let o = Command::new(&bin)
            .arg("--plugin-dir")
            .arg(host::target_dir())
            .args(["--source", "cupti", "--sink", "perfetto,pprof,archive", "-o"])
            .arg(out.path())
            .args(["--", "python3", "-c", REPLAY_AGENT])
            .arg(fixture(name))
            .output()
            .expect("run xpuprof");
        assert!(o.status.success(), "{name}: {}", String::from_utf8_lossy(&o.stderr));
        let live = check_outputs(&bin, out.path());
        assert!(live["flows"].as_u64().unwrap() > 0, "{name}: kernels joined to launches: {live}");
        let flows = live["flow_places"].as_object().unwrap();
        assert!(
            flows.keys().all(|k| k == "thread with stack -> device"),
            "{name}: flows from stacked API slices: {live}"
        );
        assert!(live["api_slices_with_stack"].as_u64().unwrap() > 0, "{name}: launch stacks: {live}");
        assert_eq!(live["lanes_without_overlap"], 0, "{name}: a lane without real overlap: {live}");
        let tracks = live["tracks"].as_object().unwrap();
        assert!(tracks.keys().any(|t| t.starts_with("GPU 0 (")), "{name}: device track: {live}");
        let replay = tempfile::tempdir().unwrap();
        report(&bin, out.path(), replay.path());
        let replayed = check_outputs(&bin, replay.path());
        assert_eq!(replayed["flows"], live["flows"], "{name}");
        assert_eq!(replayed["slices_per_track"], live["slices_per_track"], "{name}");
    }
}

/// Traces of real CUDA runs recorded on the H100 (`tests/fixtures/outputs`, made by
/// `scripts/gpu/capture-outputs.sh`): they pass the checks, and every kernel the program says it
/// launched (`EXPECT kernels=N` in its output) is a slice on a stream track with a flow from its
/// launch.
#[test]
fn captured_cuda_traces_pass_the_checks() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/outputs");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let run = entry.unwrap().path();
        let trace = run.join(FILE_NAME);
        if !trace.is_file() {
            continue;
        }
        let s = check::check(&trace);
        let stdout = std::fs::read_to_string(run.join("stdout.txt")).unwrap();
        let kernels: u64 = stdout
            .split_whitespace()
            .find_map(|w| w.strip_prefix("kernels="))
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no EXPECT kernels= in {}", run.display()));
        let on_streams: u64 = s["slices_per_track"]
            .as_object()
            .unwrap()
            .iter()
            .filter(|(track, _)| track.starts_with("stream "))
            .map(|(_, n)| n.as_u64().unwrap())
            .sum();
        assert!(
            on_streams >= kernels,
            "{}: {on_streams} slices on streams, {kernels} kernels: {s}",
            run.display()
        );
        assert!(s["flows"].as_u64().unwrap() >= kernels, "{}: {s}", run.display());
        seen += 1;
    }
    assert!(seen >= 2, "the captured traces in {} are missing", dir.display());
}
