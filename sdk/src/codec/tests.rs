use super::*;
use crate::model::*;

fn corr(id: u64) -> Option<Correlation> {
    Some(Correlation::new(backend::CUDA, id))
}

fn kernel_op() -> DeviceOp {
    DeviceOp::default()
        .kind(DeviceOpKind::Kernel)
        .pid(9)
        .device(DeviceId(1))
        .stream(StreamId(7))
        .start(1_000_000)
        .end(1_002_000)
        .name(StrId(2))
        .correlation(corr(42))
        .kernel(Some(KernelInfo::blocks([1, 2, 3], [4, 5, 6]).shared_memory(7).registers(8)))
        .graph(Some(GraphInfo::new(5, 6)))
}

fn sample_records() -> Vec<Record> {
    vec![
        Record::Str(StrDef::new(StrId(1), "cudaLaunchKernel")),
        Record::Str(StrDef::new(StrId(2), "x".repeat(300))),
        Record::Frame(
            FrameDef::default()
                .id(FrameId(3))
                .module(ModuleId(2))
                .address(0x1234)
                .pid(9)
                .name(StrId(1))
                .inlined(vec![StrId(1), StrId(2)]),
        ),
        Record::Stack(StackDef::new(StackId(1), vec![FrameId(3), FrameId(3)])),
        Record::DeviceOp(kernel_op()),
        Record::ApiCall(
            ApiCall::default()
                .pid(9)
                .tid(10)
                .start(5)
                .end(9)
                .name(StrId(1))
                .external(Some(ExternalId { kind: 0, id: 3 }))
                .result(-4),
        ),
        Record::Counter(Counter::default().pid(1).device(DeviceId(1)).time(3).name(StrId(1)).value(2.5)),
        Record::Loss(Loss::default().pid(1).time(2).cause(StrId(1)).count(17)),
    ]
}

/// Records using every field added since codec version 1.
fn new_field_records() -> Vec<Record> {
    vec![
        Record::Device(
            DeviceDef::default()
                .id(DeviceId(2))
                .vendor(Vendor::Intel)
                .kind(DeviceKind::SubDevice)
                .native_id(0xdead_beef)
                .parent(DeviceId(1))
                .arch(StrId(3))
                .vendor_name(StrId(4)),
        ),
        Record::Stream(
            StreamDef::default().id(StreamId(3)).kind(QueueKind::LevelZeroImmediateList).parent(StreamId(2)),
        ),
        Record::ClockDomain(
            ClockDomainDef::default()
                .domain(ClockDomain(5))
                .ticks_per_second(19_200_000)
                .valid_bits(32)
                .name(StrId(1)),
        ),
        Record::ApiCall(ApiCall::default().kind(ApiKind::Launch).clock(ClockDomain(5)).start(1).end(2)),
        Record::DeviceOp(
            kernel_op()
                .kernel(Some(
                    KernelInfo::work_items([1024, 1, 1], [64, 1, 1]).vgprs(128).sgprs(40).scratch_bytes(256),
                ))
                .launch(Some(LaunchRef::new(3, StackId(4), StrId(5), 6)))
                .src_device(DeviceId(1))
                .dst_device(DeviceId(2))
                .submission(Some(Submission::default().list(0x5000).record(corr(3)).execution(9))),
        ),
        Record::LaunchSite(
            LaunchSite::default().correlation(Correlation::new(backend::TEST, 1)).clock(ClockDomain(2)),
        ),
        Record::CpuSample(CpuSample::default().kind(SampleKind::OffCpu).clock(ClockDomain(1))),
        Record::Range(Annotation::default().start(1).end(5).clock(ClockDomain(3))),
        Record::Overhead(
            Overhead::default()
                .pid(1)
                .tid(2)
                .start(10)
                .end(20)
                .kind(OverheadKind::BufferFlush)
                .name(StrId(1))
                .device(DeviceId(1))
                .clock(ClockDomain(4)),
        ),
    ]
}

fn round_trip(recs: &[Record]) {
    let mut buf = Vec::new();
    for r in recs {
        encode(r, &mut buf);
    }
    assert_eq!(decode_all(&buf).unwrap(), recs);
}

#[test]
fn round_trips_every_record() {
    round_trip(&sample_records());
    round_trip(&new_field_records());
}

#[test]
fn new_fields_leave_the_version_1_prefix_unchanged() {
    // A reader of codec version 1 reads the positional prefix and ignores the rest: adding
    // fields must not move a byte of it.
    let plain = kernel_op();
    let rich = kernel_op()
        .src_device(DeviceId(1))
        .kernel(Some(KernelInfo::blocks([1, 2, 3], [4, 5, 6]).shared_memory(7).registers(8).vgprs(3)));
    let (mut a, mut b) = (Vec::new(), Vec::new());
    encode(&Record::DeviceOp(plain), &mut a);
    encode(&Record::DeviceOp(rich), &mut b);
    assert!(b.len() > a.len());
    assert_eq!(a[0], b[0]);
    assert_eq!(&a[2..], &b[2..a.len()], "the positional part moved");
}

#[test]
fn skips_unknown_tags_and_ignores_appended_fields() {
    let loss = Loss::default().pid(1).time(2).cause(StrId(3)).count(4);
    let mut buf = vec![200, 3, 1, 2, 3];
    encode(&Record::Loss(loss.clone()), &mut buf);
    // Simulate a newer writer that appended keyed field 60 (varint 99) to the loss record.
    buf[6] += 2;
    buf.extend_from_slice(&[(60 << 3) as u8 | 0x80, 60 >> 4, 99]);
    buf[6] += 1;
    let mut d = Decoder::new(&buf);
    let got: Vec<_> = d.by_ref().collect::<Result<_, _>>().unwrap();
    assert_eq!(got, vec![Record::Loss(loss)]);
    assert_eq!(d.skipped(), 1);
}

#[test]
fn truncated_batch_reports_offset_and_keeps_prefix() {
    let mut buf = Vec::new();
    for r in sample_records() {
        encode(&r, &mut buf);
    }
    let cut = buf.len() - 3;
    let results: Vec<_> = Decoder::new(&buf[..cut]).collect();
    assert!(results[..results.len() - 1].iter().all(|r| r.is_ok()));
    let err = results.last().unwrap().clone().unwrap_err();
    assert!(err.offset > 0 && err.offset < cut, "{err}");
}

#[test]
fn launch_site_without_correlation_is_malformed() {
    // tag 18, len 3: pid 1, tid 2, time 3, then correlation 0 (none)
    let buf = [18u8, 4, 1, 2, 3, 0];
    let err = decode_all(&buf).unwrap_err();
    assert!(err.reason.contains("correlation"), "{err}");
}

#[test]
fn every_tag_is_unique() {
    let mut tags: Vec<u8> = Record::tags().iter().map(|t| t.0).collect();
    tags.sort_unstable();
    tags.dedup();
    assert_eq!(tags.len(), Record::tags().len());
}

#[test]
fn count_records_reads_the_framing_only_and_stops_at_a_broken_frame() {
    let recs = sample_records();
    let mut buf = Vec::new();
    for r in &recs {
        encode(r, &mut buf);
    }
    assert_eq!(count_records(&buf), recs.len() as u64);
    assert_eq!(count_records(&[]), 0);
    // A frame that claims more bytes than the batch holds is not counted.
    let whole = buf.len();
    buf.extend_from_slice(&[1, 200]);
    assert_eq!(count_records(&buf), recs.len() as u64);
    assert_eq!(count_records(&buf[..whole - 1]), recs.len() as u64 - 1);
}

#[test]
fn records_decoded_onto_a_vector_are_the_iterators_and_a_bad_one_is_not_appended() {
    let recs: Vec<Record> = sample_records().into_iter().chain(new_field_records()).collect();
    let mut buf = vec![200, 3, 1, 2, 3];
    for r in &recs {
        encode(r, &mut buf);
    }
    let mut d = Decoder::new(&buf);
    let mut out = vec![Record::Loss(Loss::default())];
    while let Some(r) = d.next_onto(&mut out) {
        r.unwrap();
    }
    assert_eq!(out[1..], recs);
    assert_eq!(d.skipped(), 1);
    // The launch site without its correlation id: malformed, an error, and nothing appended.
    let bad = [18u8, 4, 1, 2, 3, 0];
    let mut d = Decoder::new(&bad);
    let err = d.next_onto(&mut out).unwrap().unwrap_err();
    assert!(err.reason.contains("correlation"), "{err}");
    assert_eq!(out.len(), recs.len() + 1);
    assert!(d.next_onto(&mut out).is_none());
}
