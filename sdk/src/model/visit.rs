//! Visitors generated from the schema: which fields of a record are references to definitions
//! (and of which kind), and which are timestamps in the record's clock domain. The host
//! renumbers ids and converts clocks through these, so a field added to the schema is
//! translated without a line of host code.
//!
//! - Ids: every field whose type is an id ([`StrId`], [`DeviceId`], [`StreamId`], [`ModuleId`],
//!   [`FrameId`], [`StackId`]), also inside `Option`s, lists and nested schema structs, is a
//!   reference, except a definition's own `id` (the id it defines). [`IdFields::map_ids`] hands
//!   each reference to an [`IdMapper`].
//! - Times: the fields whose archive column hint is `time` or `dur(..)` are the record's
//!   timestamps, stated in its `clock` field's domain; [`Timed::clock_times`] lends them.

use super::enums::*;
use super::ids::*;

/// Maps ids of each kind (a source's numbering to the session's, say).
pub trait IdMapper {
    /// A string reference.
    fn str(&mut self, id: StrId) -> StrId;
    /// A device reference.
    fn device(&mut self, id: DeviceId) -> DeviceId;
    /// A stream reference.
    fn stream(&mut self, id: StreamId) -> StreamId;
    /// A module reference.
    fn module(&mut self, id: ModuleId) -> ModuleId;
    /// A frame reference.
    fn frame(&mut self, id: FrameId) -> FrameId;
    /// A stack reference.
    fn stack(&mut self, id: StackId) -> StackId;
}

/// A value whose id references can be mapped: generated for every struct of the schema,
/// implemented by the id types (each calls its [`IdMapper`] method) and as nothing by every
/// other field type.
pub trait IdFields {
    /// Replaces every id reference in `self` by `m`'s mapping of it, in field order.
    fn map_ids<M: IdMapper + ?Sized>(&mut self, m: &mut M);
}

macro_rules! id_fields {
    ($($ty:ident => $method:ident),* $(,)?) => {
        $(
            impl IdFields for $ty {
                #[inline(always)]
                fn map_ids<M: IdMapper + ?Sized>(&mut self, m: &mut M) {
                    *self = m.$method(*self);
                }
            }
        )*
    };
}
id_fields!(
    StrId => str,
    DeviceId => device,
    StreamId => stream,
    ModuleId => module,
    FrameId => frame,
    StackId => stack,
);

macro_rules! no_ids {
    ($($ty:ty),* $(,)?) => {
        $(
            impl IdFields for $ty {
                #[inline(always)]
                fn map_ids<M: IdMapper + ?Sized>(&mut self, _: &mut M) {}
            }
        )*
    };
}
no_ids!(
    bool,
    u8,
    u32,
    u64,
    i64,
    f64,
    String,
    [u8; 16],
    [u32; 3],
    Vec<u8>,
    ClockDomain,
    Correlation,
    ExternalId,
    Vendor,
    ApiKind,
    CollectiveOp,
    CopyKind,
    DeviceKind,
    DeviceOpKind,
    FrameKind,
    OverheadKind,
    QueueKind,
    SampleKind,
    SizeUnit,
    WindowOpener,
);

impl<T: IdFields> IdFields for Option<T> {
    #[inline(always)]
    fn map_ids<M: IdMapper + ?Sized>(&mut self, m: &mut M) {
        if let Some(v) = self {
            v.map_ids(m);
        }
    }
}

macro_rules! id_lists {
    ($($ty:ident),*) => {
        $(
            impl IdFields for Vec<$ty> {
                #[inline]
                fn map_ids<M: IdMapper + ?Sized>(&mut self, m: &mut M) {
                    for v in self {
                        v.map_ids(m);
                    }
                }
            }
        )*
    };
}
id_lists!(StrId, FrameId);

/// A record stamped in a clock domain: generated for every struct of the schema with
/// timestamps (fields of column hint `time` or `dur(..)`), which all have a `clock` field.
pub trait Timed {
    /// Calls `f` with the record's clock domain and its timestamps, in field order.
    fn clock_times<R>(&mut self, f: impl FnOnce(&mut ClockDomain, &mut [&mut Nanos]) -> R) -> R;
}

/// The [`IdFields`] and [`Timed`] impls of one schema struct; used only by `model_schema!`.
macro_rules! schema_visit {
    // Collects the timestamp fields, then writes the impls.
    (@times $S:ident [$($t:ident)*]) => {
        $crate::model::visit::schema_visit!(@timed $S [$($t)*]);
    };
    (@times $S:ident [$($t:ident)*] $f:ident time, $($rest:tt)*) => {
        $crate::model::visit::schema_visit!(@times $S [$($t)* $f] $($rest)*);
    };
    (@times $S:ident [$($t:ident)*] $f:ident dur($start:ident), $($rest:tt)*) => {
        $crate::model::visit::schema_visit!(@times $S [$($t)* $f] $($rest)*);
    };
    (@times $S:ident [$($t:ident)*] $f:ident $hint:ident, $($rest:tt)*) => {
        $crate::model::visit::schema_visit!(@times $S [$($t)*] $($rest)*);
    };
    (@timed $S:ident []) => {};
    (@timed $S:ident [$($t:ident)+]) => {
        impl $crate::model::visit::Timed for $S {
            #[inline(always)]
            fn clock_times<R>(
                &mut self,
                f: impl FnOnce(&mut $crate::model::ClockDomain, &mut [&mut $crate::model::Nanos]) -> R,
            ) -> R {
                f(&mut self.clock, &mut [$(&mut self.$t),+])
            }
        }
    };
    // A definition's own id is not a reference.
    (@id id, $s:ident, $m:ident) => {};
    (@id $f:ident, $s:ident, $m:ident) => {
        $crate::model::visit::IdFields::map_ids(&mut $s.$f, $m)
    };
    ($S:ident { $( $f:ident $hint:ident $(($harg:ident))? ),* }) => {
        impl $crate::model::visit::IdFields for $S {
            #[inline(always)]
            #[allow(unused_variables)]
            fn map_ids<M: $crate::model::visit::IdMapper + ?Sized>(&mut self, m: &mut M) {
                $( $crate::model::visit::schema_visit!(@id $f, self, m); )*
            }
        }
        $crate::model::visit::schema_visit!(@times $S [] $( $f $hint $(($harg))?, )*);
    };
}
pub(crate) use schema_visit;
