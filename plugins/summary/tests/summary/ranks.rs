//! A job of two ranks on two hosts, each with its device of index 0: processes named by rank,
//! devices named apart, the per-rank table, and the rank fields in `summary.json`.

use serde_json::{json, Value};
use xpuprof_plugin_summary::config::SummaryConfig;
use xpuprof_plugin_summary::SummarySink;
use xpuprof_sdk::model::*;
use xpuprof_sdk::{Logger, SessionInfo, Sink};

const T0: u64 = 1_000_000_000;

/// Per rank: a process with its rank fields and name, a thread, a device of index 0, and four
/// kernels launched from one stack (rank 1's take twice as long; the last one is a collective).
fn job() -> Vec<Record> {
    let texts = [
        "train",
        "node-a",
        "node-b",
        "rank 0 (node-a, 5000)",
        "rank 1 (node-b, 5001)",
        "Acme X1",
        "train_step",
        "matmul",
        "allreduce",
        "launch",
    ];
    let s = StrId;
    let mut r: Vec<Record> =
        texts.iter().enumerate().map(|(i, t)| Record::Str(StrDef::new(s(i as u32 + 1), *t))).collect();
    r.push(Record::Frame(FrameDef::default().id(FrameId(1)).kind(FrameKind::Synthetic).name(s(7))));
    r.push(Record::Stack(StackDef::default().id(StackId(1)).frames(vec![FrameId(1)])));
    for rank in 0..2u32 {
        let pid = 5000 + rank;
        r.push(Record::Process(
            ProcessDef::default()
                .pid(pid)
                .command(s(1))
                .rank(Some(rank))
                .local_rank(Some(0))
                .world_size(Some(2))
                .host(s(2 + rank))
                .name(s(4 + rank)),
        ));
        r.push(Record::Thread(ThreadDef::default().pid(pid).tid(pid).name(s(1))));
        r.push(Record::Device(DeviceDef::default().id(DeviceId(1 + rank)).name(s(6))));
        for i in 0..4u64 {
            let t = T0 + i * 100_000;
            let dur = 10_000 * (1 + u64::from(rank));
            let launch = LaunchRef::default().tid(pid).stack(StackId(1)).api(s(10)).time(t);
            r.push(Record::DeviceOp(
                DeviceOp::default()
                    .kind(DeviceOpKind::Kernel)
                    .pid(pid)
                    .device(DeviceId(1 + rank))
                    .start(t + 5_000)
                    .end(t + 5_000 + dur)
                    .name(s(if i == 3 { 9 } else { 8 }))
                    .launch(Some(launch)),
            ));
        }
    }
    r
}

fn run() -> (Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let info = SessionInfo { output_dir: dir.path().to_owned(), ..SessionInfo::default() };
    let mut sink =
        SummarySink::new(SummaryConfig { digest: false, ..SummaryConfig::default() }, info, Logger::stderr());
    sink.consume(&job()).unwrap();
    let files = sink.finish().unwrap();
    let json = serde_json::from_str(&std::fs::read_to_string(&files[1]).unwrap()).unwrap();
    (json, std::fs::read_to_string(&files[0]).unwrap())
}

#[test]
fn ranks_are_named_and_tabled() {
    let (j, text) = run();
    assert_eq!(
        j["ranks"],
        json!([
            {"rank": 0, "local_rank": 0, "world_size": 2, "host": "node-a", "pid": 5000,
             "name": "rank 0 (node-a, 5000)", "gpu_time_ns": 40000, "launches": 4, "top_kernel": "matmul"},
            {"rank": 1, "local_rank": 0, "world_size": 2, "host": "node-b", "pid": 5001,
             "name": "rank 1 (node-b, 5001)", "gpu_time_ns": 80000, "launches": 4, "top_kernel": "matmul"},
        ])
    );
    let devices: Vec<&str> =
        j["devices"].as_array().unwrap().iter().map(|d| d["device"].as_str().unwrap()).collect();
    assert_eq!(devices, ["Acme X1 (rank 0)", "Acme X1 (rank 1)"]);
    assert!(text.contains("Ranks (GPU time"), "{text}");
    let row =
        text.lines().find(|l| l.contains("rank 1 (node-b, 5001)") && l.contains("matmul")).unwrap_or("");
    assert!(row.contains("80.0") || row.contains("80 "), "per-rank row of rank 1: {row:?}\n{text}");
    assert!(text.contains("0 Acme X1 (rank 1)"), "{text}");
}

#[test]
fn a_session_without_ranks_has_no_rank_table() {
    let unranked: Vec<Record> = job()
        .into_iter()
        .map(|r| match r {
            Record::Process(p) => Record::Process(p.rank(None).name(StrId::NONE)),
            r => r,
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let info = SessionInfo { output_dir: dir.path().to_owned(), ..SessionInfo::default() };
    let mut sink =
        SummarySink::new(SummaryConfig { digest: false, ..SummaryConfig::default() }, info, Logger::stderr());
    sink.consume(&unranked).unwrap();
    let files = sink.finish().unwrap();
    let text = std::fs::read_to_string(&files[0]).unwrap();
    let json: Value = serde_json::from_str(&std::fs::read_to_string(&files[1]).unwrap()).unwrap();
    assert!(!text.contains("Ranks ("), "{text}");
    assert_eq!(json.get("ranks"), None);
    assert!(!text.contains("(rank "), "{text}");
}
