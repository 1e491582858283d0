//! The pprof sink allocates nothing per record (#16): samples are aggregated per stack and
//! labels, which a long run of launches from the same places only adds to, so 200k launches
//! make about as many allocations as 10k.

use xpuprof_archive::sample;
use xpuprof_plugin_pprof::{PprofSink, ProfileOptions};
use xpuprof_sdk::{SessionInfo, Sink};
use xpuprof_testkit::alloc::{allocations, assert_flat, Counting};

#[global_allocator]
static ALLOC: Counting = Counting;

/// Records aggregated for `n` launches, and the sink's allocations while consuming them (its
/// creation and the written file are measured apart: they do not depend on the run's length).
fn run(n: usize) -> (usize, u64) {
    let records = sample::launches(n);
    let dir = tempfile::tempdir().unwrap();
    let session =
        SessionInfo { output_dir: dir.path().to_owned(), sinks: vec!["pprof".into()], ..Default::default() };
    let mut sink = PprofSink::new(ProfileOptions::default(), &session).unwrap();
    let (count, ()) = allocations(|| {
        for chunk in records.chunks(4096) {
            sink.consume(chunk).unwrap();
        }
    });
    sink.finish().unwrap();
    (records.len(), count)
}

#[test]
fn aggregating_allocates_nothing_per_record() {
    assert_flat("pprof aggregation", run(10_000), run(200_000));
}
