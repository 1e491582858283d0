//! Writing and replaying an archive allocate nothing per record (#16): the column encoders and
//! the replay's batches are reused, so 200k launches make about as many allocations as 10k.

use xpuprof_archive::{open, sample, Meta, Writer};
use xpuprof_testkit::alloc::{allocations, assert_flat, Counting};

#[global_allocator]
static ALLOC: Counting = Counting;

/// Records of `n` launches: the allocations of writing them (creation to finish, in batches
/// of 1,024 as the archive sink receives them) and of replaying them as records.
fn run(n: usize) -> ((usize, u64), (usize, u64)) {
    let records = sample::launches(n);
    let dir = tempfile::tempdir().unwrap();
    let (written, ()) = allocations(|| {
        let mut w = Writer::create(dir.path(), &Meta::default()).unwrap();
        for batch in records.chunks(1024) {
            for r in batch {
                w.write(r).unwrap();
            }
            w.end_batch().unwrap();
        }
        w.finish().unwrap();
    });
    let mut reader = open(dir.path()).unwrap();
    let (replayed, out) = allocations(|| {
        let mut out = 0usize;
        let stats = reader.replay_records(&mut |batch| out += batch.len()).unwrap();
        assert!(stats.corruption.is_none());
        out
    });
    assert_eq!(out, records.len(), "every record replayed");
    ((records.len(), written), (records.len(), replayed))
}

#[test]
fn writing_and_replaying_allocate_nothing_per_record() {
    let (write_small, replay_small) = run(10_000);
    let (write_large, replay_large) = run(200_000);
    assert_flat("archive writer", write_small, write_large);
    assert_flat("archive replay", replay_small, replay_large);
}
