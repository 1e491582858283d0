//! A PyTorch training step as the host hands it to sinks: launch stacks with Python frames as
//! the agents name them (`Class.forward (file:line)`), an autograd engine thread whose launches
//! carry the marker and the Python frames of the `backward()` they ran for, one it could not
//! attribute, an optimizer step, a Python before 3.11 without qualified names, CPU samples in
//! xpuprof's own agent, and a placement note. Every figure is worked out by hand below.
//!
//! Kernel time (µs) by launch stack:
//! ```text
//! S1 Linear < Qwen3MLP < Model.forward (model.py:30) < train_step (train.py:12)   400 (2 kernels)
//! S2 Qwen3Attention < Model.forward (model.py:31) < train_step (train.py:12)        200
//! S3 engine thread, marker, backward() from train_step (train.py:14)                 250
//! S4 engine thread, native frames only                                               50
//! S5 Adam.step < train_step (train.py:16)                                            60
//! S6 forward (old.py:5) (Python 3.10: no class name) < run (old.py:9)                40
//!                                                                            total 1000
//! ```

use serde_json::{json, Value};
use xpuprof_plugin_summary::config::SummaryConfig;
use xpuprof_plugin_summary::{digest, text, SummarySink};
use xpuprof_sdk::model::*;
use xpuprof_sdk::{Logger, SessionInfo};

const PID: u32 = 10;
const MAIN: u32 = 10;
const ENGINE: u32 = 11;
const SITE: &str = "/opt/conda/lib/python3.12/site-packages";
const MARKER: &str = "[autograd engine thread, running the backward() above]";

/// Frame names by id (innermost-first stacks refer to them); the ones that hold `(…:line)` are
/// Python frames, `@libxpuprof…` native frames in the agent library.
fn frames() -> Vec<String> {
    [
        "cudaLaunchKernel".to_owned(),                                         // 1
        "at::native::gemm".to_owned(),                                         // 2
        format!("Linear.forward ({SITE}/torch/nn/modules/linear.py:125)"),     // 3
        format!("Module._call_impl ({SITE}/torch/nn/modules/module.py:1750)"), // 4
        format!("Qwen3MLP.forward ({SITE}/transformers/models/qwen3/modeling_qwen3.py:50)"), // 5
        "Model.forward (/home/u/proj/model.py:30)".to_owned(),                 // 6
        "train_step (/home/u/proj/train.py:12)".to_owned(),                    // 7
        "<module> (/home/u/proj/train.py:40)".to_owned(),                      // 8
        format!("Qwen3Attention.forward ({SITE}/transformers/models/qwen3/modeling_qwen3.py:307)"), // 9
        "Model.forward (/home/u/proj/model.py:31)".to_owned(),                 // 10
        "torch::autograd::Engine::thread_main".to_owned(),                     // 11
        MARKER.to_owned(),                                                     // 12
        format!("_engine_run_backward ({SITE}/torch/autograd/graph.py:825)"),  // 13
        format!("Tensor.backward ({SITE}/torch/_tensor.py:626)"),              // 14
        "train_step (/home/u/proj/train.py:14)".to_owned(),                    // 15
        format!("Adam.step ({SITE}/torch/optim/adam.py:200)"),                 // 16
        "train_step (/home/u/proj/train.py:16)".to_owned(),                    // 17
        "forward (/home/u/proj/old.py:5)".to_owned(),                          // 18
        "run (/home/u/proj/old.py:9)".to_owned(),                              // 19
        "PyObject_Call".to_owned(),                                            // 20
        "process_vm_readv".to_owned(),                                         // 21
        "capture_backward_caller".to_owned(),                                  // 22 (agent library)
    ]
    .into()
}

/// Stacks, innermost first.
const STACKS: &[&[u32]] = &[
    &[1, 2, 3, 4, 5, 4, 6, 4, 7, 8], // 1
    &[1, 9, 4, 10, 4, 7, 8],         // 2
    &[1, 11, 12, 13, 14, 15, 8],     // 3
    &[1, 11],                        // 4
    &[1, 16, 17, 8],                 // 5
    &[1, 18, 20, 19],                // 6
    &[21, 22, 1, 7, 8],              // 7: a CPU sample inside the agent
    &[20, 7, 8],                     // 8: a CPU sample of the program
];

fn defs() -> Vec<Record> {
    let mut r = Vec::new();
    let mut text = |id: u32, t: &str| r.push(Record::Str(StrDef::default().id(StrId(id)).text(t.to_owned())));
    for (i, name) in frames().iter().enumerate() {
        text(i as u32 + 1, name);
    }
    text(100, "python3");
    text(101, "pt_autograd_0");
    text(102, "GPU 0");
    text(103, "/opt/xpuprof/libxpuprof_cupti_agent.so");
    text(104, "/usr/lib/libc.so.6");
    text(105, "Python frames put at the stack's outer end: the native walk ended before the interpreter");
    text(106, "cupti dropped records");
    for k in 0..6 {
        text(200 + k, &format!("kernel_{k}"));
    }
    r.push(Record::Thread(ThreadDef::default().pid(PID).tid(MAIN).name(StrId(100))));
    r.push(Record::Thread(ThreadDef::default().pid(PID).tid(ENGINE).name(StrId(101))));
    r.push(Record::Device(DeviceDef::default().id(DeviceId(1)).name(StrId(102))));
    r.push(Record::Module(ModuleDef::default().id(ModuleId(1)).path(StrId(103))));
    r.push(Record::Module(ModuleDef::default().id(ModuleId(2)).path(StrId(104))));
    for id in 1..=frames().len() as u32 {
        let f = match id {
            21 => FrameDef::default().kind(FrameKind::FileOffset).module(ModuleId(2)).address(0x10),
            22 => FrameDef::default().kind(FrameKind::FileOffset).module(ModuleId(1)).address(0x20),
            // The marker and the Python frames are named frames, the others native ones the host
            // symbolised.
            12 => FrameDef::default().kind(FrameKind::Synthetic),
            _ if frames()[id as usize - 1].contains(" (") => FrameDef::default().kind(FrameKind::Synthetic),
            _ => FrameDef::default().kind(FrameKind::FileOffset),
        };
        r.push(Record::Frame(f.id(FrameId(id)).pid(PID).name(StrId(id))));
    }
    for (i, frames) in STACKS.iter().enumerate() {
        r.push(Record::Stack(
            StackDef::default()
                .id(StackId(i as u32 + 1))
                .frames(frames.iter().map(|f| FrameId(*f)).collect()),
        ));
    }
    r
}

/// A kernel of `us` µs from stack `stack` (0: no stack) launched by thread `tid`.
fn kernel(at: u64, us: u64, name: u32, stack: u32, tid: u32) -> Record {
    let start = 1_000_000 + at * 1_000;
    Record::DeviceOp(
        DeviceOp::default()
            .kind(DeviceOpKind::Kernel)
            .pid(PID)
            .device(DeviceId(1))
            .start(start)
            .end(start + us * 1_000)
            .name(StrId(200 + name))
            .correlation(Some(Correlation { backend: backend::TEST, id: at }))
            .launch(Some(LaunchRef::default().tid(tid).stack(StackId(stack)).api(StrId(1)).time(start))),
    )
}

fn records() -> Vec<Record> {
    let mut r = defs();
    r.extend([
        kernel(0, 300, 0, 1, MAIN),
        kernel(300, 100, 0, 1, MAIN),
        kernel(400, 200, 1, 2, MAIN),
        kernel(600, 250, 2, 3, ENGINE),
        kernel(850, 50, 3, 4, ENGINE),
        kernel(900, 60, 4, 5, MAIN),
        kernel(960, 40, 5, 6, MAIN),
    ]);
    for (i, (stack, weight)) in [(7, 3_000_000), (8, 7_000_000)].into_iter().enumerate() {
        r.push(Record::CpuSample(
            CpuSample::default()
                .pid(PID)
                .tid(MAIN)
                .time(1_000_000 + i as u64)
                .weight(weight)
                .stack(StackId(stack)),
        ));
    }
    r.push(Record::Loss(Loss::default().pid(PID).time(1_500_000).cause(StrId(105)).count(9)));
    r.push(Record::Loss(Loss::default().pid(PID).time(1_500_000).cause(StrId(106)).count(2)));
    r
}

fn report() -> (Value, String, [String; 5]) {
    let mut s = SummarySink::new(
        SummaryConfig { digest: false, ..SummaryConfig::default() },
        SessionInfo::default(),
        Logger::stderr(),
    );
    s.add(&records());
    let r = s.report();
    let json = serde_json::to_value(&r).unwrap();
    (json, text::render(&r, 25), digest::lines(&r, &[]))
}

fn rows(v: &Value, fields: &[&str]) -> Vec<Vec<Value>> {
    v.as_array().unwrap().iter().map(|r| fields.iter().map(|f| r[*f].clone()).collect()).collect()
}

#[test]
fn gpu_time_by_the_innermost_line_of_the_users_code() {
    let (j, text, digest) = report();
    let by_line = rows(&j["python"]["by_line"], &["location", "gpu_ns", "gpu_pct", "launches", "top_kernel"]);
    assert_eq!(
        by_line,
        [
            vec![
                json!("Model.forward (/home/u/proj/model.py:30)"),
                json!(400_000),
                json!(40.0),
                json!(2),
                json!("kernel_0")
            ],
            vec![
                json!("train_step (/home/u/proj/train.py:14)"),
                json!(250_000),
                json!(25.0),
                json!(1),
                json!("kernel_2")
            ],
            vec![
                json!("Model.forward (/home/u/proj/model.py:31)"),
                json!(200_000),
                json!(20.0),
                json!(1),
                json!("kernel_1")
            ],
            vec![
                json!("train_step (/home/u/proj/train.py:16)"),
                json!(60_000),
                json!(6.0),
                json!(1),
                json!("kernel_4")
            ],
            vec![
                json!("[autograd engine thread, backward() not known]"),
                json!(50_000),
                json!(5.0),
                json!(1),
                json!("kernel_3")
            ],
            vec![
                json!("forward (/home/u/proj/old.py:5)"),
                json!(40_000),
                json!(4.0),
                json!(1),
                json!("kernel_5")
            ],
        ]
    );
    assert_eq!(j["python"]["by_line"][0]["file"], "/home/u/proj/model.py");
    assert_eq!(j["python"]["by_line"][0]["line"], 30);
    assert!(text.contains("GPU time by line of your Python code"), "{text}");
    assert_eq!(
        digest[2],
        "top lines of your code (GPU time): Model.forward (/home/u/proj/model.py:30) 40.0%, \
         train_step (/home/u/proj/train.py:14) 25.0%, Model.forward (/home/u/proj/model.py:31) 20.0%"
    );
}

#[test]
fn gpu_time_by_module_innermost_and_anywhere_on_the_stack() {
    let (j, text, _) = report();
    let by_module =
        rows(&j["python"]["by_module"], &["module", "file", "self_ns", "self_pct", "total_ns", "launches"]);
    let qwen = "transformers/models/qwen3/modeling_qwen3.py";
    assert_eq!(
        by_module,
        [
            vec![
                json!("Linear"),
                json!("torch/nn/modules/linear.py"),
                json!(400_000),
                json!(40.0),
                json!(400_000),
                json!(2)
            ],
            vec![
                json!("[no nn.Module forward]"),
                json!(""),
                json!(360_000),
                json!(36.0),
                json!(360_000),
                json!(3)
            ],
            vec![json!("Qwen3Attention"), json!(qwen), json!(200_000), json!(20.0), json!(200_000), json!(1)],
            vec![
                json!("forward"),
                json!("/home/u/proj/old.py"),
                json!(40_000),
                json!(4.0),
                json!(40_000),
                json!(1)
            ],
            // Under Linear and Qwen3Attention: never innermost, 600 µs in all.
            vec![
                json!("Model"),
                json!("/home/u/proj/model.py"),
                json!(0),
                json!(0.0),
                json!(600_000),
                json!(0)
            ],
            vec![json!("Qwen3MLP"), json!(qwen), json!(0), json!(0.0), json!(400_000), json!(0)],
        ]
    );
    assert!(text.contains("GPU time by nn.Module"), "{text}");
}

#[test]
fn forward_backward_and_the_rest() {
    let (j, text, _) = report();
    assert_eq!(
        rows(&j["python"]["phases"], &["phase", "gpu_ns", "gpu_pct", "launches"]),
        [
            vec![json!("forward"), json!(640_000), json!(64.0), json!(4)],
            vec![json!("backward"), json!(300_000), json!(30.0), json!(2)],
            vec![json!("other"), json!(60_000), json!(6.0), json!(1)],
        ]
    );
    assert!(text.contains("Forward and backward"), "{text}");
    crate::golden::check("python-summary.txt", &text);
}

#[test]
fn launch_sites_and_stacks_start_at_the_users_innermost_frame() {
    let (j, text, _) = report();
    assert_eq!(
        j["launch_sites"][0]["stack"],
        json!([
            "Model.forward (/home/u/proj/model.py:30)",
            "train_step (/home/u/proj/train.py:12)",
            "<module> (/home/u/proj/train.py:40)"
        ])
    );
    // The unattributed engine launch: its native frames from the launch call's caller.
    let engine = j["launch_sites"].as_array().unwrap().iter().find(|r| r["gpu_ns"] == 50_000).unwrap();
    assert_eq!(engine["stack"], json!(["torch::autograd::Engine::thread_main"]));
    assert!(
        text.contains("Model.forward (/home/u/proj/model.py:30) < train_step (/home/u/proj/train.py:12) <"),
        "{text}"
    );
}

#[test]
fn xpuprofs_own_code_is_its_cost_under_its_own_frame() {
    let (j, text, _) = report();
    let hot = rows(&j["cpu"]["on_cpu"]["hot_functions"], &["function", "self_ns"]);
    assert!(hot.contains(&vec![json!("[xpuprof]"), json!(3_000_000)]), "{hot:?}");
    assert!(!hot.iter().any(|r| r[0] == "process_vm_readv" || r[0] == "capture_backward_caller"), "{hot:?}");
    assert_eq!(j["xpuprof"]["agent_cpu"], json!({"samples": 1, "weight_ns": 3_000_000, "on_cpu_pct": 30.0}));
    assert!(text.contains("xpuprof's code in the target: 30.0% of the sampled on-CPU time"), "{text}");
}

#[test]
fn placement_notes_are_not_losses() {
    let (j, text, digest) = report();
    assert_eq!(j["xpuprof"]["losses"], json!([{"cause": "cupti dropped records", "count": 2, "reports": 1}]));
    assert_eq!(j["xpuprof"]["lost_total"], 2);
    assert_eq!(j["xpuprof"]["notes"][0]["count"], 9);
    assert!(text.contains("notes (nothing lost):"), "{text}");
    assert_eq!(
        digest[3],
        "losses: 2 (cupti dropped records 2); xpuprof's own code: 30.0% of the sampled CPU time"
    );
}

/// The CPU before an idle gap is the user's: a later sample in xpuprof's own agent (the
/// profiler's cost, e.g. reading the interpreter's frames) is passed over and counted apart.
#[test]
fn the_cpu_before_a_gap_is_the_users_not_the_profilers() {
    let mut r = defs();
    // Two kernels with a 10 ms gap; the program's sample, then the agent's, before the gap.
    r.extend([kernel(0, 100, 0, 1, MAIN), kernel(10_100, 100, 0, 1, MAIN)]);
    for (time, stack) in [(1_050_000, 8), (1_090_000, 7)] {
        let s = CpuSample::default().pid(PID).tid(MAIN).time(time).weight(1_000_000);
        r.push(Record::CpuSample(s.stack(StackId(stack))));
    }
    let mut s = SummarySink::new(
        SummaryConfig { digest: false, ..SummaryConfig::default() },
        SessionInfo::default(),
        Logger::stderr(),
    );
    s.add(&r);
    let report = s.report();
    let j = serde_json::to_value(&report).unwrap();
    let gap = &j["devices"][0]["largest_gaps"][0];
    assert_eq!(gap["duration_ns"], 10_000_000, "{gap}");
    assert_eq!(gap["cpu_before"]["time_ns"], 1_050_000, "{gap}");
    assert_eq!(
        gap["cpu_before"]["stack"],
        json!([
            "PyObject_Call",
            "train_step (/home/u/proj/train.py:12)",
            "<module> (/home/u/proj/train.py:40)"
        ])
    );
    assert_eq!(gap["xpuprof_samples_before"], 1, "{gap}");
    let text = text::render(&report, 25);
    assert!(
        text.contains("tid 10 at 1050000 (then 1 sample in xpuprof's own code): PyObject_Call <"),
        "{text}"
    );
    assert!(!text.contains("[xpuprof] <"), "{text}");
}
