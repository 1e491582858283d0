//! Events as flat vectors of integer fields, the form the compact codec predicts and
//! delta-encodes.
//!
//! Each event kind lists its fields with the ones that change from event to event first (so the
//! "changed fields" mask usually fits one byte), then the rarely changing ones. Options are
//! flattened into a presence-bits field. The conversion is lossless in both directions.

use xpuprof_sdk::model::*;

/// Most fields any kind has.
pub const MAX_FIELDS: usize = 28;

/// A flattened event.
pub type Fields = [u64; MAX_FIELDS];

/// Event kinds stored compactly; everything else is stored as raw codec bytes.
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

fn zz(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzz(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

fn corr_parts(c: Option<Correlation>) -> (u64, u64, u64) {
    c.map_or((0, 0, 0), |c| (1, u64::from(c.backend), c.id))
}

fn corr(present: bool, backend: u64, id: u64) -> Option<Correlation> {
    present.then_some(Correlation { backend: backend as u32, id })
}

/// Flattens an event; `None` for records stored raw.
pub fn flatten(r: &Record, f: &mut Fields) -> Option<Kind> {
    *f = [0; MAX_FIELDS];
    Some(match r {
        Record::ApiCall(c) => {
            let (cp, cb, ci) = corr_parts(c.correlation);
            let (xk, xi) = c.external.map_or((0, 0), |x| (u64::from(x.kind), x.id));
            let bits = cp | (u64::from(c.external.is_some()) << 1);
            let dur = c.end.wrapping_sub(c.start);
            f[..11].copy_from_slice(&[
                c.start,
                dur,
                ci,
                c.name.0.into(),
                c.tid.into(),
                c.pid.into(),
                zz(c.result),
                bits,
                cb,
                xk,
                xi,
            ]);
            Kind::Api
        }
        Record::LaunchSite(s) => {
            let c = s.correlation;
            f[..7].copy_from_slice(&[
                s.time,
                c.id,
                s.stack.0.into(),
                s.api.0.into(),
                s.tid.into(),
                s.pid.into(),
                c.backend.into(),
            ]);
            Kind::Site
        }
        Record::DeviceOp(op) => {
            flatten_op(op, f);
            Kind::Op
        }
        Record::CpuSample(s) => {
            f[..6].copy_from_slice(&[
                s.time,
                s.stack.0.into(),
                s.weight,
                s.kind as u64,
                s.tid.into(),
                s.pid.into(),
            ]);
            Kind::Sample
        }
        Record::Marker(a) | Record::Range(a) => {
            let dur = a.end.wrapping_sub(a.start);
            f[..6].copy_from_slice(&[
                a.start,
                dur,
                a.name.0.into(),
                a.domain.0.into(),
                a.tid.into(),
                a.pid.into(),
            ]);
            if matches!(r, Record::Marker(_)) {
                Kind::Marker
            } else {
                Kind::Range
            }
        }
        _ => return None,
    })
}

fn flatten_op(op: &DeviceOp, f: &mut Fields) {
    let (cp, cb, ci) = corr_parts(op.correlation);
    let l = op.launch.unwrap_or(LaunchRef { tid: 0, stack: StackId::NONE, api: StrId::NONE, time: 0 });
    let k = op.kernel.unwrap_or_default();
    let g = op.graph.unwrap_or_default();
    let bits = cp
        | (u64::from(op.kernel.is_some()) << 1)
        | (u64::from(op.graph.is_some()) << 2)
        | (u64::from(op.launch.is_some()) << 3);
    let dur = op.end.wrapping_sub(op.start);
    let v = [
        op.start,
        dur,
        op.name.0.into(),
        ci,
        l.stack.0.into(),
        l.time,
        g.node,
        l.tid.into(),
        l.api.0.into(),
        op.stream.0.into(),
        op.device.0.into(),
        op.pid.into(),
        op.kind as u64,
        op.bytes,
        op.copy as u64,
        op.clock.0.into(),
        bits,
        cb,
        k.grid[0].into(),
        k.grid[1].into(),
        k.grid[2].into(),
        k.block[0].into(),
        k.block[1].into(),
        k.block[2].into(),
        k.shared_memory.into(),
        k.registers.into(),
        g.graph,
        0,
    ];
    f.copy_from_slice(&v);
}

/// Rebuilds the record of `kind` from its fields. Values too large for their field (only in a
/// corrupt archive) are truncated, never a panic.
pub fn unflatten(kind: Kind, f: &Fields) -> Option<Record> {
    let u = |i: usize| f[i] as u32;
    Some(match kind {
        Kind::Raw => return None,
        Kind::Api => Record::ApiCall(ApiCall {
            pid: u(5),
            tid: u(4),
            start: f[0],
            end: f[0].wrapping_add(f[1]),
            name: StrId(u(3)),
            correlation: corr(f[7] & 1 != 0, f[8], f[2]),
            external: (f[7] & 2 != 0).then_some(ExternalId { kind: u(9), id: f[10] }),
            result: unzz(f[6]),
        }),
        Kind::Site => Record::LaunchSite(LaunchSite {
            pid: u(5),
            tid: u(4),
            time: f[0],
            correlation: Correlation { backend: u(6), id: f[1] },
            api: StrId(u(3)),
            stack: StackId(u(2)),
        }),
        Kind::Op => Record::DeviceOp(unflatten_op(f)),
        Kind::Sample => Record::CpuSample(CpuSample {
            pid: u(5),
            tid: u(4),
            time: f[0],
            kind: if f[3] == 1 { SampleKind::OffCpu } else { SampleKind::OnCpu },
            weight: f[2],
            stack: StackId(u(1)),
        }),
        Kind::Marker | Kind::Range => {
            let a = Annotation {
                pid: u(5),
                tid: u(4),
                start: f[0],
                end: f[0].wrapping_add(f[1]),
                name: StrId(u(2)),
                domain: StrId(u(3)),
            };
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
    DeviceOp {
        kind: DeviceOpKind::from_u8(f[12] as u8),
        pid: u(11),
        device: DeviceId(u(10)),
        stream: StreamId(u(9)),
        start: f[0],
        end: f[0].wrapping_add(f[1]),
        clock: ClockDomain(u(15)),
        name: StrId(u(2)),
        bytes: f[13],
        copy: CopyKind::from_u8(f[14] as u8),
        correlation: corr(bits & 1 != 0, f[17], f[3]),
        kernel: (bits & 2 != 0).then_some(KernelInfo {
            grid: [u(18), u(19), u(20)],
            block: [u(21), u(22), u(23)],
            shared_memory: u(24),
            registers: u(25),
        }),
        graph: (bits & 4 != 0).then_some(GraphInfo { graph: f[26], node: f[6] }),
        launch: (bits & 8 != 0).then_some(LaunchRef {
            tid: u(7),
            stack: StackId(u(4)),
            api: StrId(u(8)),
            time: f[5],
        }),
    }
}
