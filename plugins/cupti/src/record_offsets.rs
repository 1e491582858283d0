//! Where the fields the decoder reads sit in each CUPTI activity record, by record version.
//!
//! CUPTI only ever appends fields to a record kind (`CUpti_ActivityKernel9` … `13` share their
//! first fields), and which version a runtime writes depends on its CUPTI version. Each record
//! arrives with its exact size, so the decoder picks the version of that size; a record larger
//! than every known version (a newer CUPTI) is read with the largest known one, whose fields
//! are a prefix of it. Offsets come from the bindgen structs (`offset_of!`) and are pinned in
//! tests against the C compiler's view.

use std::mem::{offset_of, size_of};

use cupti_sys as ffi;

/// Field offsets of a kernel record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kernel {
    pub registers: usize,
    pub start: usize,
    pub end: usize,
    pub device: usize,
    pub context: usize,
    pub stream: usize,
    pub grid: usize,
    pub block: usize,
    pub static_shared: usize,
    pub dynamic_shared: usize,
    pub correlation: usize,
    pub name: usize,
    pub graph_node: usize,
    pub graph: usize,
}

macro_rules! kernel {
    ($t:ty) => {
        (
            size_of::<$t>(),
            Kernel {
                registers: offset_of!($t, registersPerThread),
                start: offset_of!($t, start),
                end: offset_of!($t, end),
                device: offset_of!($t, deviceId),
                context: offset_of!($t, contextId),
                stream: offset_of!($t, streamId),
                grid: offset_of!($t, gridX),
                block: offset_of!($t, blockX),
                static_shared: offset_of!($t, staticSharedMemory),
                dynamic_shared: offset_of!($t, dynamicSharedMemory),
                correlation: offset_of!($t, correlationId),
                name: offset_of!($t, name),
                graph_node: offset_of!($t, graphNodeId),
                graph: offset_of!($t, graphId),
            },
        )
    };
}

/// Kernel record versions the decoder knows (`Kernel9` is CUDA 12.x, `Kernel10` CUDA 13.0).
pub const KERNELS: [(usize, Kernel); 5] = [
    kernel!(ffi::CUpti_ActivityKernel9),
    kernel!(ffi::CUpti_ActivityKernel10),
    kernel!(ffi::CUpti_ActivityKernel11),
    kernel!(ffi::CUpti_ActivityKernel12),
    kernel!(ffi::CUpti_ActivityKernel13),
];

/// Field offsets of a memcpy record (`MEMCPY`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Memcpy {
    pub copy_kind: usize,
    pub bytes: usize,
    pub start: usize,
    pub end: usize,
    pub device: usize,
    pub context: usize,
    pub stream: usize,
    pub correlation: usize,
    pub graph_node: usize,
    pub graph: usize,
    /// Peer copies: the source and destination devices (ordinals).
    pub ends: Option<(usize, usize)>,
}

macro_rules! memcpy {
    ($t:ty, peer) => {{
        let (size, mut l) = memcpy!($t);
        l.ends = Some((offset_of!($t, srcDeviceId), offset_of!($t, dstDeviceId)));
        (size, l)
    }};
    ($t:ty) => {
        (
            size_of::<$t>(),
            Memcpy {
                copy_kind: offset_of!($t, copyKind),
                bytes: offset_of!($t, bytes),
                start: offset_of!($t, start),
                end: offset_of!($t, end),
                device: offset_of!($t, deviceId),
                context: offset_of!($t, contextId),
                stream: offset_of!($t, streamId),
                correlation: offset_of!($t, correlationId),
                graph_node: offset_of!($t, graphNodeId),
                graph: offset_of!($t, graphId),
                ends: None,
            },
        )
    };
}

/// Memcpy record versions.
pub const MEMCPYS: [(usize, Memcpy); 3] = [
    memcpy!(ffi::CUpti_ActivityMemcpy5),
    memcpy!(ffi::CUpti_ActivityMemcpy6),
    memcpy!(ffi::CUpti_ActivityMemcpy7),
];

/// Peer-to-peer memcpy record versions (`MEMCPY2`): same leading fields as memcpy except the
/// correlation id, which follows the source/destination device fields.
pub const PEER_COPIES: [(usize, Memcpy); 2] =
    [memcpy!(ffi::CUpti_ActivityMemcpyPtoP3, peer), memcpy!(ffi::CUpti_ActivityMemcpyPtoP4, peer)];

/// Field offsets of a memset record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Memset {
    pub bytes: usize,
    pub start: usize,
    pub end: usize,
    pub device: usize,
    pub context: usize,
    pub stream: usize,
    pub correlation: usize,
    pub graph_node: usize,
    pub graph: usize,
}

macro_rules! memset {
    ($t:ty) => {
        (
            size_of::<$t>(),
            Memset {
                bytes: offset_of!($t, bytes),
                start: offset_of!($t, start),
                end: offset_of!($t, end),
                device: offset_of!($t, deviceId),
                context: offset_of!($t, contextId),
                stream: offset_of!($t, streamId),
                correlation: offset_of!($t, correlationId),
                graph_node: offset_of!($t, graphNodeId),
                graph: offset_of!($t, graphId),
            },
        )
    };
}

/// Memset record versions.
pub const MEMSETS: [(usize, Memset); 2] =
    [memset!(ffi::CUpti_ActivityMemset4), memset!(ffi::CUpti_ActivityMemset5)];

/// Synchronization record: `type, start, end, correlation, context, stream` (both versions).
pub const SYNC_MIN: usize = size_of::<ffi::CUpti_ActivitySynchronization>();
/// Offsets in the synchronization record.
pub const SYNC: [usize; 6] = [
    offset_of!(ffi::CUpti_ActivitySynchronization, type_),
    offset_of!(ffi::CUpti_ActivitySynchronization, start),
    offset_of!(ffi::CUpti_ActivitySynchronization, end),
    offset_of!(ffi::CUpti_ActivitySynchronization, correlationId),
    offset_of!(ffi::CUpti_ActivitySynchronization, contextId),
    offset_of!(ffi::CUpti_ActivitySynchronization, streamId),
];

/// Memory record (`MEMORY2`): `operation, correlation, bytes, timestamp, pid, device, context, stream`.
pub const MEMORY_MIN: usize = size_of::<ffi::CUpti_ActivityMemory3>();
/// Offsets in the memory record.
pub const MEMORY: [usize; 8] = [
    offset_of!(ffi::CUpti_ActivityMemory3, memoryOperationType),
    offset_of!(ffi::CUpti_ActivityMemory3, correlationId),
    offset_of!(ffi::CUpti_ActivityMemory3, bytes),
    offset_of!(ffi::CUpti_ActivityMemory3, timestamp),
    offset_of!(ffi::CUpti_ActivityMemory3, processId),
    offset_of!(ffi::CUpti_ActivityMemory3, deviceId),
    offset_of!(ffi::CUpti_ActivityMemory3, contextId),
    offset_of!(ffi::CUpti_ActivityMemory3, streamId),
];

/// Marker record: `flags, timestamp, id, objectKind, objectId (pid, tid), name, domain`.
pub const MARKER_MIN: usize = size_of::<ffi::CUpti_ActivityMarker2>();
/// Offsets in the marker record.
pub const MARKER: [usize; 7] = [
    offset_of!(ffi::CUpti_ActivityMarker2, flags),
    offset_of!(ffi::CUpti_ActivityMarker2, timestamp),
    offset_of!(ffi::CUpti_ActivityMarker2, id),
    offset_of!(ffi::CUpti_ActivityMarker2, objectKind),
    offset_of!(ffi::CUpti_ActivityMarker2, objectId),
    offset_of!(ffi::CUpti_ActivityMarker2, name),
    offset_of!(ffi::CUpti_ActivityMarker2, domain),
];

/// Device record: `memory size, SM count, id, uuid, name, compute capability major, minor`.
pub const DEVICE_MIN: usize = size_of::<ffi::CUpti_ActivityDevice5>();
/// Offsets in the device record.
pub const DEVICE: [usize; 7] = [
    offset_of!(ffi::CUpti_ActivityDevice5, globalMemorySize),
    offset_of!(ffi::CUpti_ActivityDevice5, numMultiprocessors),
    offset_of!(ffi::CUpti_ActivityDevice5, id),
    offset_of!(ffi::CUpti_ActivityDevice5, uuid),
    offset_of!(ffi::CUpti_ActivityDevice5, name),
    offset_of!(ffi::CUpti_ActivityDevice5, computeCapabilityMajor),
    offset_of!(ffi::CUpti_ActivityDevice5, computeCapabilityMinor),
];

/// Context record: `context, device`.
pub const CONTEXT_MIN: usize = 16;
/// Offsets in the context record.
pub const CONTEXT: [usize; 2] =
    [offset_of!(ffi::CUpti_ActivityContext3, contextId), offset_of!(ffi::CUpti_ActivityContext3, deviceId)];

/// Overhead record: `kind, objectKind, objectId, start, end`.
pub const OVERHEAD_MIN: usize = size_of::<ffi::CUpti_ActivityOverhead2>();
/// Offsets in the overhead record.
pub const OVERHEAD: [usize; 5] = [
    offset_of!(ffi::CUpti_ActivityOverhead2, overheadKind),
    offset_of!(ffi::CUpti_ActivityOverhead2, objectKind),
    offset_of!(ffi::CUpti_ActivityOverhead2, objectId),
    offset_of!(ffi::CUpti_ActivityOverhead2, start),
    offset_of!(ffi::CUpti_ActivityOverhead2, end),
];

/// API record: `cbid, start, end, pid, tid, correlation, result`.
pub const API_MIN: usize = size_of::<ffi::CUpti_ActivityAPI>();
/// Offsets in the API record.
pub const API: [usize; 7] = [
    offset_of!(ffi::CUpti_ActivityAPI, cbid),
    offset_of!(ffi::CUpti_ActivityAPI, start),
    offset_of!(ffi::CUpti_ActivityAPI, end),
    offset_of!(ffi::CUpti_ActivityAPI, processId),
    offset_of!(ffi::CUpti_ActivityAPI, threadId),
    offset_of!(ffi::CUpti_ActivityAPI, correlationId),
    offset_of!(ffi::CUpti_ActivityAPI, returnValue),
];

/// Picks the layout for a record of `len` bytes: the version of exactly that size, else the
/// largest version smaller than it (a newer CUPTI appended fields); `None` if it is smaller
/// than every known version.
pub fn pick<T: Copy>(versions: &[(usize, T)], len: usize) -> Option<T> {
    if let Some((_, t)) = versions.iter().find(|(s, _)| *s == len) {
        return Some(*t);
    }
    versions.iter().filter(|(s, _)| *s < len).max_by_key(|(s, _)| *s).map(|(_, t)| *t)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sizes and offsets as the C compiler sees them in the CUDA 13 headers (clang,
    /// `sizeof`/`offsetof`); bindgen's packed(8) structs must agree, since records are read
    /// by these offsets.
    #[test]
    fn pinned_sizes_and_offsets() {
        let (size, k) = KERNELS[1];
        assert_eq!(size, 216, "CUpti_ActivityKernel10");
        assert_eq!((k.start, k.end, k.device, k.stream, k.grid), (16, 24, 40, 48, 52));
        assert_eq!((k.correlation, k.name, k.graph_node, k.graph), (92, 104, 144, 156));
        assert_eq!([KERNELS[2].0, KERNELS[3].0, KERNELS[4].0], [224, 232, 248], "Kernel11..13");
        assert_eq!([MEMCPYS[0].0, MEMCPYS[1].0, MEMCPYS[2].0], [88, 96, 112], "Memcpy5..7");
        assert_eq!([PEER_COPIES[0].0, PEER_COPIES[1].0], [88, 96], "MemcpyPtoP3..4");
        assert_eq!([MEMSETS[0].0, MEMSETS[1].0], [88, 104], "Memset4..5");
        assert_eq!(
            [SYNC_MIN, MEMORY_MIN, MARKER_MIN, DEVICE_MIN, OVERHEAD_MIN, API_MIN],
            [40, 120, 56, 184, 48, 40]
        );
    }

    /// Newer versions only append: every field read sits at the same offset in all versions.
    #[test]
    fn versions_share_their_leading_fields() {
        for (_, k) in &KERNELS[1..] {
            assert_eq!(*k, KERNELS[0].1);
        }
        for (_, m) in &MEMCPYS[1..] {
            assert_eq!(*m, MEMCPYS[0].1);
        }
        assert_eq!(PEER_COPIES[1].1, PEER_COPIES[0].1);
        assert_eq!(MEMSETS[1].1, MEMSETS[0].1);
    }

    #[test]
    fn picks_exact_then_largest_smaller_version() {
        assert_eq!(pick(&KERNELS, 216), Some(KERNELS[1].1));
        assert_eq!(pick(&KERNELS, 300), Some(KERNELS[4].1), "a newer, larger record");
        assert_eq!(pick(&KERNELS, 100), None, "older than every known version");
    }
}
