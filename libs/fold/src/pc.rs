//! The PC sample view (`profile.pc.folded`, `flamegraph.pc.svg`): device PC samples below their
//! kernel's frame, then the instruction's source line and the stall reason —
//! `…launch stack…;cuLaunchKernel;[GPU_Kernel]gemm;gemm.cu:212;[stall]long_scoreboard` —
//! weighted by samples, never by time (the GPU view's weights are microseconds: the two never
//! share a file).
//!
//! A sample names its kernel, not its launch (a backend's continuous sampling aggregates all
//! launches of a kernel), and the fetch it came in: a kernel's samples, in fetch order, are laid
//! over its device work in start order by device time, so each fetch's samples go to the launch
//! stacks that ran that part of the kernel's work (`xpuprof_toolbox::shares::launches`); within a
//! fetch laid over several, an instruction seen under one of them alone goes to it first
//! (`xpuprof_toolbox::shares::affinity`). Exact
//! when a kernel is launched from one place, or from several in turn; the largest-remainder
//! split keeps the total. Samples whose kernel ran no recorded device work go under
//! `[unknown launch site]`. A very long run's spans
//! are coarsened rather than kept without bound (`SpanCounts`).

use xpuprof_sdk::model::*;

use super::builder::{push_frame, GpuKey, Line, Renderer};
use super::frames::FrameClass;
use super::names::{basename, sanitize_frame};
use xpuprof_toolbox::shares::affinity::assign;
use xpuprof_toolbox::shares::launches::{LaunchSpans, SpanCounts};

/// Frame of samples whose instruction has no source line (the code carries no line table).
pub const NO_LINE: &str = "[no source line]";
/// Prefix of a stall-reason frame.
pub const STALL: &str = "[stall]";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct PcKey {
    pid: u32,
    kernel: StrId,
    device: DeviceId,
    file: StrId,
    line: u32,
    call_file: StrId,
    call_line: u32,
    stall: StrId,
}

/// The samples by key and span and, per (process, kernel), its device work under each launch
/// key over time.
#[derive(Debug, Default)]
pub(crate) struct PcView {
    samples: SpanCounts<PcKey>,
    launches: LaunchSpans<(u32, StrId), GpuKey>,
}

impl PcView {
    /// A kernel's device work under `key` ran from `start` to `end`.
    pub(crate) fn kernel_time(&mut self, pid: u32, kernel: StrId, key: GpuKey, start: u64, end: u64) {
        self.launches.add((pid, kernel), &key, start, end);
    }

    pub(crate) fn add(&mut self, s: &DeviceSample) {
        let key = PcKey {
            pid: s.pid,
            kernel: s.kernel,
            device: s.device,
            file: s.file,
            line: s.line,
            call_file: s.call_file,
            call_line: s.call_line,
            stall: s.stall,
        };
        self.samples.add(key, s.start, s.end, s.count);
    }

    /// The kernels sampled.
    pub(crate) fn kernels(&self) -> impl Iterator<Item = StrId> + '_ {
        self.samples.iter().map(|(k, _, _)| k.kernel)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }

    /// The view's lines: (line, samples), unmerged.
    pub(crate) fn lines(&self, r: &mut Renderer<'_>, pid_key: impl Fn(u32) -> u32) -> Vec<(Line, u64)> {
        let mut out = Vec::new();
        let placed = assign(&self.samples, &self.launches, |k| (k.pid, k.kernel));
        for (&k, span, count) in self.samples.iter() {
            let tail = tail(r, &k);
            let shares = placed.get(&(k, span)).map_or(&[][..], Vec::as_slice);
            let mut launches: Vec<(Line, u64)> = if shares.is_empty() {
                let g = GpuKey::kernel(pid_key(k.pid), k.kernel, k.device);
                vec![(r.gpu_line(&g), count)]
            } else {
                shares.iter().map(|(g, n)| (r.gpu_line(g), *n)).collect()
            };
            // A fixed order (by samples, ties by text), so a replay writes the same lines.
            launches.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| text(&a.0).cmp(&text(&b.0))));
            for (mut line, n) in launches {
                if n > 0 {
                    push_frame(&mut line.suffix, &tail);
                    out.push((line, n));
                }
            }
        }
        out
    }
}

fn text(l: &Line) -> (&str, &str, &str) {
    (&l.prefix, &l.stack, &l.suffix)
}

/// The frames below the kernel: `file:line;[stall]reason`, and before the line the outermost
/// call site when the line is code inlined into the kernel (`kernel.py:41;standard.py:263`).
fn tail(r: &mut Renderer<'_>, k: &PcKey) -> String {
    let mut place = match r.str(k.file) {
        Some(f) if k.line != 0 && !f.is_empty() => format!("{}:{}", sanitize_frame(basename(f)), k.line),
        _ => NO_LINE.to_owned(),
    };
    r.note(&place, if place == NO_LINE { FrameClass::Marker } else { FrameClass::Gpu });
    if let Some(f) = r.str(k.call_file).filter(|f| k.call_line != 0 && !f.is_empty()) {
        let site = format!("{}:{}", sanitize_frame(basename(f)), k.call_line);
        r.note(&site, FrameClass::Gpu);
        place = format!("{site};{place}");
    }
    let stall = format!("{STALL}{}", r.str(k.stall).map_or("unknown".into(), sanitize_frame));
    r.note(&stall, FrameClass::Marker);
    format!("{place};{stall}")
}

#[cfg(test)]
mod tests {
    use crate::{FoldedBuilder, FoldedOptions};
    use xpuprof_sdk::model::*;

    fn builder() -> FoldedBuilder {
        let mut b = FoldedBuilder::new(FoldedOptions::default());
        for (id, text) in [
            (1, "run_chase"),
            (2, "run_chain"),
            (3, "chase"),
            (4, "chain"),
            (5, "/src/pc.cu"),
            (6, "long_scoreboard"),
            (7, "wait"),
            (8, "cuLaunchKernel"),
        ] {
            b.add(&Record::Str(StrDef::default().id(StrId(id)).text(text.into())));
        }
        for id in [1, 2] {
            b.add(&Record::Frame(FrameDef::default().id(FrameId(id)).name(StrId(id))));
            b.add(&Record::Stack(StackDef::default().id(StackId(id)).frames(vec![FrameId(id)])));
        }
        b
    }

    fn kernel(name: u32, stack: u32, ns: u64) -> Record {
        let launch = LaunchRef::default().stack(StackId(stack)).api(StrId(8));
        Record::DeviceOp(
            DeviceOp::default()
                .pid(7)
                .kind(DeviceOpKind::Kernel)
                .name(StrId(name))
                .end(ns)
                .launch(Some(launch)),
        )
    }

    #[test]
    fn a_kernel_launched_from_two_places_in_turn_has_each_part_under_its_own() {
        const S: u64 = 1_000_000_000;
        let mut b = builder();
        for i in 0..10 {
            let at = |base: u64| base + i * S / 20;
            for (stack, base) in [(1, 0), (2, 2 * S)] {
                let launch = LaunchRef::default().stack(StackId(stack)).api(StrId(8));
                b.add(&Record::DeviceOp(
                    DeviceOp::default()
                        .pid(7)
                        .kind(DeviceOpKind::Kernel)
                        .name(StrId(3))
                        .start(at(base))
                        .end(at(base) + S / 40)
                        .launch(Some(launch)),
                ));
            }
        }
        let spanned = |line: u32, start: u64, count: u64| {
            let Record::DeviceSample(s) = sample(3, line, 6, count) else { unreachable!() };
            Record::DeviceSample(s.start(start).end(start + S / 10))
        };
        // Fetched in order: 40 samples of the first launches' work, then 30 and, handed over
        // late (fetched long after both), 10 more of the second's: all under their own.
        b.add(&spanned(31, S / 4, 40));
        b.add(&spanned(33, 2 * S + S / 4, 30));
        b.add(&spanned(35, 9 * S, 10));
        let lines: Vec<String> = b.fold_pc().lines.iter().map(|(s, w)| format!("{s} {w}")).collect();
        assert_eq!(
            lines,
            [
                "run_chain;cuLaunchKernel;[GPU_Kernel]chase;pc.cu:33;[stall]long_scoreboard 30",
                "run_chain;cuLaunchKernel;[GPU_Kernel]chase;pc.cu:35;[stall]long_scoreboard 10",
                "run_chase;cuLaunchKernel;[GPU_Kernel]chase;pc.cu:31;[stall]long_scoreboard 40",
            ]
        );
    }

    fn sample(kernel: u32, line: u32, stall: u32, count: u64) -> Record {
        Record::DeviceSample(
            DeviceSample::default()
                .pid(7)
                .kernel(StrId(kernel))
                .file(StrId(5))
                .line(line)
                .stall(StrId(stall))
                .count(count),
        )
    }

    #[test]
    fn samples_go_below_their_kernel_under_its_launch_stacks() {
        let mut b = builder();
        b.add(&kernel(3, 1, 3000));
        b.add(&kernel(3, 2, 1000));
        b.add(&kernel(4, 2, 5000));
        b.add(&sample(3, 31, 6, 40));
        b.add(&sample(4, 40, 7, 9));
        b.add(&Record::DeviceSample(
            DeviceSample::default().pid(7).kernel(StrId(4)).stall(StrId(7)).count(1),
        ));
        b.add(&Record::DeviceSample(
            DeviceSample::default().pid(8).kernel(StrId(3)).stall(StrId(6)).count(2),
        ));
        assert!(b.has_pc_samples());
        let lines: Vec<String> = b.fold_pc().lines.iter().map(|(s, w)| format!("{s} {w}")).collect();
        assert_eq!(
            lines,
            [
                "[unknown launch site];[GPU_Kernel]chase;[no source line];[stall]long_scoreboard 2",
                "run_chain;cuLaunchKernel;[GPU_Kernel]chain;[no source line];[stall]wait 1",
                "run_chain;cuLaunchKernel;[GPU_Kernel]chain;pc.cu:40;[stall]wait 9",
                "run_chain;cuLaunchKernel;[GPU_Kernel]chase;pc.cu:31;[stall]long_scoreboard 10",
                "run_chase;cuLaunchKernel;[GPU_Kernel]chase;pc.cu:31;[stall]long_scoreboard 30",
            ]
        );
        assert!(!builder().has_pc_samples());
    }
}
