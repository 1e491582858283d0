//! The archive sink stores the session facts and every record it received, in order.

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
