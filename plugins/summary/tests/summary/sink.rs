//! The sink fed with the hand-built session: every statistic checked against numbers worked
//! out by hand from `session.rs`, then both files against their golden copies.

use serde_json::{json, Value};
use xpuprof_plugin_summary::config::SummaryConfig;
use xpuprof_plugin_summary::{digest, SummarySink};
use xpuprof_sdk::{Logger, SessionInfo, Sink};

use crate::golden;
use crate::session::{self, T0};

fn run(cfg: SummaryConfig, batch: usize) -> (tempfile::TempDir, Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let session_info = SessionInfo {
        output_dir: dir.path().to_owned(),
        command: vec!["train".into(), "--epochs".into(), "1".into()],
        sources: vec!["scripted".into()],
        ..SessionInfo::default()
    };
    let mut sink = SummarySink::new(SummaryConfig { digest: false, ..cfg }, session_info, Logger::stderr());
    for b in session::records().chunks(batch) {
        sink.consume(b).unwrap();
    }
    let files = sink.finish().unwrap();
    assert_eq!(files, [dir.path().join("summary.txt"), dir.path().join("summary.json")]);
    let json: Value = serde_json::from_str(&std::fs::read_to_string(&files[1]).unwrap()).unwrap();
    let text = std::fs::read_to_string(&files[0]).unwrap();
    (dir, json, text)
}

fn cfg() -> SummaryConfig {
    SummaryConfig::default()
}

#[test]
fn api_statistics_are_exact() {
    let (_d, j, _) = run(cfg(), 7);
    let names: Vec<&str> = j["api"].as_array().unwrap().iter().map(|a| a["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["cudaDeviceSynchronize", "cudaLaunchKernel", "cudaMemcpy", "cudaMalloc", "cudaFree"]);
    // Launch durations 5, 6, 7, 8, 100 µs: nearest rank p50 = 3rd = 7 µs, p99 = 5th = 100 µs.
    let launch = &j["api"][1];
    assert_eq!(launch["calls"], 5);
    assert_eq!(launch["errors"], 1);
    assert_eq!(launch["errors_by_code"], json!([{"code": 98, "count": 1}]));
    assert_eq!(
        launch["time"],
        json!({"total_ns": 126000, "mean_ns": 25200, "min_ns": 5000, "max_ns": 100000,
               "p50_ns": 7000, "p99_ns": 100000, "exact": true})
    );
    // cudaMemcpy 50 and 70 µs: p50 = 1st, p99 = 2nd.
    assert_eq!(j["api"][2]["time"]["p50_ns"], 50000);
    assert_eq!(j["api"][2]["time"]["p99_ns"], 70000);
    assert_eq!(j["api"][2]["errors_by_code"], json!([{"code": 1, "count": 1}]));
}

#[test]
fn kernel_statistics_shares_and_configurations() {
    let (_d, j, _) = run(cfg(), 1000);
    let gemm = &j["kernels"][0];
    assert_eq!(gemm["name"], "gemm");
    assert_eq!(gemm["launches"], 3);
    // 100, 200, 600 µs; 900 of 1000 µs of kernel time.
    assert_eq!(
        gemm["time"],
        json!({"total_ns": 900000, "mean_ns": 300000, "min_ns": 100000, "max_ns": 600000,
               "p50_ns": 200000, "p99_ns": 600000, "exact": true})
    );
    assert_eq!(gemm["gpu_time_pct"], 90.0);
    assert_eq!(
        gemm["typical"],
        json!({"grid": [128, 1, 1], "block": [256, 1, 1], "shared_memory_bytes": 4096,
               "registers_per_thread": 64, "launches": 2})
    );
    assert_eq!(gemm["distinct_configs"], 2);
    assert_eq!(gemm["launch_site"], Value::Null);
    assert_eq!(j["kernels"][1]["name"], "relu");
    assert_eq!(j["kernels"][1]["gpu_time_pct"], 10.0);
}

#[test]
fn kernels_split_by_launch_site() {
    let (_d, j, text) = run(SummaryConfig { by_launch_site: true, ..cfg() }, 3);
    let rows: Vec<(String, Value, u64)> = j["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            (
                k["name"].as_str().unwrap().to_owned(),
                k["launch_site"].clone(),
                k["launches"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("gemm".into(), json!(["train_step", "main"]), 3),
            ("relu".into(), json!([]), 1),
            ("relu".into(), json!(["train_step", "main"]), 1),
        ]
    );
    assert!(text.contains("train_step < main"), "{text}");
}

#[test]
fn transfers_and_bandwidth() {
    let (_d, j, _) = run(cfg(), 5);
    let t = &j["transfers"];
    assert_eq!(t[0]["direction"], "DtoH");
    assert_eq!(t[0]["gb_per_s"], 4.0); // 1e6 bytes in 250 µs
    assert_eq!(t[1]["direction"], "HtoD");
    assert_eq!(t[1]["gb_per_s"], 10.486); // 1 MiB in 100 µs
    assert_eq!(t[2]["op"], "memset");
    assert_eq!((t[2]["bytes"].as_u64(), t[2]["gb_per_s"].as_f64()), (Some(4096), Some(2.048)));
}

#[test]
fn memory_peak_and_leaks_with_their_stacks() {
    let (_d, j, _) = run(cfg(), 4);
    let m = &j["memory"];
    // Allocations 1 MiB, 1 MiB, 4 KiB by API calls, then one 1 MiB free the runtime reported
    // without a correlation id: counted apart, and still out of the bytes in use.
    assert_eq!(
        m["devices"][0],
        json!({"device_index": 0, "device": "GPU Test 0", "allocations": 3, "allocated_bytes": 2101248,
               "frees": 0, "freed_bytes": 0, "runtime_allocations": 0, "runtime_allocated_bytes": 0,
               "runtime_frees": 1, "runtime_freed_bytes": 1048576, "peak_in_use_bytes": 2101248,
               "in_use_at_exit_bytes": 1052672})
    );
    assert_eq!(
        m["without_api_call"],
        json!([{"device_index": 0, "device": "GPU Test 0", "kind": "free", "name": "[unnamed]", "records": 1,
                "bytes": 1048576}])
    );
    assert_eq!(
        m["leaks"],
        json!([
            {"device_index": 0, "device": "GPU Test 0", "pid": 100, "allocations": 1, "bytes": 1048576,
             "stack": ["alloc_buffers", "main"], "display_stack": ["alloc_buffers", "main"],
             "caching_allocator": null, "by_runtime": false},
            {"device_index": 0, "device": "GPU Test 0", "pid": 100, "allocations": 1, "bytes": 4096,
             "stack": ["c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(int, unsigned long)",
                       "train_step", "main"],
             "display_stack": ["c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(int, unsigned long)",
                               "train_step", "main"],
             "caching_allocator": "PyTorch's CUDA caching allocator", "by_runtime": false}
        ])
    );
    assert_eq!(m["unmatched_frees"], 0);
}

#[test]
fn device_busy_time_and_idle_gaps() {
    let (_d, j, _) = run(cfg(), 2);
    let d = &j["devices"][0];
    // Busy [1000,1150] + [1400,1600] + [1650,2250] = 950 µs; session 5 µs .. 2800 µs.
    assert_eq!(d["kernel_busy_ns"], 950000);
    assert_eq!(j["session"]["duration_ns"], 2_795_000);
    assert_eq!(d["busy_pct"], 33.99);
    // 250 µs gap over the 100 µs threshold; the 50 µs one is under it.
    assert_eq!((d["idle_gaps"].as_u64(), d["idle_gap_total_ns"].as_u64()), (Some(1), Some(250000)));
    assert_eq!(
        d["largest_gaps"],
        json!([{"start_ns": T0 + 1_150_000, "end_ns": T0 + 1_400_000, "duration_ns": 250000,
                "cpu_before": {"pid": 100, "tid": 100, "time_ns": T0 + 1_140_000, "stack": ["train_step", "main"],
                               "display_stack": ["train_step", "main"]}}])
    );
    assert_eq!(d["late_ops"], 0);
}

#[test]
fn threads_launches_and_synchronisation() {
    let (_d, j, _) = run(cfg(), 6);
    assert_eq!(
        j["threads"],
        json!([
            {"pid": 100, "tid": 100, "name": "main", "launches": 5, "launch_sites": 5, "launch_api_calls": 5,
             "launch_api_ns": 126000, "sync_api_calls": 0, "sync_api_ns": 0, "sync_ops": 0, "sync_op_ns": 0,
             "api_calls": 11, "api_ns": 311000},
            {"pid": 100, "tid": 101, "name": "worker", "launches": 0, "launch_sites": 0, "launch_api_calls": 0,
             "launch_api_ns": 0, "sync_api_calls": 1, "sync_api_ns": 400000, "sync_ops": 1, "sync_op_ns": 380000,
             "api_calls": 1, "api_ns": 400000}
        ])
    );
}

#[test]
fn cpu_hot_functions_self_and_total() {
    let (_d, j, _) = run(cfg(), 8);
    let hot = &j["cpu"]["on_cpu"]["hot_functions"];
    assert_eq!(
        hot,
        &json!([
            {"function": "spin_wait", "self_ns": 20000000, "self_pct": 66.67, "total_ns": 20000000, "self_samples": 2},
            {"function": "train_step", "self_ns": 10000000, "self_pct": 33.33, "total_ns": 30000000, "self_samples": 1},
            {"function": "main", "self_ns": 0, "self_pct": 0.0, "total_ns": 30000000, "self_samples": 0}
        ])
    );
    assert_eq!(j["cpu"]["off_cpu"]["weight_ns"], 400000);
}

#[test]
fn own_record_counts_losses_and_overhead() {
    let (_d, j, _) = run(cfg(), 9);
    let o = &j["xpuprof"];
    assert_eq!(o["records_by_kind"]["device_op"], 13);
    assert_eq!(o["records_by_kind"]["string"], 21);
    assert_eq!(o["events_by_backend"], json!({"test": 25, "uncorrelated": 5}));
    assert_eq!(
        o["losses"],
        json!([{"cause": "cupti dropped records", "count": 12, "reports": 2},
               {"cause": "ring buffer full", "count": 3, "reports": 1}])
    );
    assert_eq!(o["lost_total"], 15);
    assert_eq!(
        o["overhead"],
        json!([{"name": "cupti overhead", "count": 2, "total_ns": 40000, "session_pct": 1.43}])
    );
    assert_eq!(o["unmatched_device_ops"], 3);
    assert_eq!(
        j["counters"],
        json!([{"name": "device memory in use", "device_index": 0, "device": "GPU Test 0", "count": 1,
                "min": 2101248.0, "max": 2101248.0, "mean": 2101248.0, "last": 2101248.0}])
    );
}

#[test]
fn output_does_not_depend_on_batching() {
    let (_a, one, t1) = run(cfg(), 1);
    let (_b, all, t2) = run(cfg(), 10_000);
    assert_eq!(one, all);
    assert_eq!(t1, t2);
}

#[test]
fn files_match_golden() {
    let (d, j, text) = run(cfg(), 11);
    golden::check("summary.txt", &text);
    golden::check("summary.json", &std::fs::read_to_string(d.path().join("summary.json")).unwrap());
    assert_eq!(j["schema_version"], xpuprof_plugin_summary::SCHEMA_VERSION);
}

#[test]
fn digest_is_five_lines_naming_top_kernels_busy_and_losses() {
    let dir = tempfile::tempdir().unwrap();
    let info = SessionInfo { output_dir: dir.path().to_owned(), ..SessionInfo::default() };
    let mut sink = SummarySink::new(cfg(), info, Logger::stderr());
    sink.add(&session::records());
    let report = sink.report();
    let lines = digest::lines(&report, &[dir.path().join("summary.txt")]);
    assert!(lines.iter().all(|l| !l.contains('\n')));
    assert!(lines[0].contains("5 kernel runs"), "{}", lines[0]);
    assert_eq!(lines[1], "GPU busy: device 0 34.0% (1 idle gaps)");
    assert_eq!(lines[2], "top kernels: gemm 90.0%, relu 10.0%");
    assert_eq!(
        lines[3],
        "losses: 15 (cupti dropped records 12, ring buffer full 3); device work without a launch site: 3 \
         (free 1, kernel 1, memset 1): some without a correlation id, some whose launch was not seen; see the report"
    );
    assert_eq!(
        lines[4],
        format!(
            "device memory still allocated at exit (released by the driver): 1.00 MiB in 2 allocations \
             (4.00 KiB held by PyTorch's CUDA caching allocator, 1.00 MiB from 1 other allocation site); \
             full report: {}",
            dir.path().join("summary.txt").display()
        )
    );
    assert!(lines.iter().all(|l| !l.contains("leak") && !l.contains("unmatched")), "{lines:?}");
}
