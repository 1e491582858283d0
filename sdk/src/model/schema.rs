//! THE schema: every definition and event kind of the model and their fields, once. The types,
//! the batch codec, the archive's columns and the builders are generated from this table by
//! [`super::generate`].
//!
//! Adding a field is one line at the end of its struct: `[]` (no positional encoding), the
//! next free keyed number, and a column hint. Never reuse a number, never reorder or change a
//! positional field (they are codec version 1, frozen); `docs/architecture.md` has the rules.

use super::enums::*;
use super::generate::{model_schema, schema_columns, schema_field};
use super::ids::*;

model_schema! {
    structs {
        /// An interned string.
        #[derive(Debug, Clone, PartialEq, Eq, Default)]
        struct StrDef [] {
            /// Its id.
            id: StrId = [var] [] cold,
            /// Its text, as the source sent it (a kernel's mangled name stays mangled here).
            text: String = [bytes] [] cold,
            /// The text for people, filled in by the host: the demangled name when `text` is a
            /// mangled C++ symbol and demangling is on (the session's one `demangle` switch);
            /// empty when it is `text` itself. Sinks read both through the toolbox's resolver.
            display: String = [] [1] cold,
        }

        /// A process of the session.
        #[derive(Debug, Clone, PartialEq, Eq, Default)]
        struct ProcessDef [] {
            /// Process id.
            pid: u32 = [var] [] cold,
            /// Parent process id (0 when not known).
            ppid: u32 = [var] [] cold,
            /// Command line or executable name.
            command: StrId = [var] [] cold,
            /// Rank in its job (`RANK`, `OMPI_COMM_WORLD_RANK`, `PMI_RANK`, `SLURM_PROCID` in its
            /// environment, read by the host), or `None` when it is not part of a job.
            rank: Option<u32> = [] [1] cold,
            /// Rank on its host (`LOCAL_RANK`, `OMPI_COMM_WORLD_LOCAL_RANK`, `SLURM_LOCALID`).
            local_rank: Option<u32> = [] [2] cold,
            /// Ranks in the job (`WORLD_SIZE`, `OMPI_COMM_WORLD_SIZE`, `PMI_SIZE`,
            /// `SLURM_NTASKS`).
            world_size: Option<u32> = [] [3] cold,
            /// Name of the host it ran on, or [`StrId::NONE`] when not known.
            host: StrId = [] [4] cold,
            /// The name outputs show for it, filled by the host when it has a rank:
            /// `rank N (host, pid)`; [`StrId::NONE`] otherwise (outputs use the command).
            name: StrId = [] [5] cold,
        }

        /// A thread of the session.
        #[derive(Debug, Clone, PartialEq, Eq, Default)]
        struct ThreadDef [] {
            /// Process id.
            pid: u32 = [var] [] cold,
            /// Thread id (kernel tid).
            tid: u32 = [var] [] cold,
            /// Thread name (`comm`), or [`StrId::NONE`].
            name: StrId = [var] [] cold,
        }

        /// A GPU or accelerator, or a sub-device of one (a tile, a partition).
        #[derive(Debug, Clone, PartialEq, Eq, Default)]
        struct DeviceDef [] {
            /// Id used by events.
            id: DeviceId = [var] [] cold,
            /// Vendor number (see [`Vendor`]; open to third parties).
            vendor: Vendor = [byte] [] cold,
            /// Index as the runtime numbers it (CUDA device ordinal, Level Zero device index).
            index: u32 = [var] [] cold,
            /// Marketing name ("NVIDIA H100 80GB HBM3").
            name: StrId = [var] [] cold,
            /// Device UUID (zero when not known).
            uuid: [u8; 16] = [bytes] [] cold,
            /// Multiprocessors / compute units / Xe cores.
            compute_units: u32 = [var] [] cold,
            /// Device memory in bytes.
            memory_bytes: u64 = [var] [] cold,
            /// What the device is.
            kind: DeviceKind = [] [1] cold,
            /// The runtime's own handle or number for it (Level Zero `ze_device_handle_t`, HSA
            /// agent handle), 0 when `index` says all.
            native_id: u64 = [] [2] cold,
            /// The whole device this one is part of (a tile's GPU), or [`DeviceId::NONE`].
            parent: DeviceId = [] [3] cold,
            /// Architecture ("sm_90", "gfx942", "Xe-HPC"), or [`StrId::NONE`].
            arch: StrId = [] [4] cold,
            /// The vendor's name as the source states it ("NVIDIA", or a third party's own
            /// name when `vendor` is a number this SDK does not list), or [`StrId::NONE`].
            vendor_name: StrId = [] [5] cold,
        }

        /// A device stream or queue.
        #[derive(Debug, Clone, PartialEq, Eq, Default)]
        struct StreamDef [] {
            /// Id used by events.
            id: StreamId = [var] [] cold,
            /// The device it runs on.
            device: DeviceId = [var] [] cold,
            /// The process that owns it.
            pid: u32 = [var] [] cold,
            /// The runtime's own number or handle for it (CUDA stream id, Level Zero handle).
            native_id: u64 = [var] [] cold,
            /// Display name, or [`StrId::NONE`].
            name: StrId = [var] [] cold,
            /// What it is in its runtime's terms.
            kind: QueueKind = [] [1] cold,
            /// The queue it submits to (the HSA queue under a HIP stream, the command queue an
            /// immediate command list maps to), or [`StreamId::NONE`].
            parent: StreamId = [] [2] cold,
        }

        /// A loaded module: an executable, a shared library or the kernel.
        #[derive(Debug, Clone, PartialEq, Eq, Default)]
        struct ModuleDef [] {
            /// Id used by frames.
            id: ModuleId = [var] [] cold,
            /// Path of the file as the process mapped it.
            path: StrId = [var] [] cold,
            /// GNU build id, empty when the file has none.
            build_id: Vec<u8> = [bytes] [] cold,
        }

        /// One code location.
        ///
        /// Sources usually send only `module` + `address`; the host's symbolizer fills in `name`
        /// and `inlined` before sinks see the frame. A source that already knows the name
        /// (interpreted code, a test double) sets `name` itself and the host keeps it.
        #[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
        struct FrameDef [] {
            /// Id used by stacks.
            id: FrameId = [var] [] cold,
            /// How to read `address`.
            kind: FrameKind = [byte] [] cold,
            /// Module the address belongs to, or [`ModuleId::NONE`].
            module: ModuleId = [var] [] cold,
            /// File offset, virtual address or kernel address (see `kind`).
            address: u64 = [var] [] cold,
            /// Process the address belongs to (needed for [`FrameKind::Virtual`]).
            pid: u32 = [var] [] cold,
            /// Function name (demangled), or [`StrId::NONE`] while unknown.
            name: StrId = [var] [] cold,
            /// Functions inlined at this location, outermost first, each called from the previous
            /// one and the last one being where the address really is. Empty when nothing was
            /// inlined.
            inlined: Vec<StrId> = [ids] [] cold,
            /// Source file of the code at the address (in the innermost function: the last of
            /// `inlined`, else `name`), or [`StrId::NONE`] when not known. The host's symbolizer
            /// fills it from the module's debug information (DWARF); an interpreter's frames
            /// carry their script.
            file: StrId = [] [1] cold,
            /// Line in `file` of the code at the address, 0 when not known.
            line: u32 = [] [2] cold,
            /// First line of the innermost function in `file` (a Python code object's
            /// `co_firstlineno`), 0 when not known.
            start_line: u32 = [] [3] cold,
        }

        /// A call stack.
        #[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
        struct StackDef [] {
            /// Id used by events.
            id: StackId = [var] [] cold,
            /// Frames, innermost (leaf) first.
            frames: Vec<FrameId> = [ids] [] cold,
        }

        /// A clock domain a source stamps records with: its rate and width, so the host can
        /// convert and unwrap its timestamps (paired with the session clock by [`ClockSync`]).
        #[derive(Debug, Clone, PartialEq, Eq, Default)]
        struct ClockDomainDef [] {
            /// The domain records name in their `clock` field (never [`ClockDomain::SESSION`]).
            domain: ClockDomain = [] [1] cold,
            /// Ticks per second; 0 means nanoseconds (1 000 000 000).
            ticks_per_second: u64 = [] [2] cold,
            /// Bits of a timestamp that are valid before it wraps (Level Zero's
            /// `kernelTimestampValidBits`); 0 means 64 (never wraps). The host ignores the bits
            /// above these when it unwraps, and records carry an end as its distance from the
            /// start: give an end that wrapped past its start as start plus that distance.
            valid_bits: u8 = [] [3] cold,
            /// Display name ("level-zero device 0 timer"), or [`StrId::NONE`].
            name: StrId = [] [4] cold,
        }

        /// A host-side runtime or driver API call.
        #[derive(Debug, Clone, PartialEq, Eq, Default)]
        struct ApiCall [columns] {
            /// Calling process.
            pid: u32 = [var] [] cold,
            /// Calling thread.
            tid: u32 = [var] [] cold,
            /// Entry time.
            start: Nanos = [var] [] time,
            /// Exit time.
            end: Nanos = [dur start] [] dur(start),
            /// Function name (`cudaLaunchKernel`).
            name: StrId = [var] [] hot,
            /// Backend correlation id, when the call has one.
            correlation: Option<Correlation> = [opt_corr] [] corr,
            /// The call's result code (0 = success for CUDA, HIP and Level Zero).
            result: i64 = [svar] [] cold,
            /// External correlation id, when a framework pushed one.
            external: Option<ExternalId> = [opt_ext] [] cold,
            /// What the call does (sinks classify calls by this, never by name).
            kind: ApiKind = [] [1] cold,
            /// Clock domain of `start` and `end`.
            clock: ClockDomain = [] [2] cold,
        }

        /// Launch configuration of a kernel.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
        struct KernelInfo [columns] {
            /// Grid size, in `unit`s (blocks, or global work-items).
            grid: [u32; 3] = [var3] [] cold,
            /// Block size: threads per block, or work-items per work-group.
            block: [u32; 3] = [var3] [] cold,
            /// Static + dynamic shared memory per block (CUDA shared memory, HIP LDS, Level Zero
            /// SLM), bytes.
            shared_memory: u32 = [var] [] cold,
            /// Registers per thread (NVIDIA); see `vgprs`/`sgprs` for AMD.
            registers: u32 = [var] [] cold,
            /// Unit of `grid` and `block`.
            unit: SizeUnit = [] [1] cold,
            /// Vector registers per work-item (AMD VGPRs), 0 when not known.
            vgprs: u32 = [] [2] cold,
            /// Scalar registers per wavefront (AMD SGPRs), 0 when not known.
            sgprs: u32 = [] [3] cold,
            /// Scratch / private memory per thread or work-item, bytes.
            scratch_bytes: u32 = [] [4] cold,
        }

        /// Graph ids of work launched as part of a graph.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
        struct GraphInfo [columns] {
            /// Graph (executable) id.
            graph: u64 = [var] [] cold,
            /// Node id inside the graph.
            node: u64 = [var] [] hot,
        }

        /// What the correlator joined a device operation to.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
        struct LaunchRef [columns] {
            /// Launching thread.
            tid: u32 = [var] [] cold,
            /// The CPU stack at the launch, innermost first, or [`StackId::NONE`] if only the API
            /// call was found.
            stack: StackId = [var] [] hot,
            /// The launching API function's name, or [`StrId::NONE`] if not known.
            api: StrId = [var] [] cold,
            /// When the launch API was entered.
            time: Nanos = [var] [] hot,
        }

        /// Work recorded once and executed many times (a Level Zero regular command list, a
        /// CUDA graph): which recording this operation comes from and which execution ran it.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
        struct Submission [columns] {
            /// The recorded object (command list handle, graph exec id).
            list: u64 = [] [1] cold,
            /// The call that recorded this work into the list (its launch stack is the one to
            /// show), when the backend has one.
            record: Option<Correlation> = [] [2] cold,
            /// Which execution of the list ran it (the execute call's correlation id, or a count).
            execution: u64 = [] [3] hot,
        }

        /// Work on a device.
        #[derive(Debug, Clone, PartialEq, Eq, Default)]
        struct DeviceOp [columns] {
            /// What kind of work.
            kind: DeviceOpKind = [byte] [] cold,
            /// Process that submitted it.
            pid: u32 = [var] [] cold,
            /// Device it ran on.
            device: DeviceId = [var] [] cold,
            /// Stream/queue it ran on, or [`StreamId::NONE`].
            stream: StreamId = [var] [] cold,
            /// Start on the device.
            start: Nanos = [var] [] time,
            /// End on the device.
            end: Nanos = [dur start] [] dur(start),
            /// Clock domain of `start` and `end` (the host converts them to the session clock).
            clock: ClockDomain = [var] [] cold,
            /// Kernel name (mangled or not, as the runtime reports it) or operation name.
            name: StrId = [var] [] hot,
            /// Bytes copied/set/allocated; for a collective, its message size per rank as the
            /// communication library states it; 0 when not relevant or not stated.
            bytes: u64 = [var] [] cold,
            /// Copy direction for [`DeviceOpKind::Memcpy`].
            copy: CopyKind = [byte] [] cold,
            /// Backend correlation id of the API call that caused it.
            correlation: Option<Correlation> = [opt_corr] [] corr,
            /// Launch configuration for kernels.
            kernel: Option<KernelInfo> = [group flags 0 [kernel graph launch]] [1] cold,
            /// Graph ids when the work ran as part of a graph.
            graph: Option<GraphInfo> = [group flags 1] [5] cold,
            /// Filled by the host's correlator, never by sources: the launch this work was
            /// joined to.
            launch: Option<LaunchRef> = [group flags 2] [6] cold,
            /// Copies: the device read from, or [`DeviceId::NONE`] for host memory.
            src_device: DeviceId = [] [2] cold,
            /// Copies: the device written to, or [`DeviceId::NONE`] for host memory.
            dst_device: DeviceId = [] [3] cold,
            /// Work recorded once and executed many times: its recording and execution.
            submission: Option<Submission> = [] [4] cold,
            /// Filled by the host's correlator, never by sources: the call that recorded this
            /// work (`submission.record`: a CUDA graph node's capture or creation, an append to
            /// a Level Zero regular command list), when the work ran from a recording.
            recorded: Option<LaunchRef> = [] [7] cold,
            /// The collective this work implements (a communication library's kernel), as the
            /// backend recognises it; [`CollectiveOp::None`] for other work.
            collective: CollectiveOp = [] [8] cold,
            /// Collectives: an id of the communicator that is the same on every rank (NCCL's
            /// `commHash`), or 0 when the backend does not know it: then the stream the work
            /// ran on stands for the communicator, and ranks' streams are matched by the order
            /// their first collectives come in.
            communicator: u64 = [] [9] cold,
        }

        /// The CPU stack at the moment a launch-class API was entered.
        #[derive(Debug, Clone, PartialEq, Eq, Default)]
        struct LaunchSite [columns] {
            /// Process.
            pid: u32 = [var] [] cold,
            /// Thread.
            tid: u32 = [var] [] cold,
            /// Time of the API entry.
            time: Nanos = [var] [] time,
            /// The launch's correlation id.
            correlation: Correlation = [corr] [] corr,
            /// The launch API's name (`cudaLaunchKernel`), or [`StrId::NONE`].
            api: StrId = [var] [] hot,
            /// The stack, innermost first.
            stack: StackId = [var] [] hot,
            /// Clock domain of `time`.
            clock: ClockDomain = [] [1] cold,
            /// This call recorded work that runs later, possibly many times (it captured or
            /// added a CUDA graph node, appended to a regular command list): device work names
            /// it in [`Submission::record`], so the host keeps it joinable for the whole session.
            recording: bool = [] [2] cold,
        }

        /// A sampled CPU stack.
        #[derive(Debug, Clone, PartialEq, Eq, Default)]
        struct CpuSample [columns] {
            /// Process.
            pid: u32 = [var] [] cold,
            /// Thread.
            tid: u32 = [var] [] cold,
            /// Sample time (for off-CPU: when the thread woke up).
            time: Nanos = [var] [] time,
            /// On- or off-CPU.
            kind: SampleKind = [byte] [] cold,
            /// Nanoseconds this sample stands for: the CPU time since the CPU's previous sample, or the blocked time.
            weight: u64 = [var] [] hot,
            /// The stack, innermost first.
            stack: StackId = [var] [] hot,
            /// Clock domain of `time`.
            clock: ClockDomain = [] [1] cold,
        }

        /// A user annotation: an instant marker (`start == end`) or a range.
        #[derive(Debug, Clone, PartialEq, Eq, Default)]
        struct Annotation [columns] {
            /// Process.
            pid: u32 = [var] [] cold,
            /// Thread.
            tid: u32 = [var] [] cold,
            /// Start.
            start: Nanos = [var] [] time,
            /// End (equal to `start` for a marker).
            end: Nanos = [dur start] [] dur(start),
            /// Text.
            name: StrId = [var] [] hot,
            /// Domain / category (NVTX domain, ...), or [`StrId::NONE`].
            domain: StrId = [var] [] cold,
            /// Clock domain of `start` and `end`.
            clock: ClockDomain = [] [1] cold,
        }

        /// One point of a numeric series.
        #[derive(Debug, Clone, PartialEq, Default)]
        struct Counter [columns] {
            /// Process, or 0 for a machine-wide series.
            pid: u32 = [var] [] cold,
            /// Device, or [`DeviceId::NONE`].
            device: DeviceId = [var] [] cold,
            /// Time.
            time: Nanos = [var] [] time,
            /// Series name ("device memory in use").
            name: StrId = [var] [] cold,
            /// Value.
            value: f64 = [f64] [] hot,
            /// Clock domain of `time`.
            clock: ClockDomain = [] [1] cold,
        }

        /// Data that was dropped: never silent (docs/architecture.md, "Design principles").
        #[derive(Debug, Clone, PartialEq, Eq, Default)]
        struct Loss [] {
            /// Process it concerns, or 0.
            pid: u32 = [var] [] cold,
            /// Time it was noticed.
            time: Nanos = [var] [] time,
            /// Cause, as a short stable phrase ("cupti dropped records", "ring buffer full").
            cause: StrId = [var] [] cold,
            /// How many items were lost.
            count: u64 = [var] [] cold,
            /// Clock domain of `time`.
            clock: ClockDomain = [] [1] cold,
        }

        /// A pair of simultaneous readings of a source clock and the session clock, used by the
        /// host to convert that source's timestamps.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
        struct ClockSync [] {
            /// The source clock domain.
            domain: ClockDomain = [var] [] cold,
            /// Reading of the source clock.
            source_time: u64 = [var] [] cold,
            /// Reading of the session clock at the same moment.
            session_time: Nanos = [var] [] cold,
        }

        /// Time the profiling machinery itself took in the target (a tracing runtime flushing its
        /// buffers, instrumenting code): a record kind of its own, so sinks never match names.
        #[derive(Debug, Clone, PartialEq, Eq, Default)]
        struct Overhead [columns] {
            /// Process.
            pid: u32 = [] [1] cold,
            /// Thread, or 0 when not known.
            tid: u32 = [] [2] cold,
            /// Start.
            start: Nanos = [] [3] time,
            /// End.
            end: Nanos = [] [4] dur(start),
            /// What it was.
            kind: OverheadKind = [] [5] cold,
            /// The backend's own name for it, or [`StrId::NONE`].
            name: StrId = [] [6] cold,
            /// Device it concerns, or [`DeviceId::NONE`].
            device: DeviceId = [] [7] cold,
            /// Clock domain of `start` and `end`.
            clock: ClockDomain = [] [8] cold,
        }
        /// The backend says no device work will carry this correlation id any more
        /// (rocprofiler-sdk's correlation-id retirement): the host's correlator forgets the
        /// launch at once instead of after its lifetime. Consumed by the host, never passed to
        /// sinks.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
        struct Retirement [] {
            /// Process.
            pid: u32 = [] [1] cold,
            /// The retired correlation id.
            correlation: Correlation = [] [2] cold,
            /// When the backend noticed.
            time: Nanos = [] [3] cold,
            /// Clock domain of `time`.
            clock: ClockDomain = [] [4] cold,
        }

        /// A capture window: the sources recorded from `start` to `end` and were dormant outside
        /// every window. A session without windows has none (it covers the whole run); sinks that
        /// report time, busy shares or rates take the windows' union as the session's time.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
        struct CaptureWindow [] {
            /// Opened at.
            start: Nanos = [] [1] time,
            /// Closed at.
            end: Nanos = [] [2] dur(start),
            /// What opened it.
            opener: WindowOpener = [] [3] cold,
            /// The process whose markers opened it (capture ranges), or 0.
            pid: u32 = [] [4] cold,
            /// Clock domain of `start` and `end`.
            clock: ClockDomain = [] [5] cold,
        }

        /// Samples of the instructions a device was running, with why they were not issuing
        /// (PC sampling: CUPTI's stall reasons): `count` samples of the instruction at
        /// `pc_offset` in `kernel`, stalled on `stall`, taken between `start` and `end`. A
        /// kernel's launches are found by its name and process (and by `correlation` when the
        /// backend ties samples to one launch); sinks show samples in views of their own,
        /// never mixed with device time.
        #[derive(Debug, Clone, PartialEq, Eq, Default)]
        struct DeviceSample [columns] {
            /// Process.
            pid: u32 = [] [1] cold,
            /// Device sampled.
            device: DeviceId = [] [2] cold,
            /// Start of the span the samples were taken in (the backend's bound: around the
            /// previous fetch). Spans order a kernel's samples, which the outputs lay over its
            /// launches' work in start order.
            start: Nanos = [] [3] time,
            /// End of that span (when the samples were fetched).
            end: Nanos = [] [4] dur(start),
            /// Clock domain of `start` and `end`.
            clock: ClockDomain = [] [5] cold,
            /// The kernel (function) sampled, named as its device records name it (mangled).
            kernel: StrId = [] [6] hot,
            /// The launch the samples belong to, when the backend ties them to one (CUPTI's
            /// serialized collection); `None` when they may come from any launch of `kernel`.
            correlation: Option<Correlation> = [] [7] cold,
            /// The code object holding the kernel (CUPTI: the cubin's CRC), 0 when not known.
            code: u64 = [] [8] cold,
            /// Offset of the instruction from the start of the kernel's code, bytes.
            pc_offset: u64 = [] [9] hot,
            /// Why the sampled warps were not issuing (a short stall-reason name:
            /// `long_scoreboard`, `wait`, `selected` when issuing), or [`StrId::NONE`].
            stall: StrId = [] [10] hot,
            /// Samples.
            count: u64 = [] [11] hot,
            /// Source file of the instruction (from the code object's line table), or
            /// [`StrId::NONE`] when the code carries none.
            file: StrId = [] [12] cold,
            /// Line in `file`, 0 when not known.
            line: u32 = [] [13] cold,
            /// The instruction at `pc_offset` as the vendor's disassembler prints it (CUDA: SASS
            /// from `nvdisasm`, `LDG.E R3, desc[UR4][R2.64]`), or [`StrId::NONE`] when no
            /// disassembler was available while the samples were recorded.
            instruction: StrId = [] [14] cold,
            /// Where `file`/`line` is code inlined into the kernel's own function: the outermost
            /// call site's file (a Triton kernel's own line, where `line` is in a library
            /// function inlined into it), or [`StrId::NONE`] when the instruction is not inlined
            /// or the inlining is not known.
            call_file: StrId = [] [15] cold,
            /// Line in `call_file`, 0 when not known.
            call_line: u32 = [] [16] cold,
        }
    }
    records {
        /// String definition.
        Str(StrDef) = 1,
        /// Process definition.
        Process(ProcessDef) = 2,
        /// Thread definition.
        Thread(ThreadDef) = 3,
        /// Device definition.
        Device(DeviceDef) = 4,
        /// Stream definition.
        Stream(StreamDef) = 5,
        /// Module definition.
        Module(ModuleDef) = 6,
        /// Frame definition.
        Frame(FrameDef) = 7,
        /// Stack definition.
        Stack(StackDef) = 8,
        /// Clock domain definition.
        ClockDomain(ClockDomainDef) = 9,
        /// Host API call.
        ApiCall(ApiCall) = 16 archive 1,
        /// Device work.
        DeviceOp(DeviceOp) = 17 archive 3,
        /// Launch stack.
        LaunchSite(LaunchSite) = 18 archive 2,
        /// CPU sample.
        CpuSample(CpuSample) = 19 archive 4,
        /// Instant marker.
        Marker(Annotation) = 20 archive 5,
        /// Range.
        Range(Annotation) = 21 archive 6,
        /// Counter point.
        Counter(Counter) = 22 archive 7,
        /// Loss report.
        Loss(Loss) = 23,
        /// Clock pairing.
        ClockSync(ClockSync) = 24,
        /// Profiler overhead.
        Overhead(Overhead) = 25 archive 8,
        /// A correlation id retired by its backend.
        Retired(Retirement) = 26,
        /// A capture window.
        Window(CaptureWindow) = 27,
        /// Device PC samples.
        DeviceSample(DeviceSample) = 28 archive 9,
    }
}
