//! PC sampling, end to end without a GPU: a stream the agent wrote on the GPU machine
//! (`tests/fixtures/pc_sampling/stream.bin`, captured by `scripts/gpu/parts/pcsampling.sh` from
//! `tests/workloads/pc_stalls.cu` built with `-lineinfo`; it carries the program's cubin) through
//! the real decoder, whose line tables resolve each sampled instruction to its source line; the
//! folded PC view of the records; and the same view after the records went through the native
//! archive and were replayed (identical).

use std::path::Path;

use xpuprof_archive::{Meta, Writer};
use xpuprof_fold::{FoldedBuilder, FoldedOptions};
use xpuprof_plugin_cupti::Decoder;
use xpuprof_sdk::model::*;
use xpuprof_sdk::{codec, Emitter, Logger};
use xpuprof_toolbox::agent_host::StreamDecoder;

/// The records of a stream, fed in uneven pieces as a socket delivers them.
pub(crate) fn decode(stream: &[u8]) -> Vec<Record> {
    let mut dec = Decoder::new(Logger::stderr());
    let mut out = Emitter::detached();
    let mut pending = Vec::new();
    for chunk in stream.chunks(777) {
        pending.extend_from_slice(chunk);
        let used = dec.feed(1, &pending, &mut out);
        pending.drain(..used);
    }
    assert!(pending.is_empty(), "the stream ends inside a message");
    dec.finish(&mut out);
    codec::decode_all(&out.take_buffer()).expect("decodable records")
}

/// The PC view's lines of `records`.
pub(crate) fn pc_lines(records: &[Record]) -> Vec<(String, u64)> {
    let mut b = FoldedBuilder::new(FoldedOptions::default());
    for r in records {
        b.add(r);
    }
    b.fold_pc().lines
}

/// `records` written to a native archive in `dir` and replayed.
pub(crate) fn through_archive(dir: &Path, records: &[Record]) -> Vec<Record> {
    let mut w = Writer::create(&dir.join("archive"), &Meta::default()).expect("archive");
    for batch in records.chunks(100) {
        for r in batch {
            w.write(r).expect("write");
        }
        w.end_batch().expect("batch");
    }
    w.finish().expect("finish");
    let mut reader = xpuprof_archive::open(dir).expect("open");
    let mut got = Vec::new();
    let stats = reader.replay_records(&mut |batch| got.append(batch)).expect("replay");
    assert!(stats.corruption.is_none(), "{:?}", stats.corruption);
    got
}

#[test]
fn the_pc_view_replays_identically_through_the_archive() {
    use xpuprof_plugin_cupti::cuda_wire::pc_sampling as pc;
    use xpuprof_plugin_cupti::wire::{self, Hello};
    let mut s = Vec::new();
    Hello::new(130_000, wire::FLAG_MONOTONIC_TIMESTAMPS).encode(&mut s);
    pc::put_stall_reasons(&mut s, 1, 0, &[(1, "smsp__pcsamp_warps_issue_stalled_wait".to_owned())]);
    for t in [100, 200] {
        let mut w = pc::SamplesWriter::new(&pc::FetchHeader { time: t, context: 1, ..Default::default() });
        w.pc((7, 0x10, 0, 0), b"k", &[(1, 3)]);
        w.end(&mut s);
    }
    let records = decode(&s);
    let before = pc_lines(&records);
    assert_eq!(before, [("[unknown launch site];[GPU_Kernel]k;[no source line];[stall]wait".to_owned(), 6)]);
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(pc_lines(&through_archive(dir.path(), &records)), before);
}
