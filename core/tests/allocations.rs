//! The host pipeline allocates nothing per event record (#16): decoding a source's batches onto
//! the output batch, renumbering, clocks and the correlator's join allocate only for
//! definitions and for tables that double as they grow, so the count does not grow with the
//! number of launches.

use xpuprof_archive::sample;
use xpuprof_core::pipeline::Pipeline;
use xpuprof_sdk::model::Record;
use xpuprof_testkit::alloc::{allocations, assert_flat, Counting};

#[global_allocator]
static ALLOC: Counting = Counting;

/// Records the pipeline delivered for `n` launches, and the allocations it made doing so.
fn run(n: usize) -> (usize, u64) {
    let input = sample::source_batches(n, 64 * 1024);
    let mut p = Pipeline::new(1, false);
    let (count, delivered) = allocations(|| {
        let mut delivered = 0usize;
        let mut sink = |out: &mut Vec<Record>, _: bool| {
            delivered += out.len();
            out.clear();
        };
        for b in &input {
            p.push(0, b, &mut sink);
        }
        p.finish(&mut sink);
        delivered
    });
    assert!(delivered >= 3 * n, "every record came out: {delivered} for {n} launches");
    (delivered, count)
}

#[test]
fn the_pipeline_allocates_nothing_per_record() {
    assert_flat("pipeline (decode, renumber, clocks, correlate)", run(10_000), run(200_000));
}
