//! Ids, correlation keys and clock domains: the small value types records refer to each other
//! and to the backend's calls with.

use crate::codec::columns::{Columns, Hint, Row, RowReader};
use crate::codec::wire::{put_varint, Cursor, Varint, Wire, WireType};

/// An id newtype: a `u32` where 0 means "none".
pub trait IdType: Copy {
    /// The id with raw value `v`.
    fn from_raw(v: u32) -> Self;
}

/// Defines a `u32` id newtype where 0 means "none".
macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
        pub struct $name(pub u32);

        impl $name {
            /// The "no such definition" id.
            pub const NONE: Self = Self(0);

            /// True when this is the "none" id.
            pub fn is_none(self) -> bool {
                self.0 == 0
            }
        }

        impl IdType for $name {
            fn from_raw(v: u32) -> Self {
                Self(v)
            }
        }

        impl Varint for $name {
            fn to_var(&self) -> u64 {
                u64::from(self.0)
            }
            #[inline]
            fn from_var(v: u64, c: &mut Cursor<'_>) -> Self {
                Self(u32::from_var(v, c))
            }
        }

        crate::codec::wire::wire_varint!($name);
        crate::codec::columns::one_column! {
            $name: |v| u64::from(v.0), |w| Self(w as u32);
        }
    };
}

id_type!(
    /// Id of an interned string ([`super::StrDef`]).
    StrId
);
id_type!(
    /// Id of a GPU or accelerator device ([`super::DeviceDef`]).
    DeviceId
);
id_type!(
    /// Id of a device stream or queue ([`super::StreamDef`]).
    StreamId
);
id_type!(
    /// Id of a loaded module: executable or shared library ([`super::ModuleDef`]).
    ModuleId
);
id_type!(
    /// Id of one code location ([`super::FrameDef`]).
    FrameId
);
id_type!(
    /// Id of a call stack ([`super::StackDef`]).
    StackId
);

/// Clock domain of a record's timestamps. [`ClockDomain::SESSION`] (0) is the session clock;
/// a source declares every other domain it uses with a [`super::ClockDomainDef`] and pairs it
/// with the session clock through [`super::ClockSync`] records; the host converts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct ClockDomain(pub u32);

impl ClockDomain {
    /// The session clock: `CLOCK_MONOTONIC` nanoseconds, the clock of `bpf_ktime_get_ns`.
    pub const SESSION: Self = Self(0);
}

impl IdType for ClockDomain {
    fn from_raw(v: u32) -> Self {
        Self(v)
    }
}

impl Varint for ClockDomain {
    fn to_var(&self) -> u64 {
        u64::from(self.0)
    }
    #[inline]
    fn from_var(v: u64, c: &mut Cursor<'_>) -> Self {
        Self(u32::from_var(v, c))
    }
}

crate::codec::wire::wire_varint!(ClockDomain);
crate::codec::columns::one_column! {
    ClockDomain: |v| u64::from(v.0), |w| Self(w as u32);
}

/// Timestamp in nanoseconds (or in ticks of its record's clock domain, before the host
/// converts it).
pub type Nanos = u64;

/// Backend numbers used in correlation keys and in the correlation trampoline.
///
/// A correlation id is only meaningful inside its backend and process: CUPTI's id 42 in
/// process 7 has nothing to do with roctracer's id 42 there.
pub mod backend {
    /// No backend correlation id: the record is not joinable (for example a launch stack
    /// captured by a plain uprobe on `cudaLaunchKernel`). The host counts such launch sites and
    /// shows them as CPU stacks, never joins them by guessing.
    pub const UNCORRELATED: u32 = 0;
    /// NVIDIA CUDA via CUPTI.
    pub const CUDA: u32 = 1;
    /// AMD ROCm / HIP via roctracer or rocprofiler.
    pub const ROCM: u32 = 2;
    /// Intel oneAPI Level Zero.
    pub const LEVEL_ZERO: u32 = 3;
    /// First id free for third-party backends.
    pub const FIRST_THIRD_PARTY: u32 = 0x100;
    /// The scripted test backend used by xpuprof's own tests.
    pub const TEST: u32 = 0xFFFF;
}

/// A backend's own correlation id for one API call and the work it caused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Correlation {
    /// Which backend issued the id (see [`backend`]).
    pub backend: u32,
    /// The id as the backend gave it.
    pub id: u64,
}

impl Correlation {
    /// Id `id` of `backend`.
    pub fn new(backend: u32, id: u64) -> Self {
        Self { backend, id }
    }
}

/// The full correlation key: backend, process, id (docs/architecture.md, "Design principles").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CorrelationKey {
    /// Which backend issued the id.
    pub backend: u32,
    /// The process the id belongs to.
    pub pid: u32,
    /// The backend's id.
    pub id: u64,
}

impl CorrelationKey {
    /// Builds the key of `correlation` in process `pid`.
    pub fn new(pid: u32, correlation: Correlation) -> Self {
        Self { backend: correlation.backend, pid, id: correlation.id }
    }
}

/// An external correlation id pushed by a framework (for example PyTorch's sequence number or an
/// NVTX/roctx range id), kept apart from the backend's own id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ExternalId {
    /// Who issued it (backend specific; CUPTI's `CUpti_ExternalCorrelationKind` for CUDA).
    pub kind: u32,
    /// The id.
    pub id: u64,
}

/// Positional encoding of an optional correlation: `0`, or `backend + 1` then the id.
pub(crate) fn put_opt_corr(o: &mut Vec<u8>, c: Option<Correlation>) {
    match c {
        None => put_varint(o, 0),
        Some(c) => {
            put_varint(o, u64::from(c.backend) + 1);
            put_varint(o, c.id);
        }
    }
}

#[inline]
pub(crate) fn get_opt_corr(c: &mut Cursor<'_>) -> Option<Correlation> {
    match c.varint() {
        0 => None,
        b => Some(Correlation { backend: u32::from_var(b - 1, c), id: c.varint() }),
    }
}

/// Positional encoding of an optional external id: `0`, or `kind + 1` then the id.
pub(crate) fn put_opt_external(o: &mut Vec<u8>, x: Option<ExternalId>) {
    match x {
        None => put_varint(o, 0),
        Some(x) => {
            put_varint(o, u64::from(x.kind) + 1);
            put_varint(o, x.id);
        }
    }
}

#[inline]
pub(crate) fn get_opt_external(c: &mut Cursor<'_>) -> Option<ExternalId> {
    match c.varint() {
        0 => None,
        k => Some(ExternalId { kind: u32::from_var(k - 1, c), id: c.varint() }),
    }
}

/// Keyed encoding of a correlation: a length-delimited pair of varints (backend, id).
impl Wire for Correlation {
    const TYPE: WireType = WireType::Len;
    fn put(&self, o: &mut Vec<u8>) {
        put_varint(o, u64::from(self.backend));
        put_varint(o, self.id);
    }
    fn get(c: &mut Cursor<'_>) -> Self {
        Self { backend: c.u32(), id: c.varint() }
    }
    fn is_absent(&self) -> bool {
        false
    }
}

impl Columns for Correlation {
    #[inline]
    fn put_columns(&self, row: &mut Row) {
        row.push(self.id);
        row.push(u64::from(self.backend));
    }
    #[inline]
    fn get_columns(r: &mut RowReader<'_>) -> Self {
        let id = r.next_value();
        Self { id, backend: r.next_value() as u32 }
    }
    /// The id takes the field's hint (`corr` for a record's own correlation), the backend is
    /// cold.
    fn hints(hint: Hint, out: &mut Vec<Hint>) {
        out.extend([hint, Hint::Cold]);
    }
}

impl Columns for ExternalId {
    fn put_columns(&self, row: &mut Row) {
        row.push(self.id);
        row.push(u64::from(self.kind));
    }
    fn get_columns(r: &mut RowReader<'_>) -> Self {
        let id = r.next_value();
        Self { id, kind: r.next_value() as u32 }
    }
    fn hints(_: Hint, out: &mut Vec<Hint>) {
        out.extend([Hint::Cold, Hint::Cold]);
    }
}
