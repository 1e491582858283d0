//! The folded sink allocates nothing per record (#16): a launch adds its device time to a
//! stack that is already there, so 200k launches make about as many allocations as 10k,
//! counted from the first batch consumed to the three files written.

use xpuprof_archive::sample;
use xpuprof_plugin_folded::{FoldedOptions, FoldedSink};
use xpuprof_sdk::{Logger, Sink};
use xpuprof_testkit::alloc::{allocations, assert_flat, Counting};

#[global_allocator]
static ALLOC: Counting = Counting;

/// Records consumed for `n` launches, and the sink's allocations while consuming them in the
/// host's batch size and writing its files.
fn run(n: usize) -> (usize, u64) {
    let records = sample::launches(n);
    let dir = tempfile::tempdir().unwrap();
    let mut sink = FoldedSink::new(FoldedOptions::default(), true, dir.path().to_owned(), Logger::stderr());
    sink.open_outputs().unwrap();
    let (count, files) = allocations(|| {
        for batch in records.chunks(4096) {
            sink.consume(batch).unwrap();
        }
        sink.finish().unwrap()
    });
    assert_eq!(files.len(), 3, "profile.folded and its two views: {files:?}");
    (records.len(), count)
}

#[test]
fn the_sink_allocates_nothing_per_record() {
    assert_flat("folded sink", run(10_000), run(200_000));
}
