//! The sink on the sample session and on long runs.

use std::io::Read;
use std::path::Path;

use prost::Message;
use xpuprof_archive::sample;
use xpuprof_plugin_pprof::proto::Profile;
use xpuprof_plugin_pprof::{PprofSink, ProfileOptions, FILE_NAME};
use xpuprof_sdk::model::Record;
use xpuprof_sdk::{SessionInfo, Sink};

use crate::go;
use crate::golden;

pub fn session_info(dir: &Path) -> SessionInfo {
    SessionInfo {
        output_dir: dir.to_owned(),
        command: vec!["python3".into(), "train.py".into()],
        sources: vec!["scripted".into()],
        sinks: vec!["pprof".into()],
        start_time: sample::T0,
        verbosity: 0,
        ..SessionInfo::default()
    }
}

pub fn run(records: &[Record]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let mut sink = PprofSink::new(ProfileOptions::default(), &session_info(dir.path())).unwrap();
    for b in records.chunks(5) {
        sink.consume(b).unwrap();
    }
    sink.finish().unwrap();
    dir
}

/// Decodes a profile.pb.gz and checks the references profile.proto requires.
pub fn decode(path: &Path) -> Profile {
    let mut raw = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap()).read_to_end(&mut raw).unwrap();
    let p = Profile::decode(raw.as_slice()).unwrap();
    let strings = p.string_table.len() as i64;
    assert_eq!(p.string_table[0], "");
    let functions: std::collections::HashSet<u64> = p.function.iter().map(|f| f.id).collect();
    let locations: std::collections::HashSet<u64> = p.location.iter().map(|l| l.id).collect();
    let mappings: std::collections::HashSet<u64> = p.mapping.iter().map(|m| m.id).collect();
    assert!(p.function.iter().all(|f| f.name < strings && f.name > 0));
    for l in &p.location {
        assert!(l.mapping_id == 0 || mappings.contains(&l.mapping_id));
        assert!(l.line.iter().all(|line| functions.contains(&line.function_id)));
    }
    for s in &p.sample {
        assert_eq!(s.value.len(), p.sample_type.len());
        assert!(s.location_id.iter().all(|l| locations.contains(l)));
        assert!(s.label.iter().all(|l| l.key > 0 && l.key < strings && l.str < strings));
    }
    p
}

#[test]
fn sample_session_matches_golden() {
    let dir = run(&sample::session());
    let raw = go::pprof(&["-raw"], &dir.path().join(FILE_NAME));
    golden::check("profile.raw.txt", &raw);
}

#[test]
fn go_pprof_reads_gpu_time_per_launch_stack() {
    let dir = run(&sample::session());
    let path = dir.path().join(FILE_NAME);
    let top = go::pprof(&["-top", "-sample_index=gpu_time"], &path);
    assert!(top.contains("[GPU_Kernel]ampere_sgemm_128x64_nn"), "{top}");
    assert!(top.contains("[GPU_Memcpy]HtoD"), "{top}");
    // The sample session's device time: 120+45.5+30+2.4+200+60+9.999+15+20 µs.
    assert!(top.contains("of 502.90us total") || top.contains("502.90us"), "{top}");
    let tags = go::pprof(&["-tags", "-sample_index=gpu_time"], &path);
    for t in [
        "device",
        "GPU 0 (NVIDIA H100 80GB HBM3)",
        "stream",
        "stream 13",
        "kernel",
        "process",
        "python3",
        "thread",
        "pt_worker",
    ] {
        assert!(tags.contains(t), "no tag {t}: {tags}");
    }
    let cpu = go::pprof(&["-top", "-sample_index=cpu_time"], &path);
    assert!(cpu.contains("libtorch_cuda.so+0x1a2b"), "{cpu}");
    let traces = go::pprof(&["-traces", "-sample_index=gpu_time"], &path);
    assert!(traces.contains("cudaGraphLaunch"), "launch API under the kernel: {traces}");
}

#[test]
fn profile_references_are_consistent() {
    let dir = run(&sample::session());
    let p = decode(&dir.path().join(FILE_NAME));
    let names: Vec<&str> = p.sample_type.iter().map(|t| p.string_table[t.r#type as usize].as_str()).collect();
    // No profiler_overhead: the session has none, and pprof users see every listed type.
    assert_eq!(names, ["gpu_time", "gpu_ops", "cpu_time", "off_cpu_time"]);
    let ops: i64 = p.sample.iter().map(|s| s.value[1]).sum();
    assert_eq!(ops, 9, "every device operation counted once");
    assert!(p.comment.iter().any(|c| p.string_table[*c as usize] == "lost 3: cupti dropped records"));
}

#[test]
fn long_runs_merge_samples() {
    let dir = run(&sample::launches(20_000));
    let p = decode(&dir.path().join(FILE_NAME));
    let ops: i64 = p.sample.iter().map(|s| s.value[1]).sum();
    assert_eq!(ops, 20_000);
    assert!(p.sample.len() <= 12, "{} samples: merged by stack and labels", p.sample.len());
}

#[test]
fn profiler_overhead_is_its_own_sample_type() {
    use xpuprof_sdk::model::{Overhead, OverheadKind, StrDef, StrId};
    let mut records = sample::session();
    records.push(Record::Str(StrDef::new(StrId(9_001), "CUPTI overhead: buffer flush")));
    for i in 0..2 {
        records.push(Record::Overhead(
            Overhead::default()
                .pid(sample::PID)
                .tid(sample::TID)
                .start(sample::T0 + i * 10_000)
                .end(sample::T0 + i * 10_000 + 3_000)
                .kind(OverheadKind::BufferFlush)
                .name(StrId(9_001)),
        ));
    }
    let dir = run(&records);
    let p = decode(&dir.path().join(FILE_NAME));
    let last = p.sample_type.last().unwrap();
    assert_eq!(p.string_table[last.r#type as usize], "profiler_overhead");
    let overhead: Vec<_> = p.sample.iter().filter(|s| s.value[4] != 0).collect();
    assert_eq!(overhead.len(), 1, "merged by thread and name");
    assert_eq!(overhead[0].value, [0, 0, 0, 0, 6_000]);
    let leaf = &p.location.iter().find(|l| l.id == overhead[0].location_id[0]).unwrap().line[0];
    let f = p.function.iter().find(|f| f.id == leaf.function_id).unwrap();
    assert_eq!(p.string_table[f.name as usize], "[Overhead]CUPTI overhead: buffer flush");
}
