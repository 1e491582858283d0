//! The archive sink stores the session facts and every record it received, in order; end to
//! end, `xpuprof report` of a recorded archive reproduces the live outputs byte for byte.

use xpuprof_archive::sample;
use xpuprof_plugin_archive::ArchiveSink;
use xpuprof_sdk::{codec, Logger, SessionInfo, Sink};

#[test]
fn sink_archive_replays_what_it_received() {
    let dir = tempfile::tempdir().unwrap();
    let session = SessionInfo {
        output_dir: dir.path().to_owned(),
        command: vec!["./app".into(), "--fast".into()],
        sources: vec!["scripted".into()],
        sinks: vec!["archive".into()],
        start_time: 77,
        verbosity: 0,
        ..SessionInfo::default()
    };
    let mut sink = ArchiveSink::new(&session, Logger::stderr()).unwrap();
    let records = sample::session();
    for b in records.chunks(6) {
        sink.consume(b).unwrap();
    }
    let files = sink.finish().unwrap();
    assert_eq!(files, [dir.path().join("archive/trace.xpa")]);

    let mut reader = xpuprof_archive::open(dir.path()).unwrap();
    let m = reader.meta().clone();
    assert_eq!(
        (m.command, m.sources, m.sinks, m.start_time),
        (session.command, session.sources, session.sinks, 77)
    );
    let mut got = Vec::new();
    let stats = reader.replay(&mut |b| got.extend_from_slice(b)).unwrap();
    assert!(stats.corruption.is_none());
    assert_eq!(codec::decode_all(&got).unwrap(), records);
}

use xpuprof_testkit::host;

#[test]
fn report_reproduces_live_outputs_byte_for_byte() {
    let Some(bin) = host::xpuprof(&["scripted", "archive", "folded", "chrome", "flamegraph"]) else { return };
    let live = tempfile::tempdir().unwrap();
    host::record(&bin, "folded,chrome,flamegraph,archive", live.path());
    assert!(live.path().join("archive/trace.xpa").is_file());
    let replay = tempfile::tempdir().unwrap();
    let out = replay.path().join("out");
    host::run(
        &bin,
        &[
            "report",
            live.path().to_str().unwrap(),
            "--sink",
            "folded,chrome,flamegraph",
            "-o",
            out.to_str().unwrap(),
        ],
    );
    for f in ["profile.folded", "trace.json", "flamegraph.svg"] {
        let a = std::fs::read(live.path().join(f)).unwrap();
        let b = std::fs::read(out.join(f)).unwrap();
        assert!(!a.is_empty());
        assert!(a == b, "{f} from `xpuprof report` differs from the live run's");
    }
}

#[test]
fn report_of_a_damaged_archive_says_where_and_keeps_the_prefix() {
    let Some(bin) = host::xpuprof(&["scripted", "archive", "folded"]) else { return };
    let live = tempfile::tempdir().unwrap();
    host::record(&bin, "archive", live.path());
    let file = live.path().join("archive/trace.xpa");
    let bytes = std::fs::read(&file).unwrap();
    std::fs::write(&file, &bytes[..bytes.len() - 40]).unwrap();
    let out = live.path().join("replayed");
    let output = std::process::Command::new(&bin)
        .args(["report", live.path().to_str().unwrap(), "--sink", "folded", "-o", out.to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("trace.xpa") && stderr.contains("byte"), "{stderr}");
    assert!(out.join("profile.folded").is_file(), "the readable prefix is still replayed:\n{stderr}");
}
