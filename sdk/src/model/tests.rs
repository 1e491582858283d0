use super::*;
use crate::codec::columns::{Row, RowReader, MAX_COLUMNS};

fn archived_examples() -> Vec<Record> {
    vec![
        Record::ApiCall(ApiCall::default().pid(1).start(5).end(9).correlation(Some(Correlation::new(1, 2)))),
        Record::LaunchSite(
            LaunchSite::default().time(3).correlation(Correlation::new(1, 2)).stack(StackId(4)),
        ),
        Record::DeviceOp(
            DeviceOp::default()
                .start(10)
                .end(7) // ends before it starts: wraps, still lossless
                .kernel(Some(KernelInfo::work_items([64, 1, 1], [8, 1, 1]).vgprs(3)))
                .launch(Some(LaunchRef::new(1, StackId(2), StrId(3), 4)))
                .submission(Some(Submission::default().list(7).record(Some(Correlation::new(3, 9))))),
        ),
        Record::CpuSample(CpuSample::default().time(1).kind(SampleKind::OffCpu).weight(9)),
        Record::Marker(Annotation::default().start(4).end(4)),
        Record::Range(Annotation::default().start(4).end(8).clock(ClockDomain(2))),
        Record::Counter(Counter::default().time(4).value(-1.5)),
        Record::Overhead(Overhead::default().start(4).end(8).kind(OverheadKind::BufferFlush)),
    ]
}

#[test]
fn columns_round_trip_and_match_their_hints() {
    for r in archived_examples() {
        let mut row = Row::new();
        let kind = r.put_columns(&mut row).expect("an archived kind");
        assert_eq!(r.archive_kind(), Some(kind));
        let hints = Record::column_hints(kind).unwrap();
        assert_eq!(hints.len(), row.len(), "{r:?}");
        assert!(row.len() <= MAX_COLUMNS);
        let back = Record::from_columns(kind, &mut RowReader::new(row.as_slice())).unwrap();
        assert_eq!(back, r);
    }
}

#[test]
fn every_archive_kind_fits_the_mask_and_is_unique() {
    let kinds = Record::archive_kinds();
    for (i, k) in kinds.iter().enumerate() {
        assert!((1..16).contains(k), "archive kinds are 4 bits, 0 = raw");
        assert!(!kinds[..i].contains(k), "archive kind {k} declared twice");
        assert!(Record::column_hints(*k).unwrap().len() <= MAX_COLUMNS);
    }
}

#[test]
fn records_without_columns_are_stored_raw() {
    let r = Record::Str(StrDef::new(StrId(1), "x"));
    assert_eq!(r.put_columns(&mut Row::new()), None);
    assert_eq!(r.archive_kind(), None);
}

#[test]
fn unknown_vendors_keep_their_number() {
    assert_eq!(Vendor::from_u8(0x41), Vendor(0x41));
    assert_eq!(format!("{:?}", Vendor::Nvidia), "Nvidia");
    assert_eq!(Vendor(0x41).known_name(), None);
}

/// Adds 100 to every id it is shown, and counts them.
#[derive(Default)]
struct Shift(u32);

impl IdMapper for Shift {
    fn str(&mut self, id: StrId) -> StrId {
        self.0 += 1;
        StrId(id.0 + 100)
    }
    fn device(&mut self, id: DeviceId) -> DeviceId {
        self.0 += 1;
        DeviceId(id.0 + 100)
    }
    fn stream(&mut self, id: StreamId) -> StreamId {
        self.0 += 1;
        StreamId(id.0 + 100)
    }
    fn module(&mut self, id: ModuleId) -> ModuleId {
        self.0 += 1;
        ModuleId(id.0 + 100)
    }
    fn frame(&mut self, id: FrameId) -> FrameId {
        self.0 += 1;
        FrameId(id.0 + 100)
    }
    fn stack(&mut self, id: StackId) -> StackId {
        self.0 += 1;
        StackId(id.0 + 100)
    }
}

#[test]
fn the_id_visitor_sees_every_reference_of_its_kind_and_no_own_id() {
    let mut op = DeviceOp::default()
        .device(DeviceId(1))
        .stream(StreamId(2))
        .name(StrId(3))
        .src_device(DeviceId(4))
        .launch(Some(LaunchRef::new(1, StackId(5), StrId(6), 7)));
    let mut m = Shift::default();
    op.map_ids(&mut m);
    assert_eq!(m.0, 7, "device, stream, name, src_device, dst_device and the launch's stack and api");
    assert_eq!(
        (op.device, op.stream, op.name, op.dst_device),
        (DeviceId(101), StreamId(102), StrId(103), DeviceId(100))
    );
    assert_eq!(op.launch.map(|l| (l.stack, l.api, l.time)), Some((StackId(105), StrId(106), 7)));

    let mut frame =
        FrameDef::default().id(FrameId(9)).module(ModuleId(1)).name(StrId(2)).inlined(vec![StrId(3)]);
    frame.map_ids(&mut Shift::default());
    assert_eq!(
        (frame.id, frame.module, frame.name, frame.inlined),
        (FrameId(9), ModuleId(101), StrId(102), vec![StrId(103)])
    );
}

#[test]
fn the_time_visitor_lends_the_clock_and_the_timestamps() {
    let mut call = ApiCall::default().start(5).end(9).clock(ClockDomain(3));
    let seen = call.clock_times(|clock, times| {
        *clock = ClockDomain::SESSION;
        for t in times.iter_mut() {
            **t += 1000;
        }
        times.len()
    });
    assert_eq!((seen, call.start, call.end, call.clock), (2, 1005, 1009, ClockDomain::SESSION));
    let mut sample = CpuSample::default().time(4);
    assert_eq!(sample.clock_times(|_, times| times.len()), 1);
}
