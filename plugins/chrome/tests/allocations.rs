//! The chrome JSON writer allocates nothing per record (#16): numbers and names are written in
//! place into a reused buffer, so a 200k-launch trace makes about as many allocations as a
//! 10k-launch one.

use xpuprof_archive::sample;
use xpuprof_plugin_chrome::{TraceOptions, TraceWriter};
use xpuprof_sdk::SessionInfo;
use xpuprof_testkit::alloc::{allocations, assert_flat, Counting};

#[global_allocator]
static ALLOC: Counting = Counting;

/// Records written for `n` launches, and the writer's allocations from creation to its end.
fn run(n: usize) -> (usize, u64) {
    let records = sample::launches(n);
    let session =
        SessionInfo { output_dir: std::env::temp_dir(), sinks: vec!["chrome".into()], ..Default::default() };
    let (count, ()) = allocations(|| {
        let mut w = TraceWriter::new(std::io::sink(), TraceOptions { cpu_samples: true }).unwrap();
        for r in &records {
            w.record(r).unwrap();
        }
        w.finish(&session).unwrap();
    });
    (records.len(), count)
}

#[test]
fn the_writer_allocates_nothing_per_record() {
    assert_flat("chrome writer", run(10_000), run(200_000));
}
