//! The PC sample view (`profile.pc.folded`, `flamegraph.pc.svg`): device PC samples below their
//! kernel's frame, then the instruction's source line and the stall reason —
//! `…launch stack…;cuLaunchKernel;[GPU_Kernel]gemm;gemm.cu:212;[stall]long_scoreboard` —
//! weighted by samples, never by time (the GPU view's weights are microseconds: the two never
//! share a file).
//!
//! A sample names its kernel, not its launch (a backend's continuous sampling aggregates all
//! launches of a kernel): a kernel's samples are shared out among the launch stacks its device
//! work ran under, in proportion to that work's device time in the process (exact when a kernel
//! is launched from one place; the largest-remainder split keeps the total). Samples whose kernel
//! ran no recorded device work go under `[unknown launch site]`.

use xpuprof_sdk::hash::IdMap;
use xpuprof_sdk::model::*;

use super::builder::{push_frame, GpuKey, Line, Renderer};
use super::frames::FrameClass;
use super::names::{basename, sanitize_frame};
use xpuprof_toolbox::shares::split;

/// Frame of samples whose instruction has no source line (the code carries no line table).
pub const NO_LINE: &str = "[no source line]";
/// Prefix of a stall-reason frame.
pub const STALL: &str = "[stall]";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct PcKey {
    pid: u32,
    kernel: StrId,
    device: DeviceId,
    file: StrId,
    line: u32,
    stall: StrId,
}

/// The samples and, per (process, kernel), the launch keys of its device work with their time.
#[derive(Debug, Default)]
pub(crate) struct PcView {
    samples: IdMap<PcKey, u64>,
    launches: IdMap<(u32, StrId), IdMap<GpuKey, u64>>,
}

impl PcView {
    /// A kernel's device work under `key` took `ns`.
    pub(crate) fn kernel_time(&mut self, pid: u32, kernel: StrId, key: GpuKey, ns: u64) {
        *self.launches.entry((pid, kernel)).or_default().entry(key).or_default() += ns;
    }

    pub(crate) fn add(&mut self, s: &DeviceSample) {
        let key = PcKey {
            pid: s.pid,
            kernel: s.kernel,
            device: s.device,
            file: s.file,
            line: s.line,
            stall: s.stall,
        };
        *self.samples.entry(key).or_default() += s.count;
    }

    /// The kernels sampled.
    pub(crate) fn kernels(&self) -> impl Iterator<Item = StrId> + '_ {
        self.samples.keys().map(|k| k.kernel)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }

    /// The view's lines: (line, samples), unmerged.
    pub(crate) fn lines(&self, r: &mut Renderer<'_>, pid_key: impl Fn(u32) -> u32) -> Vec<(Line, u64)> {
        let mut out = Vec::new();
        for (k, &count) in &self.samples {
            let tail = tail(r, k);
            let mut launches: Vec<(Line, u64)> = match self.launches.get(&(k.pid, k.kernel)) {
                Some(keys) => keys.iter().map(|(g, ns)| (r.gpu_line(g), *ns)).collect(),
                None => {
                    let g = GpuKey::kernel(pid_key(k.pid), k.kernel, k.device);
                    vec![(r.gpu_line(&g), 1)]
                }
            };
            // Ties broken by text, so a replay splits the same way.
            launches.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| text(&a.0).cmp(&text(&b.0))));
            let weights: Vec<u64> = launches.iter().map(|(_, w)| *w).collect();
            for ((mut line, _), n) in launches.into_iter().zip(split(count, &weights)) {
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

/// The frames below the kernel: `file:line;[stall]reason`.
fn tail(r: &mut Renderer<'_>, k: &PcKey) -> String {
    let place = match r.str(k.file) {
        Some(f) if k.line != 0 && !f.is_empty() => format!("{}:{}", sanitize_frame(basename(f)), k.line),
        _ => NO_LINE.to_owned(),
    };
    r.note(&place, if place == NO_LINE { FrameClass::Marker } else { FrameClass::Gpu });
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
