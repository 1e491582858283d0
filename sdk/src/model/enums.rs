//! The model's small enums. Each is a byte on the wire; a byte this SDK does not know decodes to
//! the enum's fallback variant (never an error), so a newer plugin's kinds degrade gracefully.
//! Vendors are open: [`Vendor`] is a number, and a device also carries its vendor's name.

use crate::codec::columns::{Columns, Hint, Row, RowReader};
use crate::codec::wire::{put_varint, ByteEnum, Cursor, Varint, Wire, WireType};

/// Defines a byte-valued enum with a fallback for unknown values.
macro_rules! wire_enum {
    (
        $(#[$m:meta])*
        $name:ident fallback $fallback:ident {
            $( $(#[$vm:meta])* $v:ident = $n:literal ),* $(,)?
        }
    ) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
        #[repr(u8)]
        #[non_exhaustive]
        pub enum $name {
            $( $(#[$vm])* $v = $n, )*
        }

        impl $name {
            /// Decodes a byte; unknown values map to the fallback variant.
            pub fn from_u8(v: u8) -> Self {
                match v {
                    $( $n => Self::$v, )*
                    _ => Self::$fallback,
                }
            }
        }

        impl ByteEnum for $name {
            fn to_u8(self) -> u8 {
                self as u8
            }
            fn from_u8(v: u8) -> Self {
                Self::from_u8(v)
            }
        }

        impl Varint for $name {
            fn to_var(&self) -> u64 {
                *self as u64
            }
            fn from_var(v: u64, _: &mut Cursor<'_>) -> Self {
                u8::try_from(v).map_or(Self::$fallback, Self::from_u8)
            }
        }

        impl Wire for $name {
            const TYPE: WireType = WireType::Varint;
            fn put(&self, o: &mut Vec<u8>) {
                put_varint(o, *self as u64);
            }
            fn get(c: &mut Cursor<'_>) -> Self {
                let v = c.varint();
                <Self as Varint>::from_var(v, c)
            }
            fn is_absent(&self) -> bool {
                *self == Self::default()
            }
        }

        impl Columns for $name {
            fn put_columns(&self, row: &mut Row) {
                row.push(*self as u64);
            }
            fn get_columns(r: &mut RowReader<'_>) -> Self {
                u8::try_from(r.next_value()).map_or(Self::$fallback, Self::from_u8)
            }
            fn hints(hint: Hint, out: &mut Vec<Hint>) {
                out.push(hint);
            }
        }
    };
}

wire_enum! {
    /// What a frame's address means.
    FrameKind fallback Synthetic {
        /// `address` is a file offset inside `module` (normalised user address).
        #[default]
        FileOffset = 0,
        /// `address` is a virtual address in the process; the host normalises it if it can.
        Virtual = 1,
        /// `address` is a kernel address.
        Kernel = 2,
        /// No address: the frame is just its `name` (interpreted code, synthetic frames).
        Synthetic = 3,
    }
}

wire_enum! {
    /// Kind of device work.
    DeviceOpKind fallback Other {
        /// A compute kernel.
        #[default]
        Kernel = 0,
        /// A memory copy.
        Memcpy = 1,
        /// A memory set.
        Memset = 2,
        /// A synchronisation (stream/event/context wait).
        Sync = 3,
        /// A device memory allocation (`bytes` = size).
        Alloc = 4,
        /// A device memory release (`bytes` = size).
        Free = 5,
        /// Anything else (`name` says what).
        Other = 255,
    }
}

wire_enum! {
    /// Direction of a memory copy (the devices themselves are [`super::DeviceOp::src_device`]
    /// and [`super::DeviceOp::dst_device`]).
    CopyKind fallback Unknown {
        /// Not a copy, or not known.
        #[default]
        Unknown = 0,
        /// Host to device.
        HostToDevice = 1,
        /// Device to host.
        DeviceToHost = 2,
        /// Device to device (same device).
        DeviceToDevice = 3,
        /// Host to host.
        HostToHost = 4,
        /// Peer to peer (between devices).
        PeerToPeer = 5,
    }
}

impl CopyKind {
    /// Short display name (`HtoD`, `DtoH`, ...), as used by the folded `[GPU_Memcpy]` frame.
    pub fn short_name(self) -> &'static str {
        match self {
            Self::Unknown => "Unknown",
            Self::HostToDevice => "HtoD",
            Self::DeviceToHost => "DtoH",
            Self::DeviceToDevice => "DtoD",
            Self::HostToHost => "HtoH",
            Self::PeerToPeer => "PtoP",
        }
    }
}

wire_enum! {
    /// Whether a CPU sample saw the thread running or blocked.
    SampleKind fallback OnCpu {
        /// The thread was on a CPU.
        #[default]
        OnCpu = 0,
        /// The thread was blocked for `weight` nanoseconds.
        OffCpu = 1,
    }
}

wire_enum! {
    /// What a host API call does, so sinks classify calls without matching names.
    ApiKind fallback Other {
        /// Not stated: records written before API kinds existed (codec version 1), or a source
        /// that does not know.
        #[default]
        Unknown = 0,
        /// Launches device work (a kernel, a graph, a command list execution).
        Launch = 1,
        /// Waits for device work (stream, event, device synchronisation).
        Sync = 2,
        /// Copies memory.
        Copy = 3,
        /// Allocates memory.
        Alloc = 4,
        /// Frees memory.
        Free = 5,
        /// Sets memory.
        Memset = 6,
        /// Anything else (queries, context and module management, ...).
        Other = 7,
    }
}

wire_enum! {
    /// What a device is.
    DeviceKind fallback Other {
        /// A GPU.
        #[default]
        Gpu = 0,
        /// A sub-device of a GPU (an Intel tile, a partition); its `parent` is the whole device.
        SubDevice = 1,
        /// Another accelerator (NPU, FPGA, ...).
        Accelerator = 2,
        /// Something else.
        Other = 255,
    }
}

wire_enum! {
    /// What a device operation does across ranks: the collective of a communication library
    /// (NCCL, RCCL, oneCCL) a kernel implements, as its backend plugin recognises it. Sinks and
    /// the merge classify collectives by this, never by kernel name.
    CollectiveOp fallback Other {
        /// Not a collective (or not recognised as one).
        #[default]
        None = 0,
        /// All-reduce.
        AllReduce = 1,
        /// All-gather.
        AllGather = 2,
        /// Reduce-scatter.
        ReduceScatter = 3,
        /// Broadcast.
        Broadcast = 4,
        /// Reduce to one rank.
        Reduce = 5,
        /// All-to-all.
        AllToAll = 6,
        /// Point-to-point send and/or receive (grouped sends and receives).
        SendRecv = 7,
        /// A collective of another kind (its name says which).
        Other = 255,
    }
}

wire_enum! {
    /// What a stream or queue is, in its runtime's terms.
    QueueKind fallback Other {
        /// Not stated (records of codec version 1).
        #[default]
        Unknown = 0,
        /// A CUDA stream.
        CudaStream = 1,
        /// A HIP stream.
        HipStream = 2,
        /// An HSA queue (the hardware queue under HIP streams).
        HsaQueue = 3,
        /// A Level Zero command queue.
        LevelZeroQueue = 4,
        /// A Level Zero immediate command list.
        LevelZeroImmediateList = 5,
        /// A SYCL queue.
        SyclQueue = 6,
        /// A queue of another runtime (its name says which).
        Other = 255,
    }
}

wire_enum! {
    /// The unit of a kernel's `grid` and `block` sizes.
    SizeUnit fallback Blocks {
        /// CUDA/HIP launch terms: `grid` counts blocks, `block` counts threads per block (the
        /// meaning of every record of codec version 1).
        #[default]
        Blocks = 0,
        /// OpenCL/SYCL/Level Zero terms: `grid` is the global size in work-items, `block` the
        /// work-group (local) size in work-items.
        WorkItems = 1,
    }
}

wire_enum! {
    /// What an overhead record measured: time the profiling machinery itself took.
    OverheadKind fallback Other {
        /// Anything else (`name` says what).
        #[default]
        Other = 0,
        /// The tracing runtime flushed its buffers (CUPTI activity buffer flush, ...).
        BufferFlush = 1,
        /// The tracing runtime instrumented code (CUPTI's SASS patching, ...).
        Instrumentation = 2,
        /// The tracing runtime resolved or compiled something on the target's thread.
        Resolution = 3,
    }
}

wire_enum! {
    /// What opened a capture window ([`super::CaptureWindow`]).
    WindowOpener fallback Other {
        /// Anything else.
        #[default]
        Other = 0,
        /// The session started with the window open.
        Start = 1,
        /// `--delay` elapsed.
        Delay = 2,
        /// `xpuprof trigger` or SIGUSR2.
        Trigger = 3,
        /// `xpuprof attach`.
        Attach = 4,
        /// The program called `cudaProfilerStart` / `cuProfilerStart`.
        CudaProfilerApi = 5,
        /// The program entered an NVTX range of the `--capture-range` message.
        Nvtx = 6,
        /// Continuous mode's clock (`--every`).
        Every = 7,
    }
}

/// GPU / accelerator vendor: a number, open to vendors this SDK does not list (a device
/// carries its vendor's name in [`super::DeviceDef::vendor_name`] too, so a third party names
/// itself). Values are stable; ask for a number, or use one from [`Vendor::FIRST_THIRD_PARTY`].
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct Vendor(pub u8);

#[allow(non_upper_case_globals)]
impl Vendor {
    /// Not known.
    pub const Unknown: Self = Self(0);
    /// NVIDIA.
    pub const Nvidia: Self = Self(1);
    /// AMD.
    pub const Amd: Self = Self(2);
    /// Intel.
    pub const Intel: Self = Self(3);
    /// First number free for vendors this SDK does not list.
    pub const FIRST_THIRD_PARTY: u8 = 0x40;
    /// A test double (xpuprof's own test plugins).
    pub const Test: Self = Self(255);

    /// Decodes a vendor byte (every value is kept).
    pub fn from_u8(v: u8) -> Self {
        Self(v)
    }

    /// The vendor's name for the vendors this SDK knows, `None` for the others (whose name is
    /// in the device's `vendor_name`).
    pub fn known_name(self) -> Option<&'static str> {
        Some(match self.0 {
            0 => "Unknown",
            1 => "Nvidia",
            2 => "Amd",
            3 => "Intel",
            255 => "Test",
            _ => return None,
        })
    }
}

impl std::fmt::Debug for Vendor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.known_name() {
            Some(n) => f.write_str(n),
            None => write!(f, "Vendor({})", self.0),
        }
    }
}

impl ByteEnum for Vendor {
    fn to_u8(self) -> u8 {
        self.0
    }
    fn from_u8(v: u8) -> Self {
        Self(v)
    }
}
