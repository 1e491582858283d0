//! The Perfetto writer allocates nothing per record (#16): interning tables and the packet
//! buffer grow by doubling and are reused, so a 200k-launch trace makes about as many
//! allocations as a 10k-launch one.

use xpuprof_archive::sample;
use xpuprof_plugin_perfetto::{config, TraceWriter};
use xpuprof_testkit::alloc::{allocations, assert_flat, Counting};

#[global_allocator]
static ALLOC: Counting = Counting;

/// Records written for `n` launches, and the writer's allocations from creation to finish.
fn run(n: usize, compress: bool) -> (usize, u64) {
    let records = sample::launches(n);
    let mut opts = config::defaults();
    opts.output.compress = compress;
    let (count, ()) = allocations(|| {
        let mut w = TraceWriter::new(std::io::sink(), opts);
        for r in &records {
            w.record(r).unwrap();
        }
        w.finish().unwrap();
    });
    (records.len(), count)
}

#[test]
fn the_writer_allocates_nothing_per_record() {
    assert_flat("perfetto writer", run(10_000, true), run(200_000, true));
    assert_flat("perfetto writer, uncompressed", run(10_000, false), run(200_000, false));
}
