//! PC sampling on the host: the agent's PC sampling messages ([`pc_sampling`] of the cupti wire
//! crate) through the real decoder into DeviceSample records and losses, then the folded PC
//! view of those records. The stream is written here with the wire crate's own writers (the
//! messages the agent sends); the captured stream of a real run is checked in `pc_replay`.

use xpuprof_plugin_cupti::cuda_wire::pc_sampling as pc;
use xpuprof_plugin_cupti::wire::{self, Hello};
use xpuprof_plugin_cupti::Decoder;
use xpuprof_sdk::model::*;
use xpuprof_sdk::{codec, Emitter, Logger};
use xpuprof_toolbox::agent_host::StreamDecoder;

fn decode(stream: &[u8]) -> Vec<Record> {
    let mut dec = Decoder::new(Logger::stderr());
    let mut out = Emitter::detached();
    let used = dec.feed(1, stream, &mut out);
    assert_eq!(used, stream.len(), "the stream decodes whole");
    dec.finish(&mut out);
    codec::decode_all(&out.take_buffer()).expect("decodable records")
}

fn text(records: &[Record], id: StrId) -> String {
    records
        .iter()
        .find_map(|r| match r {
            Record::Str(s) if s.id == id => Some(s.text.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

#[test]
fn samples_become_records_with_short_reasons_and_losses() {
    let mut s = Vec::new();
    Hello::new(130_000, wire::FLAG_MONOTONIC_TIMESTAMPS).encode(&mut s);
    let reasons = [
        (1, "smsp__pcsamp_warps_issue_stalled_long_scoreboard".to_owned()),
        (2, "smsp__pcsamp_warps_issue_stalled_long_scoreboard_not_issued".to_owned()),
        (3, "smsp__pcsamp_warps_issue_stalled_wait".to_owned()),
        (0, "smsp__pcsamp_sample_count".to_owned()),
    ];
    pc::put_stall_reasons(&mut s, 1, 0, &reasons);
    pc::put_cubin(&mut s, 0xC0B1, 1, None);
    let h = pc::FetchHeader { time: 1_000, context: 1, total: 60, dropped: 5, ..Default::default() };
    let mut w = pc::SamplesWriter::new(&h);
    w.pc((0xC0B1, 0x40, 0, 0), b"_Z5chasePKjPjji", &[(1, 40), (2, 38), (3, 2), (0, 42)]);
    w.pc((0xDEAD, 0x80, 0, 0), b"_Z5chainPfi", &[(3, 13)]);
    w.end(&mut s);
    pc::put_status(&mut s, 2, 17, "cuptiPCSamplingEnable: not supported");
    let records = decode(&s);
    let samples: Vec<&DeviceSample> =
        records.iter().filter_map(|r| if let Record::DeviceSample(d) = r { Some(d) } else { None }).collect();
    let seen: Vec<(String, u64, String, u64)> = samples
        .iter()
        .map(|d| (text(&records, d.kernel), d.pc_offset, text(&records, d.stall), d.count))
        .collect();
    assert_eq!(
        seen,
        [
            ("_Z5chasePKjPjji".into(), 0x40, "long_scoreboard".into(), 40),
            ("_Z5chasePKjPjji".into(), 0x40, "wait".into(), 2),
            ("_Z5chainPfi".into(), 0x80, "wait".into(), 13),
        ],
        "the not-issued subset and the sample counter are not counted again; the prefix is gone"
    );
    assert!(samples.iter().all(|d| d.line == 0 && d.file.is_none() && d.end == 1_000 && d.code != 0));
    let losses: Vec<(String, u64)> = records
        .iter()
        .filter_map(|r| if let Record::Loss(l) = r { Some((text(&records, l.cause), l.count)) } else { None })
        .collect();
    for want in [
        ("cupti pc samples dropped by the hardware", 5),
        ("cupti pc samples of kernels whose cubin was not seen", 13),
        ("cupti pc sampling calls refused", 1),
    ] {
        assert!(losses.contains(&(want.0.into(), want.1)), "{want:?} in {losses:?}");
    }
}

#[test]
fn a_cut_message_is_counted_not_fatal() {
    let mut s = Vec::new();
    Hello::new(130_000, 0).encode(&mut s);
    let mut m = Vec::new();
    let mut w = pc::SamplesWriter::new(&pc::FetchHeader::default());
    w.pc((1, 2, 3, 4), b"k", &[(1, 1)]);
    w.end(&mut m);
    // Drop the last byte of the payload and fix the length: a malformed message.
    m.pop();
    let len = (m.len() - 4) as u32;
    m[..4].copy_from_slice(&len.to_le_bytes());
    s.extend_from_slice(&m);
    let records = decode(&s);
    assert!(!records.iter().any(|r| matches!(r, Record::DeviceSample(_))));
}
