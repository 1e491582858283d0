//! A job of several ranks: every sample carries its process's rank name, so `go tool pprof
//! -tagfocus` keeps one rank's samples.

use std::collections::HashMap;

use xpuprof_archive::sample;
use xpuprof_plugin_pprof::proto::Profile;
use xpuprof_plugin_pprof::FILE_NAME;

use crate::sink::{decode, run};

/// The `process` label of each sample, with its values.
fn process_labels(p: &Profile) -> Vec<(String, Vec<i64>)> {
    let key = p.string_table.iter().position(|s| s == "process").expect("no process label") as i64;
    p.sample
        .iter()
        .map(|s| {
            let l = s.label.iter().find(|l| l.key == key).expect("a sample without its process");
            (p.string_table[l.str as usize].clone(), s.value.clone())
        })
        .collect()
}

#[test]
fn each_rank_s_samples_are_labelled_with_its_rank_name() {
    let dir = run(&sample::ranked_job());
    let p = decode(&dir.path().join(FILE_NAME));
    let gpu = p.sample_type.iter().position(|t| p.string_table[t.r#type as usize] == "gpu_time").unwrap();
    let mut gpu_ns: HashMap<String, i64> = HashMap::new();
    for (process, values) in process_labels(&p) {
        assert!(
            process.starts_with("rank 0 (node-a, 5000)") || process.starts_with("rank 1 (node-b, 5001)"),
            "{process}"
        );
        *gpu_ns.entry(process).or_default() += values[gpu];
    }
    // Four kernels each, rank 1's twice as long (the job's definition in the sample module).
    assert_eq!(gpu_ns.get("rank 0 (node-a, 5000)"), Some(&40_000), "{gpu_ns:?}");
    assert_eq!(gpu_ns.get("rank 1 (node-b, 5001)"), Some(&80_000), "{gpu_ns:?}");
}
