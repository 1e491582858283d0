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
