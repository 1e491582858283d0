//! Busy time per stream: each stream's busy time is the exact union of its own kernel
//! intervals (computed here the plain way), whatever order the records arrive in, and the
//! device's is the union over its streams, less than their sum where they overlapped.

use xpuprof_plugin_summary::config::SummaryConfig;
use xpuprof_plugin_summary::SummarySink;
use xpuprof_sdk::model::*;
use xpuprof_sdk::{Logger, SessionInfo};

/// (stream, start, end) of kernels on two streams of one device: back-to-back runs on each,
/// the second stream's overlapping the first's now and then, delivered out of order.
fn kernels() -> Vec<(u32, u64, u64)> {
    let mut x = 0x9e37_79b9_u64;
    let mut rnd = move |m: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % m
    };
    let mut out = Vec::new();
    for stream in 1..=2u32 {
        let mut t = 1_000_000 + u64::from(stream) * 1_700;
        for _ in 0..4_000 {
            let d = 300 + rnd(4_000);
            out.push((stream, t, t + d));
            t += d + if rnd(5) == 0 { rnd(200_000) } else { rnd(100) };
        }
    }
    for i in (0..out.len()).step_by(3) {
        let j = rnd(out.len() as u64) as usize;
        out.swap(i, j);
    }
    out
}

fn union_ns(mut v: Vec<(u64, u64)>) -> u64 {
    v.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::new();
    for (s, e) in v {
        match out.last_mut() {
            Some(p) if s <= p.1 => p.1 = p.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out.iter().map(|(s, e)| e - s).sum()
}

fn records(kernels: &[(u32, u64, u64)]) -> Vec<Record> {
    let mut r = vec![
        Record::Str(StrDef::default().id(StrId(1)).text("k".into())),
        Record::Str(StrDef::default().id(StrId(2)).text("nccl stream".into())),
        Record::Device(DeviceDef::default().id(DeviceId(1)).index(0)),
        Record::Stream(StreamDef::default().id(StreamId(1)).device(DeviceId(1)).pid(5).native_id(7)),
        Record::Stream(
            StreamDef::default().id(StreamId(2)).device(DeviceId(1)).pid(5).native_id(13).name(StrId(2)),
        ),
    ];
    r.extend(kernels.iter().map(|&(st, s, e)| {
        let op =
            DeviceOp::default().kind(DeviceOpKind::Kernel).pid(5).device(DeviceId(1)).stream(StreamId(st));
        Record::DeviceOp(op.start(s).end(e).name(StrId(1)))
    }));
    r
}

#[test]
fn each_streams_busy_time_is_the_union_of_its_kernels() {
    let input = kernels();
    for cap in [512, 65_536] {
        let cfg = SummaryConfig { timeline_intervals: cap, digest: false, ..SummaryConfig::default() };
        let mut s = SummarySink::new(cfg, SessionInfo::default(), Logger::stderr());
        for batch in records(&input).chunks(501) {
            s.add(batch);
        }
        let r = s.report();
        let of = |st: u32| input.iter().filter(|k| k.0 == st).map(|k| (k.1, k.2)).collect::<Vec<_>>();
        let rows: Vec<(&str, u64, u64)> =
            r.streams.iter().map(|s| (s.stream.as_str(), s.kernels, s.kernel_busy_ns)).collect();
        assert_eq!(
            rows,
            [("stream 7", 4_000, union_ns(of(1))), ("nccl stream", 4_000, union_ns(of(2)))],
            "cap {cap}"
        );
        let device = r.devices[0].kernel_busy_ns;
        assert_eq!(device, union_ns(input.iter().map(|k| (k.1, k.2)).collect()));
        assert!(
            device < rows[0].2 + rows[1].2,
            "the streams overlapped: the device is busy less than their sum"
        );
        let text = xpuprof_plugin_summary::text::render(&r, 20);
        assert!(text.contains("Streams (busy: the union of each stream's kernel intervals)"), "{text}");
        assert!(text.contains("nccl stream"), "{text}");
    }
}
