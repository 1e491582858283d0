//! Regular lists: recorded once, executed many times. Every execution is one launch (the
//! execute call, its stack and id) of all the list's work; a list executed again before its
//! timestamps could be read loses that execution, counted.

use std::collections::BTreeMap;

use crate::harness::run;
use xpuprof_testkit::golden;

#[test]
fn every_execution_joins_all_its_work_to_the_execute() {
    let r = run("regular", "kernel.k_step_a=30000;kernel.k_step_b=10000", "regular", &["5"]);
    golden::check("regular.folded", &(r.folded().join("\n") + "\n"));
    // One launch arrow (`bind_id`: one per correlation id) per execute, two kernels under each.
    let mut by_launch: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    for e in r.chrome().iter().filter(|e| e["ph"] == "X" && e["cat"] == "kernel") {
        let c = e["bind_id"].as_u64().expect("an arrow from the execute call");
        by_launch.entry(c).or_default().push(e["name"].as_str().unwrap_or("").to_owned());
    }
    assert_eq!(by_launch.len(), 5, "{by_launch:?}");
    for names in by_launch.values_mut() {
        names.sort();
        assert_eq!(names, &["k_step_a", "k_step_b"]);
    }
    assert!(r.stderr.contains("losses: none"), "{}", r.stderr);
    assert!(r.stderr.contains("10 with launch stack"), "{}", r.stderr);
}

#[test]
fn a_list_executed_again_before_its_timestamps_were_read_is_counted_lost() {
    // The driver makes work visible only at a host synchronisation; the workload executes the
    // list 5 times and synchronises once: 4 executions × 2 kernels cannot be read.
    let r = run("regular-lost", "complete=sync", "regular", &["5", "nosync"]);
    assert!(
        r.stderr.contains("levelzero list re-executed before its timestamps were read: 8"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("2 with launch stack"), "{}", r.stderr);
    let summary = r.file("summary.txt");
    assert!(summary.contains("re-executed"), "the loss reaches the summary:\n{summary}");
}
