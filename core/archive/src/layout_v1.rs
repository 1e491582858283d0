//! The column layout of archive format version 1, kept only to read archives written before
//! the model schema generated the layout (format version 2, [`crate::events`]). Frozen: it
//! describes files that exist; nothing writes it any more.
//!
//! Each event kind listed its fields with the ones that change from event to event first, then
//! the rarely changing ones; options were flattened into a presence-bits field.

use xpuprof_sdk::model::*;

/// Most fields any kind has.
pub const MAX_FIELDS: usize = 28;

/// A flattened version 1 event.
pub type Fields = [u64; MAX_FIELDS];

/// Event kinds version 1 stored compactly; everything else was stored as raw codec bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// Any record, stored as its `xpuprof_sdk::codec` bytes.
    Raw = 0,
    /// [`ApiCall`].
    Api = 1,
    /// [`LaunchSite`].
    Site = 2,
    /// [`DeviceOp`].
    Op = 3,
    /// [`CpuSample`].
    Sample = 4,
    /// [`Record::Marker`].
    Marker = 5,
    /// [`Record::Range`].
    Range = 6,
}

impl Kind {
    /// Decodes a kind number.
    pub fn from_u8(v: u8) -> Option<Self> {
        Some(match v {
            0 => Self::Raw,
            1 => Self::Api,
            2 => Self::Site,
            3 => Self::Op,
            4 => Self::Sample,
            5 => Self::Marker,
            6 => Self::Range,
            _ => return None,
        })
    }

    /// Number of fields of this kind.
    pub fn len(self) -> usize {
        match self {
            Self::Raw => 0,
            Self::Api => 11,
            Self::Site => 7,
            Self::Op => 28,
            Self::Sample => 6,
            Self::Marker | Self::Range => 6,
        }
    }
}

/// How a field is predicted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Predict {
    /// From the location's last timestamp (shared by all kinds).
    Time,
    /// From the location's last correlation id (shared by all kinds).
    Correlation,
    /// From the same field of the previous event of the same kind.
    Previous,
}

/// How field `i` of `kind` is predicted: field 0 is always the timestamp; the correlation id
/// sits at index 2 (API calls), 1 (launch sites) or 3 (device ops).
pub fn predictor(kind: Kind, i: usize) -> Predict {
    match (kind, i) {
        (_, 0) => Predict::Time,
        (Kind::Api, 2) | (Kind::Site, 1) | (Kind::Op, 3) => Predict::Correlation,
        _ => Predict::Previous,
    }
}

fn unzz(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

fn corr(present: bool, backend: u64, id: u64) -> Option<Correlation> {
    present.then_some(Correlation::new(backend as u32, id))
}

/// Rebuilds the record of `kind` from its version 1 fields. Values too large for their field
/// (only in a corrupt archive) are truncated, never a panic.
pub fn unflatten(kind: Kind, f: &Fields) -> Option<Record> {
    let u = |i: usize| f[i] as u32;
    Some(match kind {
        Kind::Raw => return None,
        Kind::Api => Record::ApiCall(
            ApiCall::default()
                .pid(u(5))
                .tid(u(4))
                .start(f[0])
                .end(f[0].wrapping_add(f[1]))
                .name(StrId(u(3)))
                .correlation(corr(f[7] & 1 != 0, f[8], f[2]))
                .external((f[7] & 2 != 0).then_some(ExternalId { kind: u(9), id: f[10] }))
                .result(unzz(f[6])),
        ),
        Kind::Site => Record::LaunchSite(
            LaunchSite::default()
                .pid(u(5))
                .tid(u(4))
                .time(f[0])
                .correlation(Correlation::new(u(6), f[1]))
                .api(StrId(u(3)))
                .stack(StackId(u(2))),
        ),
        Kind::Op => Record::DeviceOp(unflatten_op(f)),
        Kind::Sample => Record::CpuSample(
            CpuSample::default()
                .pid(u(5))
                .tid(u(4))
                .time(f[0])
                .kind(if f[3] == 1 { SampleKind::OffCpu } else { SampleKind::OnCpu })
                .weight(f[2])
                .stack(StackId(u(1))),
        ),
        Kind::Marker | Kind::Range => {
            let a = Annotation::default()
                .pid(u(5))
                .tid(u(4))
                .start(f[0])
                .end(f[0].wrapping_add(f[1]))
                .name(StrId(u(2)))
                .domain(StrId(u(3)));
            if kind == Kind::Marker {
                Record::Marker(a)
            } else {
                Record::Range(a)
            }
        }
    })
}

fn unflatten_op(f: &Fields) -> DeviceOp {
    let u = |i: usize| f[i] as u32;
    let bits = f[16];
    DeviceOp::default()
        .kind(DeviceOpKind::from_u8(f[12] as u8))
        .pid(u(11))
        .device(DeviceId(u(10)))
        .stream(StreamId(u(9)))
        .start(f[0])
        .end(f[0].wrapping_add(f[1]))
        .clock(ClockDomain(u(15)))
        .name(StrId(u(2)))
        .bytes(f[13])
        .copy(CopyKind::from_u8(f[14] as u8))
        .correlation(corr(bits & 1 != 0, f[17], f[3]))
        .kernel((bits & 2 != 0).then(|| {
            KernelInfo::blocks([u(18), u(19), u(20)], [u(21), u(22), u(23)])
                .shared_memory(u(24))
                .registers(u(25))
        }))
        .graph((bits & 4 != 0).then_some(GraphInfo::new(f[26], f[6])))
        .launch((bits & 8 != 0).then_some(LaunchRef::new(u(7), StackId(u(4)), StrId(u(8)), f[5])))
}
