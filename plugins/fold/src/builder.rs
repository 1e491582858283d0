//! Aggregates records into weighted stacks and renders them as folded lines.
//!
//! Events are only hashed into small fixed-size keys while recording (no allocation per
//! event); text is built once per distinct key when the lines are rendered, with the rendered
//! CPU stacks cached per stack id.

use std::io::{self, Write};
use xpuprof_sdk::hash::IdMap;

use xpuprof_sdk::model::*;

use super::kernels::KernelNamer;
use super::names::{basename, sanitize_frame};
use super::options::{FoldedOptions, GraphStacks};
use xpuprof_toolbox::Definitions as Defs;

/// Root frame of device work the correlator could not join to a launch.
pub const UNKNOWN_LAUNCH: &str = "[unknown launch site]";
/// Root frame of device work whose launch API call was found but no stack.
pub const NO_STACK: &str = "[no launch stack]";
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
struct GpuKey {
    pid: u32,
    launch: Option<(StackId, StrId)>,
    recorded: Recorded,
    kind: DeviceOpKind,
    name: StrId,
    copy: CopyKind,
    device: DeviceId,
    stream: StreamId,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct CpuKey {
    pid: u32,
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
}

impl FoldedBuilder {
    /// An empty builder.
    pub fn new(opts: FoldedOptions) -> Self {
        Self { opts, defs: Defs::default(), gpu: IdMap::default(), cpu: IdMap::default(), unmatched: 0 }
    }

    /// Device operations seen without a launch (shown under `[unknown launch site]`).
    pub fn unmatched(&self) -> u64 {
        self.unmatched
    }

    /// Adds one record.
    pub fn add(&mut self, r: &Record) {
        if self.defs.add(r) {
            return;
        }
        match r {
            Record::DeviceOp(op) => self.add_device_op(op),
            Record::CpuSample(s) => self.add_sample(s),
            _ => {}
        }
    }

    fn pid(&self, pid: u32) -> u32 {
        if self.opts.process_frame {
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
        *self.gpu.entry(key).or_default() += op.end.saturating_sub(op.start);
    }

    fn add_sample(&mut self, s: &CpuSample) {
        let off_cpu = s.kind == SampleKind::OffCpu;
        if off_cpu && !self.opts.off_cpu {
            return;
        }
        let key = CpuKey { pid: self.pid(s.pid), stack: s.stack, off_cpu };
        *self.cpu.entry(key).or_default() += s.weight;
    }

    /// The folded lines of `view`: `(stack, weight in µs)`, sorted by stack, identical stacks
    /// merged, lines under `min_weight` dropped.
    pub fn lines(&self, view: View) -> Vec<(String, u64)> {
        let mut r = self.renderer();
        let mut merged: IdMap<String, u64> = IdMap::default();
        if view != View::Gpu {
            for (k, ns) in &self.cpu {
                let w = merged.entry(r.cpu_line(k)).or_default();
                *w = w.saturating_add(*ns);
            }
        }
        if view != View::Cpu {
            for (k, ns) in &self.gpu {
                let w = merged.entry(r.gpu_line(k)).or_default();
                *w = w.saturating_add(*ns);
            }
        }
        let mut lines: Vec<(String, u64)> = merged
            .into_iter()
            .map(|(s, ns)| (s, ns.saturating_add(500) / 1000))
            .filter(|(_, us)| *us >= self.opts.min_weight.max(1))
            .collect();
        lines.sort_unstable();
        lines
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
            .map(|k| k.name);
        let kernels = KernelNamer::new(&self.opts, &self.defs, names);
        Renderer { b: self, stacks: IdMap::default(), kernels }
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
struct Renderer<'a> {
    b: &'a FoldedBuilder,
    stacks: IdMap<StackId, String>,
    kernels: KernelNamer,
}

impl Renderer<'_> {
    fn cpu_line(&mut self, k: &CpuKey) -> String {
        let mut line = self.process_prefix(k.pid);
        if k.off_cpu {
            push_frame(&mut line, OFF_CPU);
        }
        let stack = self.stack(k.stack);
        push_frame(&mut line, &stack);
        line
    }

    fn gpu_line(&mut self, k: &GpuKey) -> String {
        let mut line = self.process_prefix(k.pid);
        match k.launch {
            None => push_frame(&mut line, UNKNOWN_LAUNCH),
            Some((stack, api)) => self.push_launch(&mut line, stack, api),
        }
        match k.recorded {
            Recorded::No => {}
            Recorded::Unknown => push_frame(&mut line, RECORDED_UNKNOWN),
            Recorded::At(stack, api) => {
                push_frame(&mut line, RECORDED_AT);
                self.push_launch(&mut line, stack, api);
            }
        }
        let frame = self.gpu_frame(k);
        push_frame(&mut line, &frame);
        line
    }

    /// Appends a launch stack and its API function. A stack walked from inside the call (it
    /// holds a frame of the API function's name) is cut after that frame: the runtime's and
    /// driver's frames below it differ between capture paths (an agent's walk, an eBPF uprobe)
    /// and would split one launch site into several towers. The name comes from the record.
    fn push_launch(&mut self, line: &mut String, stack: StackId, api: StrId) {
        let mut stack_text = if stack.is_none() { NO_STACK.to_owned() } else { self.stack(stack) };
        let api = self.b.defs.str(api).map(sanitize_frame);
        if let Some(api) = &api {
            cut_after_frame(&mut stack_text, api);
        }
        push_frame(line, &stack_text);
        if let Some(api) = api {
            if stack_text.rsplit(';').next().is_none_or(|leaf| leaf != api) {
                push_frame(line, &api);
            }
        }
    }

    fn process_prefix(&self, pid: u32) -> String {
        if !self.b.opts.process_frame {
            return String::new();
        }
        let cmd = self.b.defs.process_command(pid).unwrap_or("[unknown]");
        let exe = basename(cmd.split_whitespace().next().unwrap_or(cmd));
        format!("{} ({pid})", sanitize_frame(exe))
    }

    /// The frames of stack `id`, root first, joined with `;`.
    fn stack(&mut self, id: StackId) -> String {
        if let Some(s) = self.stacks.get(&id) {
            return s.clone();
        }
        let mut out = String::new();
        match self.b.defs.stack(id) {
            None => push_frame(&mut out, "[unknown stack]"),
            Some(frames) => {
                for f in frames.iter().rev() {
                    self.push_frame_text(&mut out, *f);
                }
            }
        }
        if out.is_empty() {
            push_frame(&mut out, "[empty stack]");
        }
        self.stacks.insert(id, out.clone());
        out
    }

    /// Appends frame `id`: its function, then the functions inlined into it, outermost first.
    fn push_frame_text(&self, out: &mut String, id: FrameId) {
        let defs = &self.b.defs;
        let Some(f) = defs.frame(id) else {
            push_frame(out, "[unknown frame]");
            return;
        };
        match defs.str(f.name) {
            Some(name) => push_frame(out, &sanitize_frame(name)),
            None => {
                let module = match (f.kind, defs.module_path(f.module)) {
                    (_, Some(path)) => basename(path),
                    (FrameKind::Kernel, None) => "[kernel]",
                    (_, None) => "[unknown module]",
                };
                push_frame(out, &format!("{}+{:#x}", sanitize_frame(module), f.address));
            }
        }
        for inl in &f.inlined {
            push_frame(out, &sanitize_frame(defs.str(*inl).unwrap_or("[unknown inlined]")));
        }
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

/// Cuts `stack` (frames joined by `;`, root first) after its innermost frame named `frame`, if
/// it has one.
fn cut_after_frame(stack: &mut String, frame: &str) {
    let mut end = 0;
    let mut cut = None;
    for f in stack.split(';') {
        end += f.len();
        if f == frame {
            cut = Some(end);
        }
        end += 1;
    }
    if let Some(at) = cut {
        stack.truncate(at);
    }
}

/// Appends `frames` (one frame or several joined by `;`) to a stack being built.
fn push_frame(line: &mut String, frames: &str) {
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

    #[test]
    fn stacks_walked_from_inside_the_call_are_cut_after_the_api_frame() {
        let mut s = "main;train;cudaLaunchKernel;libcudart.so+0x10;libcuda.so+0x20".to_owned();
        cut_after_frame(&mut s, "cudaLaunchKernel");
        assert_eq!(s, "main;train;cudaLaunchKernel");
        let mut s = "main;launch".to_owned();
        cut_after_frame(&mut s, "cudaLaunchKernel");
        assert_eq!(s, "main;launch", "a stack from the caller side is kept whole");
        let mut s = "main;cudaLaunchKernelEx;x".to_owned();
        cut_after_frame(&mut s, "cudaLaunchKernel");
        assert_eq!(s, "main;cudaLaunchKernelEx;x", "whole frames only");
    }
}
