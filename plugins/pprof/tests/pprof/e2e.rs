//! The sink inside the real host: a live scripted session and `xpuprof report` of its archive.

use xpuprof_plugin_pprof::FILE_NAME;

use crate::go;
use crate::host;

#[test]
fn scripted_session_live_and_replayed_gives_the_same_profile() {
    let Some(bin) = host::xpuprof(&["scripted", "pprof", "archive"]) else { return };
    let live = tempfile::tempdir().unwrap();
    host::record(&bin, "pprof,archive", live.path());
    let a = go::pprof(&["-raw"], &live.path().join(FILE_NAME));
    assert!(a.contains("[GPU_Kernel]"), "{a}");
    let replay = tempfile::tempdir().unwrap();
    let (archive, out) = (live.path().to_str().unwrap(), replay.path().to_str().unwrap());
    host::run(&bin, &["report", archive, "--sink", "pprof", "-o", out]);
    let b = go::pprof(&["-raw"], &replay.path().join(FILE_NAME));
    // The comments name the recorded command, which a replay does not have.
    let strip =
        |s: &str| s.lines().filter(|l| !l.starts_with("Comment: command")).collect::<Vec<_>>().join("\n");
    assert_eq!(strip(&a), strip(&b), "report reproduces the live profile");
}

/// Profiles of real CUDA runs recorded on the H100 (`tests/fixtures/outputs`, made by
/// `scripts/gpu/capture-outputs.sh`).
#[test]
fn captured_cuda_profiles_read_in_go_pprof() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/outputs");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let profile = entry.unwrap().path().join(FILE_NAME);
        if profile.is_file() {
            let top = go::pprof(&["-top", "-sample_index=gpu_time"], &profile);
            assert!(top.contains("[GPU_Kernel]"), "{}: {top}", profile.display());
            seen += 1;
        }
    }
    assert!(seen >= 2, "the captured profiles in {} are missing", dir.display());
}
