//! Aggregates records into weighted stacks and renders them as folded lines.
//!
//! Events are only hashed into small fixed-size keys while recording (no allocation per
//! event); text is built once per distinct key when the lines are rendered, with the rendered
//! CPU stacks cached per stack id.

use std::io::{self, Write};
use xpuprof_sdk::hash::{IdMap, IdSet};

use xpuprof_sdk::model::*;

use super::frames::{is_python_frame, FrameClass};
use super::kernels::KernelNamer;
use super::names::{basename, sanitize_frame};
use super::options::{FoldedOptions, GraphStacks};
use super::pc::PcView;
use super::stacks::StackRenderer;
use xpuprof_toolbox::Definitions as Defs;

/// Root frame of device work the correlator could not join to a launch.
pub const UNKNOWN_LAUNCH: &str = "[unknown launch site]";
/// Root frame of device work whose launch API call was found but no stack.
pub const NO_STACK: &str = "[no launch stack]";
/// Root frame of the stacks whose walk ended before their thread's root.
pub const PARTIAL: &str = "[partial stack]";
/// Root frame of off-CPU samples.
pub const OFF_CPU: &str = "[off-cpu]";
/// Between the replay stack and the recording stack of replayed work (`graph_stacks = "both"`).
pub const RECORDED_AT: &str = "[recorded at]";
/// Where the recording stack of replayed work would be, when its recording call is not known.
pub const RECORDED_UNKNOWN: &str = "[recorded at unknown site]";

/// Which stacks a folded file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    /// CPU samples and GPU work.
    All,
    /// CPU samples only.
    Cpu,
    /// GPU work only (under launch stacks).
    Gpu,
}

/// The recording side of replayed work, as the key of a folded line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Recorded {
    /// Not replayed from a recording, or not shown (`graph_stacks = "replay"`).
    No,
    /// Replayed, but its recording call is not known.
    Unknown,
    /// Recorded at this stack by this API call.
    At(StackId, StrId),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct GpuKey {
    pid: u32,
    tid: u32,
    launch: Option<(StackId, StrId)>,
    recorded: Recorded,
    kind: DeviceOpKind,
    name: StrId,
    copy: CopyKind,
    device: DeviceId,
    stream: StreamId,
}

impl GpuKey {
    /// A kernel of process `pid` without a known launch.
    pub(crate) fn kernel(pid: u32, name: StrId, device: DeviceId) -> Self {
        Self {
            pid,
            tid: 0,
            launch: None,
            recorded: Recorded::No,
            kind: DeviceOpKind::Kernel,
            name,
            copy: CopyKind::default(),
            device,
            stream: StreamId::NONE,
        }
    }
}

/// A folded view: its lines and what each frame text in them is.
#[derive(Debug, Clone, Default)]
pub struct Folded {
    /// `(stack, weight in µs)`, sorted by stack.
    pub lines: Vec<(String, u64)>,
    /// Every frame text of the lines with what it is, sorted by text.
    pub frames: Vec<(String, FrameInfo)>,
}

/// What a frame text of a folded view is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrameInfo {
    /// Python, native, runtime, GPU, marker, …
    pub class: FrameClass,
    /// For its tooltip (empty when there is nothing to add to the text).
    pub description: String,
}

/// A line before the `[partial stack]` check: the frames before the stack, the stack, the
/// frames after it.
pub(crate) struct Line {
    pub(crate) prefix: String,
    pub(crate) stack: String,
    pub(crate) suffix: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct CpuKey {
    pid: u32,
    tid: u32,
    stack: StackId,
    off_cpu: bool,
}

/// Builds the folded view of a session, record by record.
#[derive(Debug)]
pub struct FoldedBuilder {
    opts: FoldedOptions,
    defs: Defs,
    gpu: IdMap<GpuKey, u64>,
    cpu: IdMap<CpuKey, u64>,
    unmatched: u64,
    /// A Python frame was defined.
    python: bool,
    /// The rank of each process that is part of a job, for `rank_roots`.
    ranks: IdMap<u32, u32>,
    /// Device PC samples and the launches of their kernels.
    pc: PcView,
}

impl FoldedBuilder {
    /// An empty builder.
    pub fn new(opts: FoldedOptions) -> Self {
        Self {
            opts,
            defs: Defs::default(),
            gpu: IdMap::default(),
            cpu: IdMap::default(),
            unmatched: 0,
            python: false,
            ranks: IdMap::default(),
            pc: PcView::default(),
        }
    }

    /// Device operations seen without a launch (shown under `[unknown launch site]`).
    pub fn unmatched(&self) -> u64 {
        self.unmatched
    }

    /// Adds one record.
    pub fn add(&mut self, r: &Record) {
        if let Record::Frame(f) = r {
            if !self.python && f.kind == FrameKind::Synthetic {
                self.python = self.defs.str(f.name).is_some_and(|n| is_python_frame(f.kind, n));
            }
        }
        if let Record::Process(p) = r {
            if let Some(rank) = p.rank {
                self.ranks.insert(p.pid, rank);
            }
        }
        if self.defs.add(r) {
            return;
        }
        match r {
            Record::DeviceOp(op) => self.add_device_op(op),
            Record::CpuSample(s) => self.add_sample(s),
            Record::DeviceSample(s) => self.pc.add(s),
            _ => {}
        }
    }

    fn pid(&self, pid: u32) -> u32 {
        if self.opts.process_frame || self.opts.thread_frame || self.opts.rank_roots {
            pid
        } else {
            0
        }
    }

    fn add_device_op(&mut self, op: &DeviceOp) {
        if op.launch.is_none() {
            self.unmatched += 1;
        }
        let recorded = match (self.opts.graph_stacks, op.submission, op.recorded) {
            (GraphStacks::Replay, _, _) | (_, None, _) => Recorded::No,
            (_, Some(_), None) => Recorded::Unknown,
            (_, Some(_), Some(r)) => Recorded::At(r.stack, r.api),
        };
        let launch = match (self.opts.graph_stacks, recorded) {
            // Only the recording stack: it takes the launch's place.
            (GraphStacks::Capture, Recorded::At(stack, api)) => Some((stack, api)),
            _ => op.launch.map(|l| (l.stack, l.api)),
        };
        let recorded = match (self.opts.graph_stacks, recorded) {
            (GraphStacks::Capture, Recorded::At(..)) => Recorded::No,
            (_, r) => r,
        };
        let key = GpuKey {
            pid: self.pid(op.pid),
            tid: if self.opts.thread_frame { op.launch.map_or(0, |l| l.tid) } else { 0 },
            launch,
            recorded,
            kind: op.kind,
            name: if matches!(op.kind, DeviceOpKind::Kernel | DeviceOpKind::Other) {
                op.name
            } else {
                StrId::NONE
            },
            copy: op.copy,
            // Always kept: the frame text names it only with `gpu_device`, the tooltips always.
            device: op.device,
            stream: if self.opts.gpu_stream { op.stream } else { StreamId::NONE },
        };
        let ns = op.end.saturating_sub(op.start);
        *self.gpu.entry(key).or_default() += ns;
        if op.kind == DeviceOpKind::Kernel {
            self.pc.kernel_time(op.pid, op.name, key, op.start, op.end);
        }
    }

    fn add_sample(&mut self, s: &CpuSample) {
        let off_cpu = s.kind == SampleKind::OffCpu;
        if off_cpu && !self.opts.off_cpu {
            return;
        }
        let tid = if self.opts.thread_frame { s.tid } else { 0 };
        let key = CpuKey { pid: self.pid(s.pid), tid, stack: s.stack, off_cpu };
        *self.cpu.entry(key).or_default() += s.weight;
    }

    /// The folded lines of `view`: `(stack, weight in µs)`, sorted by stack, identical stacks
    /// merged, lines under `min_weight` dropped.
    pub fn lines(&self, view: View) -> Vec<(String, u64)> {
        self.fold(view).lines
    }

    /// The folded lines of `view` (as [`Self::lines`]) and what each frame text in them is:
    /// its class (for colours) and a description for its tooltip (a GPU frame's full kernel
    /// name and devices, a shortened name's full text, the frames folded into it).
    pub fn fold(&self, view: View) -> Folded {
        let mut r = self.renderer();
        // Both kinds are rendered whatever the view, so a stack is partial in every view or none.
        let cpu: Vec<(Line, u64)> = self.cpu.iter().map(|(k, ns)| (r.cpu_line(k), *ns)).collect();
        let gpu: Vec<(Line, u64)> = self.gpu.iter().map(|(k, ns)| (r.gpu_line(k), *ns)).collect();
        let pieces = match view {
            View::Cpu => cpu,
            View::Gpu => gpu,
            View::All => cpu.into_iter().chain(gpu).collect(),
        };
        self.merge(r, pieces, true)
    }

    /// Whether the session has device PC samples ([`Self::fold_pc`]).
    pub fn has_pc_samples(&self) -> bool {
        !self.pc.is_empty()
    }

    /// The PC sample view: samples below their kernel's frame, its source line and the stall
    /// reason (`…;[GPU_Kernel]k;k.cu:12;[stall]long_scoreboard`), weighted by samples.
    pub fn fold_pc(&self) -> Folded {
        let mut r = self.renderer();
        // The CPU lines are rendered too, so a stack is partial here as in the other views.
        for k in self.cpu.keys() {
            r.cpu_line(k);
        }
        let pieces = self.pc.lines(&mut r, |pid| self.pid(pid));
        self.merge(r, pieces, false)
    }

    /// Merges rendered lines (`to_us`: weights in ns, written in µs; otherwise counts).
    fn merge(&self, mut r: Renderer<'_>, pieces: Vec<(Line, u64)>, to_us: bool) -> Folded {
        // A stack whose root is a frame other stacks show called from somewhere ended before its
        // thread's root (a walk cut short): it goes under one [partial stack] root.
        let callees: IdSet<&str> = r.stacks.rendered().flat_map(|s| s.split(';').skip(1)).collect();
        let partial =
            |stack: &str| !stack.starts_with('[') && callees.contains(stack.split(';').next().unwrap_or(""));
        let mut merged: IdMap<String, u64> = IdMap::default();
        let mut any_partial = false;
        for (l, ns) in pieces {
            let mut line = l.prefix;
            if partial(&l.stack) {
                any_partial = true;
                push_frame(&mut line, PARTIAL);
            }
            push_frame(&mut line, &l.stack);
            push_frame(&mut line, &l.suffix);
            let w = merged.entry(line).or_default();
            *w = w.saturating_add(ns);
        }
        drop(callees);
        if any_partial {
            r.stacks.note(PARTIAL, FrameClass::Marker);
        }
        let mut lines: Vec<(String, u64)> = merged
            .into_iter()
            .map(|(s, w)| (s, if to_us { w.saturating_add(500) / 1000 } else { w }))
            .filter(|(_, us)| *us >= self.opts.min_weight.max(1))
            .collect();
        lines.sort_unstable();
        let gpu: IdMap<String, String> = self.gpu_frame_descriptions().into_iter().collect();
        let mut frames: Vec<(String, FrameInfo)> = r
            .stacks
            .notes
            .into_iter()
            .map(|(text, note)| {
                let description = gpu.get(&text).cloned().unwrap_or_else(|| note.describe());
                (text, FrameInfo { class: note.class, description })
            })
            .collect();
        frames.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        Folded { lines, frames }
    }

    /// Every GPU frame of the session with what it is, for a tooltip: `(frame text,
    /// description)`, e.g. `("[GPU_Kernel]k", "kernel void k<float>(float*) on GPU 0 (NVIDIA
    /// H100)")`; the description holds the full kernel name and every device the frame ran on.
    /// Sorted by frame text.
    pub fn gpu_frame_descriptions(&self) -> Vec<(String, String)> {
        let mut r = self.renderer();
        let mut devices: IdMap<String, (String, Vec<DeviceId>)> = IdMap::default();
        for k in self.gpu.keys() {
            let frame = r.gpu_frame(k);
            let what = r.describe(k);
            let e = devices.entry(frame).or_insert_with(|| (what, Vec::new()));
            if !e.1.contains(&k.device) {
                e.1.push(k.device);
            }
        }
        let mut out: Vec<(String, String)> = devices
            .into_iter()
            .map(|(frame, (what, mut devs))| {
                devs.sort_unstable();
                let names: Vec<String> = devs.iter().map(|d| self.device_label(*d)).collect();
                (frame, format!("{what} on {}", names.join(", ")))
            })
            .collect();
        out.sort_unstable();
        out
    }

    fn device_label(&self, id: DeviceId) -> String {
        match self.defs.device(id) {
            None => "an unknown device".to_owned(),
            Some(d) => match self.defs.str(d.name) {
                Some(name) if !name.is_empty() => format!("GPU {} ({name})", d.index),
                _ => format!("GPU {}", d.index),
            },
        }
    }

    fn renderer(&self) -> Renderer<'_> {
        let names = self
            .gpu
            .keys()
            .filter(|k| matches!(k.kind, DeviceOpKind::Kernel | DeviceOpKind::Other))
            .map(|k| k.name)
            .chain(self.pc.kernels());
        let kernels = KernelNamer::new(&self.opts, &self.defs, names);
        let launches = self.gpu.keys().flat_map(|k| {
            let recorded = match k.recorded {
                Recorded::At(stack, api) => Some((stack, api)),
                _ => None,
            };
            k.launch.into_iter().chain(recorded)
        });
        let stacks = StackRenderer::new(&self.defs, &self.opts, launches, self.python);
        Renderer { b: self, stacks, kernels }
    }

    /// Writes the folded lines of `view` to `out`.
    pub fn write(&self, view: View, out: &mut dyn Write) -> io::Result<()> {
        for (stack, weight) in self.lines(view) {
            writeln!(out, "{stack} {weight}")?;
        }
        Ok(())
    }
}

/// Renders keys to text, caching per stack and per kernel name.
pub(crate) struct Renderer<'a> {
    b: &'a FoldedBuilder,
    stacks: StackRenderer<'a>,
    kernels: KernelNamer,
}

impl Renderer<'_> {
    /// The frames before a stack: the process and thread frames the options ask for.
    fn prefix(&mut self, pid: u32, tid: u32) -> String {
        let mut line = String::new();
        if let Some(rank) = self.b.ranks.get(&pid).filter(|_| self.b.opts.rank_roots) {
            let frame = format!("[rank {rank}]");
            self.stacks.note(&frame, FrameClass::Marker);
            push_frame(&mut line, &frame);
        }
        if self.b.opts.process_frame {
            let cmd = self.b.defs.process_command(pid).unwrap_or("[unknown]");
            let exe = basename(cmd.split_whitespace().next().unwrap_or(cmd));
            let frame = format!("{} ({pid})", sanitize_frame(exe));
            self.stacks.note(&frame, FrameClass::Marker);
            push_frame(&mut line, &frame);
        }
        if self.b.opts.thread_frame {
            let name = self.b.defs.thread_name(pid, tid).filter(|n| !n.is_empty()).unwrap_or("thread");
            let frame = format!("{} ({tid})", sanitize_frame(name));
            self.stacks.note(&frame, FrameClass::Marker);
            push_frame(&mut line, &frame);
        }
        line
    }

    fn cpu_line(&mut self, k: &CpuKey) -> Line {
        let mut prefix = self.prefix(k.pid, k.tid);
        if k.off_cpu {
            self.stacks.note(OFF_CPU, FrameClass::Marker);
            push_frame(&mut prefix, OFF_CPU);
        }
        let stack = self.stacks.stack(k.stack, StrId::NONE);
        Line { prefix, stack, suffix: String::new() }
    }

    /// A string's text.
    pub(crate) fn str(&self, id: StrId) -> Option<&str> {
        self.b.defs.str(id)
    }

    /// Notes what frame `text` is.
    pub(crate) fn note(&mut self, text: &str, class: FrameClass) {
        self.stacks.note(text, class);
    }

    pub(crate) fn gpu_line(&mut self, k: &GpuKey) -> Line {
        let prefix = self.prefix(k.pid, k.tid);
        let stack = match k.launch {
            None => {
                self.stacks.note(UNKNOWN_LAUNCH, FrameClass::Marker);
                UNKNOWN_LAUNCH.to_owned()
            }
            Some((stack, api)) => self.launch(stack, api),
        };
        let mut suffix = String::new();
        match k.recorded {
            Recorded::No => {}
            Recorded::Unknown => {
                self.stacks.note(RECORDED_UNKNOWN, FrameClass::Marker);
                push_frame(&mut suffix, RECORDED_UNKNOWN);
            }
            Recorded::At(stack, api) => {
                self.stacks.note(RECORDED_AT, FrameClass::Marker);
                push_frame(&mut suffix, RECORDED_AT);
                let recorded = self.launch(stack, api);
                push_frame(&mut suffix, &recorded);
            }
        }
        let frame = self.gpu_frame(k);
        self.stacks.note(&frame, FrameClass::Gpu);
        push_frame(&mut suffix, &frame);
        Line { prefix, stack, suffix }
    }

    /// A launch stack and its API function. A stack walked from inside the call (it holds a
    /// frame of the API function's name) is cut after that frame (see [`StackRenderer::stack`]);
    /// a stack from the caller side gets the API function's frame added. The name comes from
    /// the record.
    fn launch(&mut self, stack: StackId, api: StrId) -> String {
        let mut text = if stack.is_none() {
            self.stacks.note(NO_STACK, FrameClass::Marker);
            NO_STACK.to_owned()
        } else {
            self.stacks.stack(stack, api)
        };
        if let Some(api) = self.b.defs.str(api).map(sanitize_frame) {
            // Frames an agent put innermost (`[compile]`, an operation's) stay the leaves.
            let parts: Vec<&str> = text.split(';').collect();
            let labels = parts.iter().skip(1).rev().take_while(|p| p.starts_with('[')).count();
            let (base, labels) = parts.split_at(parts.len() - labels);
            if base.last().is_none_or(|leaf| *leaf != api) {
                self.stacks.note(&api, FrameClass::Runtime);
                let mut t = base.join(";");
                push_frame(&mut t, &api);
                for l in labels {
                    push_frame(&mut t, l);
                }
                text = t;
            }
        }
        text
    }

    fn gpu_frame(&mut self, k: &GpuKey) -> String {
        let mut tag = String::from("[GPU");
        if self.b.opts.gpu_device {
            if let Some(index) = self.b.defs.device(k.device).map(|d| d.index) {
                tag.push_str(&index.to_string());
            }
        }
        if let Some(native) = self.b.defs.stream(k.stream).map(|s| s.native_id) {
            tag.push_str(&format!("_S{native}"));
        }
        let (kind, detail) = match k.kind {
            DeviceOpKind::Kernel => ("Kernel", self.kernel_name(k.name)),
            DeviceOpKind::Memcpy => ("Memcpy", k.copy.short_name().to_owned()),
            DeviceOpKind::Memset => ("Memset", String::new()),
            DeviceOpKind::Sync => ("Sync", String::new()),
            DeviceOpKind::Alloc => ("Alloc", String::new()),
            DeviceOpKind::Free => ("Free", String::new()),
            _ => ("Other", self.kernel_name(k.name)),
        };
        format!("{tag}_{kind}]{detail}")
    }

    fn kernel_name(&self, id: StrId) -> String {
        self.kernels.frame(id).to_owned()
    }

    /// What the operation of `k` is, in words: `kernel <full name>`, `copy HtoD`, `memset`.
    fn describe(&self, k: &GpuKey) -> String {
        match k.kind {
            DeviceOpKind::Kernel => format!("kernel {}", self.kernels.full(k.name)),
            DeviceOpKind::Memcpy => format!("copy {}", k.copy.short_name()),
            DeviceOpKind::Memset => "memset".to_owned(),
            DeviceOpKind::Sync => "synchronisation".to_owned(),
            DeviceOpKind::Alloc => "allocation".to_owned(),
            DeviceOpKind::Free => "free".to_owned(),
            _ => format!("device work {}", self.kernels.full(k.name)),
        }
    }
}

/// Appends `frames` (one frame or several joined by `;`) to a stack being built.
pub(crate) fn push_frame(line: &mut String, frames: &str) {
    if frames.is_empty() {
        return;
    }
    if !line.is_empty() {
        line.push(';');
    }
    line.push_str(frames);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Defines string `id` and a one-frame stack `id` named `text`.
    fn named(id: u32, text: &str) -> [Record; 3] {
        [
            Record::Str(StrDef::default().id(StrId(id)).text(text.into())),
            Record::Frame(FrameDef::default().id(FrameId(id)).name(StrId(id))),
            Record::Stack(StackDef::default().id(StackId(id)).frames(vec![FrameId(id)])),
        ]
    }

    fn lines(mode: GraphStacks) -> Vec<String> {
        let mut b = FoldedBuilder::new(FoldedOptions { graph_stacks: mode, ..FoldedOptions::default() });
        for (id, text) in [(1, "replay"), (2, "capture"), (3, "k"), (4, "plain")] {
            for r in named(id, text) {
                b.add(&r);
            }
        }
        let launch = |stack: u32| Some(LaunchRef::default().stack(StackId(stack)));
        let kernel = DeviceOp::default().kind(DeviceOpKind::Kernel).name(StrId(3)).start(0).end(2000);
        let replayed = kernel.clone().launch(launch(1)).submission(Some(Submission::default().list(1)));
        b.add(&Record::DeviceOp(replayed.clone().recorded(launch(2))));
        b.add(&Record::DeviceOp(replayed.end(3000)));
        b.add(&Record::DeviceOp(kernel.launch(launch(4)).end(5000)));
        b.lines(View::Gpu).into_iter().map(|(s, w)| format!("{s} {w}")).collect()
    }

    #[test]
    fn graph_stacks_modes_place_replayed_work() {
        assert_eq!(
            lines(GraphStacks::Both),
            [
                "plain;[GPU_Kernel]k 5",
                "replay;[recorded at unknown site];[GPU_Kernel]k 3",
                "replay;[recorded at];capture;[GPU_Kernel]k 2",
            ]
        );
        assert_eq!(lines(GraphStacks::Replay), ["plain;[GPU_Kernel]k 5", "replay;[GPU_Kernel]k 5"]);
        assert_eq!(
            lines(GraphStacks::Capture),
            [
                "capture;[GPU_Kernel]k 2",
                "plain;[GPU_Kernel]k 5",
                "replay;[recorded at unknown site];[GPU_Kernel]k 3"
            ]
        );
    }

    /// Two ranks of a job and a process outside it: a kernel and a CPU sample each.
    fn ranked_lines(rank_roots: bool, view: View) -> Vec<String> {
        let mut b = FoldedBuilder::new(FoldedOptions { rank_roots, ..FoldedOptions::default() });
        for (id, text) in [(1, "train_step"), (2, "k")] {
            for r in named(id, text) {
                b.add(&r);
            }
        }
        for (pid, rank) in [(100, Some(0)), (200, Some(1)), (300, None)] {
            b.add(&Record::Process(ProcessDef::default().pid(pid).rank(rank).world_size(rank.map(|_| 2))));
            let launch = Some(LaunchRef::default().stack(StackId(1)));
            let op = DeviceOp::default()
                .kind(DeviceOpKind::Kernel)
                .name(StrId(2))
                .pid(pid)
                .start(0)
                .end(1_000_000);
            b.add(&Record::DeviceOp(op.launch(launch)));
            b.add(&Record::CpuSample(
                CpuSample::default().pid(pid).tid(pid).stack(StackId(1)).weight(1_000_000),
            ));
        }
        b.lines(view).into_iter().map(|(s, w)| format!("{s} {w}")).collect()
    }

    #[test]
    fn rank_roots_put_each_ranked_process_under_its_rank() {
        for view in [View::Gpu, View::Cpu] {
            let on = ranked_lines(true, view);
            let kernel = if view == View::Gpu { ";[GPU_Kernel]k" } else { "" };
            let expected = [
                format!("[rank 0];train_step{kernel} 1000"),
                format!("[rank 1];train_step{kernel} 1000"),
                format!("train_step{kernel} 1000"),
            ];
            assert_eq!(on, expected, "{view:?}");
            let off = ranked_lines(false, view);
            assert_eq!(off, [format!("train_step{kernel} 3000")], "{view:?}");
        }
    }
}
