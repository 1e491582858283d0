//! Compile-time work apart from the steady state: a JAX-like run where the jitted step's first
//! call compiles (autotuning kernels under the `[compile]` frame the source put in their launch
//! stacks, one on the compiling thread, one on a compiler thread given the compiling call's
//! stack) and later calls run the compiled operations (`[xla] …` frames).
//!
//! Kernel time (µs): compile-time 300 + 100 = 400 (2 kernels), steady state 500 + 100 = 600
//! (2 kernels): 40% compile-time.

use serde_json::json;
use xpuprof_plugin_summary::config::SummaryConfig;
use xpuprof_plugin_summary::{text, SummarySink};
use xpuprof_sdk::model::*;
use xpuprof_sdk::{Logger, SessionInfo};

const PID: u32 = 20;

const FRAMES: &[&str] = &[
    "cuLaunchKernel",                                            // 1
    "[compile]",                                                 // 2
    "main (/w/train.py:88)",                                     // 3
    "[xla] jit(train_step)/layer1/dot_general (/w/train.py:30)", // 4
    "run (/w/train.py:58)",                                      // 5
    "xla::gpu::AutotunerUtil::ProfileRun",                       // 6
];

/// Stacks, innermost first.
const STACKS: &[&[u32]] = &[
    &[1, 2, 3],    // 1: autotuning on the compiling thread
    &[1, 6, 2, 3], // 2: a compiler thread, the compiling call's stack after the marker
    &[1, 4, 5],    // 3: the step's operation
];

fn records(with_compile: bool) -> Vec<Record> {
    let mut r = Vec::new();
    for (i, t) in FRAMES.iter().enumerate() {
        r.push(Record::Str(StrDef::default().id(StrId(i as u32 + 1)).text((*t).to_owned())));
        let kind =
            if t.starts_with('[') || t.contains(" (") { FrameKind::Synthetic } else { FrameKind::FileOffset };
        r.push(Record::Frame(
            FrameDef::default().id(FrameId(i as u32 + 1)).kind(kind).pid(PID).name(StrId(i as u32 + 1)),
        ));
    }
    r.push(Record::Str(StrDef::default().id(StrId(100)).text("kernel".to_owned())));
    for (i, frames) in STACKS.iter().enumerate() {
        r.push(Record::Stack(
            StackDef::default()
                .id(StackId(i as u32 + 1))
                .frames(frames.iter().map(|f| FrameId(*f)).collect()),
        ));
    }
    let kernels: &[(u64, u64, u32)] = if with_compile {
        &[(0, 300, 1), (300, 100, 2), (400, 500, 3), (900, 100, 3)]
    } else {
        &[(400, 500, 3)]
    };
    for &(at, us, stack) in kernels {
        let start = 1_000_000 + at * 1_000;
        r.push(Record::DeviceOp(
            DeviceOp::default()
                .kind(DeviceOpKind::Kernel)
                .pid(PID)
                .device(DeviceId(1))
                .start(start)
                .end(start + us * 1_000)
                .name(StrId(100))
                .correlation(Some(Correlation { backend: backend::TEST, id: at + 1 }))
                .launch(Some(LaunchRef::default().tid(PID).stack(StackId(stack)).api(StrId(1)).time(start))),
        ));
    }
    r
}

fn report(with_compile: bool) -> xpuprof_plugin_summary::report::Summary {
    let mut s = SummarySink::new(
        SummaryConfig { digest: false, ..SummaryConfig::default() },
        SessionInfo::default(),
        Logger::stderr(),
    );
    s.add(&records(with_compile));
    s.report()
}

#[test]
fn compile_time_kernels_are_counted_apart_from_the_steady_state() {
    let r = report(true);
    let j = serde_json::to_value(&r).unwrap();
    assert_eq!(
        j["compile_time"],
        json!({"compile_ns": 400_000, "compile_kernels": 2, "steady_ns": 600_000, "steady_kernels": 2, "compile_pct": 40.0})
    );
    let t = text::render(&r, 25);
    assert!(
        t.contains("Compile-time GPU work ([compile] in the launch stack): 400.00 µs of kernel time (40.0%), 2 kernels; steady state: 600.00 µs, 2 kernels"),
        "{t}"
    );
}

#[test]
fn a_run_without_compile_time_work_has_no_such_section() {
    let r = report(false);
    let j = serde_json::to_value(&r).unwrap();
    assert!(j.get("compile_time").is_none());
    assert!(!text::render(&r, 25).contains("Compile-time"));
}
