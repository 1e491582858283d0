//! Runs that are not the hand-built GPU session: a CPU-only (eBPF-style) run, and a long run
//! whose percentiles come from the bounded histogram.

use xpuprof_plugin_summary::config::SummaryConfig;
use xpuprof_plugin_summary::{digest, SummarySink};
use xpuprof_sdk::model::*;
use xpuprof_sdk::{Logger, SessionInfo};

fn sink(cfg: SummaryConfig) -> SummarySink {
    SummarySink::new(cfg, SessionInfo::default(), Logger::stderr())
}

fn frame(id: u32, name: u32) -> Record {
    Record::Frame(FrameDef::default().id(FrameId(id)).kind(FrameKind::Synthetic).pid(1).name(StrId(name)))
}

#[test]
fn cpu_only_run_reports_hot_functions_in_the_digest() {
    let mut s = sink(SummaryConfig::default());
    let mut recs = vec![
        Record::Str(StrDef::default().id(StrId(1)).text("main".into())),
        Record::Str(StrDef::default().id(StrId(2)).text("parse".into())),
        Record::Str(StrDef::default().id(StrId(3)).text("hash".into())),
        frame(1, 1),
        frame(2, 2),
        frame(3, 3),
        Record::Stack(StackDef::default().id(StackId(1)).frames(vec![FrameId(2), FrameId(1)])),
        Record::Stack(StackDef::default().id(StackId(2)).frames(vec![FrameId(3), FrameId(2), FrameId(1)])),
    ];
    // parse < main x3, hash < parse < main x1, at 10 ms each.
    for (i, stack) in [1, 1, 1, 2].into_iter().enumerate() {
        recs.push(Record::CpuSample(
            CpuSample::default()
                .pid(1)
                .tid(1)
                .time(1_000 + i as u64)
                .kind(SampleKind::OnCpu)
                .weight(10_000_000)
                .stack(StackId(stack)),
        ));
    }
    s.add(&recs);
    let r = s.report();
    let hot: Vec<(&str, u64, u64)> =
        r.cpu.on_cpu.hot_functions.iter().map(|h| (h.function.as_str(), h.self_ns, h.total_ns)).collect();
    assert_eq!(
        hot,
        [("parse", 30_000_000, 40_000_000), ("hash", 10_000_000, 10_000_000), ("main", 0, 40_000_000)]
    );
    let lines = digest::lines(&r, &[]);
    assert_eq!(lines[1], "GPU busy: no kernels recorded");
    assert_eq!(lines[2], "top CPU functions (self): parse 75.0%, hash 25.0%, main 0.0%");
}

#[test]
fn long_runs_switch_to_the_histogram_within_its_error_bound() {
    let mut s = sink(SummaryConfig { exact_samples: 100, ..SummaryConfig::default() });
    s.add(&[Record::Str(StrDef::default().id(StrId(1)).text("k".into()))]);
    let mut batch = Vec::with_capacity(1000);
    // Durations 1..=20000 µs in a scrambled order, on one device, back to back.
    for i in 0..20_000u64 {
        let d = ((i * 7919) % 20_000 + 1) * 1_000;
        batch.push(Record::DeviceOp(
            DeviceOp::default()
                .kind(DeviceOpKind::Kernel)
                .pid(1)
                .device(DeviceId(1))
                .start(i * 30_000_000)
                .end(i * 30_000_000 + d)
                .name(StrId(1)),
        ));
        if batch.len() == 1000 {
            s.add(&batch);
            batch.clear();
        }
    }
    let r = s.report();
    let t = r.kernels[0].time;
    assert!(!t.exact);
    assert_eq!((t.min_ns, t.max_ns, t.mean_ns), (1_000, 20_000_000, 10_000_500));
    let near = |v: u64, exact: f64| (v as f64 - exact).abs() / exact <= 1.0 / 256.0;
    assert!(near(t.p50_ns, 10_000_000.0), "p50 {}", t.p50_ns);
    assert!(near(t.p99_ns, 19_800_000.0), "p99 {}", t.p99_ns);
    assert_eq!(r.devices[0].late_ops, 0);
}

#[test]
fn an_empty_run_still_writes_both_files() {
    let dir = tempfile::tempdir().unwrap();
    let info = SessionInfo { output_dir: dir.path().to_owned(), ..SessionInfo::default() };
    let mut s =
        SummarySink::new(SummaryConfig { digest: false, ..SummaryConfig::default() }, info, Logger::stderr());
    let r = s.report();
    let files = s.write(&r, dir.path()).unwrap();
    assert_eq!(files.len(), 2);
    let lines = digest::lines(&r, &files);
    assert_eq!(lines[2], "top kernels: none recorded");
    assert_eq!(lines[3], "losses: none");
    assert_eq!(
        lines[4],
        format!("device memory still allocated at exit: none; full report: {}", files[0].display())
    );
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&files[1]).unwrap()).unwrap();
    assert_eq!(json["session"]["duration_ns"], 0);
}
