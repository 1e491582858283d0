//! `xpuprof report --merge`: recordings of several ranks (the scripted test double, each run
//! with `RANK`/`WORLD_SIZE` in its environment, its rank running 40 all-reduces) merged into one
//! session: every rank named `rank N (host, pid)`, a recording whose host clock is offset by a
//! known amount lined up by the ends of its collectives within the stated error although its
//! wall clock is off too, every collective matched across the ranks and the late rank found
//! with the line it waited in, and a damaged or missing rank's archive reported while the
//! others merge.
//!
//! The offset is made by editing the recorded wall-clock/session-clock pair (the clock facts of
//! a host whose session clock reads `OFFSET_NS` less at the same wall-clock time, and whose
//! wall clock is `WALL_ERROR_NS` off besides); the scripted source stamps the same session
//! times in every run, except rank 1's collectives, stamped `OFFSET_NS` earlier as that host's
//! clock would, so the merge must move rank 1 by `OFFSET_NS`, not by what the pairs say.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;
use xpuprof_archive::{mutate, ClockPair};

use super::common::*;

/// How far the second host's session clock is behind the first's.
const OFFSET_NS: u64 = 5_000_000;
/// How far the second host's wall clock is off (NTP on a LAN keeps hosts within about 1 ms).
const WALL_ERROR_NS: u64 = 300_000;
/// All-reduces each rank runs.
const COLLECTIVES: u64 = 40;

/// Records the scripted session as rank `rank` of 2 into `dir` (archive sink), its collectives
/// stamped `behind_ns` early; the target lives long enough for the host to read its environment.
fn record_rank(dir: &Path, rank: u32, behind_ns: u64) -> PathBuf {
    require_plugin("scripted");
    std::fs::create_dir_all(dir).unwrap();
    let config = format!(
        "[source.scripted]\ndefine_target = true\ncollectives = {COLLECTIVES}\nclock_behind_ns = {behind_ns}\n"
    );
    std::fs::write(dir.join("xpuprof.toml"), config).unwrap();
    let o = Command::new(xpuprof())
        .args(["--source", "scripted", "--sink", "archive", "-o", "out", "--", "sleep", "2"])
        .current_dir(dir)
        .env("XPUPROF_PLUGIN_PATH", test_plugin_path())
        .env("RANK", rank.to_string())
        .env("LOCAL_RANK", rank.to_string())
        .env("WORLD_SIZE", "2")
        .output()
        .expect("failed to run xpuprof");
    assert!(o.status.success(), "{}", stderr(&o));
    dir.join("out")
}

fn merge(dirs: &[&Path], out: &Path) -> Output {
    let mut c = Command::new(xpuprof());
    c.args(["report", "--merge"]).args(dirs).args(["--sink", "chrome,summary", "-o"]).arg(out);
    c.env_remove("XPUPROF_PLUGIN_PATH").output().expect("failed to run xpuprof report --merge")
}

fn trace_file(out: &Path) -> PathBuf {
    out.join("archive").join(xpuprof_archive::FILE_NAME)
}

/// Gives recording `b` the clock and the name of a host whose session clock is `behind_ns`
/// behind `a`'s at the same wall-clock time.
fn offset_clock(a: &Path, b: &Path, behind_ns: u64) {
    let pa = xpuprof_archive::open(a).unwrap().meta().clock_pair.expect("no clock pair recorded");
    let mut meta = xpuprof_archive::open(b).unwrap().meta().clone();
    let pb = meta.clock_pair.expect("no clock pair recorded");
    meta.clock_pair = Some(ClockPair { wall_ns: pa.wall_ns, session_ns: pa.session_ns - behind_ns, ..pb });
    // Another host's recording: one of this host would share its clock and keep the pairs'.
    meta.host = "node-b".into();
    let bytes = std::fs::read(trace_file(b)).unwrap();
    std::fs::write(trace_file(b), mutate::with_meta(&bytes, &meta)).unwrap();
}

/// The number after `before` in `line`.
fn number_after(line: &str, before: &str) -> u64 {
    let tail = line.split(before).nth(1).unwrap_or_else(|| panic!("no {before:?} in {line}"));
    tail.split(|c: char| !c.is_ascii_digit()).next().unwrap().parse().unwrap()
}

/// Process names of the chrome trace, by pid.
fn process_names(trace: &Value) -> Vec<(u64, String)> {
    let events = trace["traceEvents"].as_array().expect("no traceEvents");
    events
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "process_name")
        .map(|e| (e["pid"].as_u64().unwrap(), e["args"]["name"].as_str().unwrap().to_owned()))
        .collect()
}

/// Start times (µs) of the first `relu_kernel` slice of each pid in the trace.
fn first_kernel(trace: &Value, name: &str) -> Vec<f64> {
    let mut firsts: Vec<(u64, f64)> = Vec::new();
    for e in trace["traceEvents"].as_array().unwrap() {
        if e["ph"] == "X" && e["name"].as_str().is_some_and(|n| n.contains(name)) {
            let (pid, ts) = (e["pid"].as_u64().unwrap(), e["ts"].as_f64().unwrap());
            match firsts.iter_mut().find(|(p, _)| *p == pid) {
                Some(f) => f.1 = f.1.min(ts),
                None => firsts.push((pid, ts)),
            }
        }
    }
    let mut ts: Vec<f64> = firsts.into_iter().map(|(_, t)| t).collect();
    ts.sort_by(f64::total_cmp);
    ts
}

#[test]
fn ranks_recorded_apart_merge_into_one_named_and_aligned_session_and_a_damaged_rank_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let a = record_rank(&dir.path().join("host-a"), 0, 0);
    let b = record_rank(&dir.path().join("host-b"), 1, OFFSET_NS);
    offset_clock(&a, &b, OFFSET_NS + WALL_ERROR_NS);

    let out = dir.path().join("merged");
    let o = merge(&[&a, &b], &out);
    let said = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{said}");
    // The offset is recovered by the collectives' ends within the stated error, and the error
    // is said; the wall-clock pairs alone were WALL_ERROR_NS off.
    let line = said.lines().find(|l| l.contains("shifted by")).unwrap_or_else(|| panic!("{said}"));
    let shift = number_after(line, "shifted by ");
    let error_ns = number_after(line, "residual error within ±");
    assert!(line.contains(&format!("lined up by the {COLLECTIVES} collectives")), "{said}");
    assert!(shift.abs_diff(OFFSET_NS) <= error_ns, "shift {shift} ns, stated error {error_ns} ns: {said}");
    assert!(
        error_ns < WALL_ERROR_NS / 5,
        "the collectives bound the offset closer than the wall clocks: {said}"
    );
    assert!(said.contains("the reference clock"), "{said}");

    // Both ranks are named `rank N (host, pid)` in the timeline.
    let trace: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("trace.json")).unwrap()).unwrap();
    let names = process_names(&trace);
    let host = xpuprof_archive::host_name();
    for rank in [0, 1] {
        let prefix = format!("rank {rank} ({host}, ");
        assert!(names.iter().any(|(_, n)| n.starts_with(&prefix)), "no process named {prefix}...: {names:?}");
    }
    // The same scripted kernel of the two recordings, OFFSET_NS apart on the merged clock.
    let ts = first_kernel(&trace, "relu_kernel");
    assert_eq!(ts.len(), 2, "one relu_kernel track per recording: {ts:?}");
    let apart_ns = (ts[1] - ts[0]) * 1000.0;
    assert!((apart_ns - OFFSET_NS as f64).abs() <= error_ns as f64 + 1.0, "{ts:?}");

    // Every collective matched across the two ranks; rank 1 found late, in the line it slept in.
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let c = &summary["collectives"];
    assert_eq!((c["ranks"].as_u64(), c["collectives"].as_u64()), (Some(2), Some(COLLECTIVES)), "{c}");
    assert_eq!(c["matched"].as_u64(), Some(COLLECTIVES), "{c}");
    let k = &c["kinds"][0];
    assert_eq!(k["kind"], "allreduce", "{c}");
    let rank1 = format!("rank 1 ({host}, ");
    assert!(k["most_wait_on"].as_str().unwrap().starts_with(&rank1), "{c}");
    assert_eq!(k["python_line"], "straggle (train.py:42)", "{c}");
    assert_eq!(k["stack_from"], "CPU samples", "{c}");
    // Rank 1 arrives 300 µs late at every tenth all-reduce and 10 µs after rank 0 otherwise.
    assert_eq!(k["wait_ns"].as_u64(), Some(4 * 300_000 + 36 * 10_000), "{c}");
    assert!(
        c["slowest"][0]["collective"].as_str().unwrap().starts_with("allreduce #10 on communicator 1"),
        "{c}"
    );
    assert_eq!(c["steps"].as_array().map(Vec::len), Some(2), "{c}");
    // Each all-reduce's slices on the two ranks' device tracks are linked by one flow.
    let flows: Vec<&Value> =
        trace["traceEvents"].as_array().unwrap().iter().filter(|e| e["cat"] == "collective").collect();
    let ends = |end: &str| flows.iter().filter(|e| e[end] == true).count() as u64;
    assert_eq!((ends("flow_out"), ends("flow_in")), (COLLECTIVES, COLLECTIVES), "{flows:?}");
    for start in flows.iter().filter(|e| e["flow_out"] == true) {
        let step = flows
            .iter()
            .find(|e| e["flow_in"] == true && e["bind_id"] == start["bind_id"])
            .expect("a collective's arrow without its end");
        assert_eq!(start["name"], step["name"]);
        assert_ne!((&start["pid"], &start["tid"]), (&step["pid"], &step["tid"]), "linked on one track");
    }
    assert!(flows.iter().any(|e| e["name"] == "allreduce #10 on communicator 1"), "{flows:?}");
    let text = std::fs::read_to_string(out.join("summary.txt")).unwrap();
    assert!(text.contains("Collectives (40 of 40 matched across 2 ranks"), "{text}");

    // A damaged rank's archive and a missing one: reported, the others still merged.
    let c = dir.path().join("host-c");
    std::fs::create_dir_all(c.join("archive")).unwrap();
    let mut bytes = std::fs::read(trace_file(&b)).unwrap();
    let (at, len) = mutate::chunks(&bytes)[0];
    for byte in &mut bytes[at + 40..(at + 40 + len / 2).min(at + 28 + len)] {
        *byte ^= 0x5a;
    }
    std::fs::write(c.join("archive").join(xpuprof_archive::FILE_NAME), &bytes).unwrap();
    let missing = dir.path().join("host-d");
    let out2 = dir.path().join("merged-2");
    let o = merge(&[&a, &b, &c, &missing], &out2);
    let said = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "a damaged or missing rank makes the exit code 1: {said}");
    assert!(said.contains("host-d: not merged"), "{said}");
    assert!(said.lines().any(|l| l.contains("damaged:") && l.contains("host-c")), "{said}");
    let trace: Value =
        serde_json::from_str(&std::fs::read_to_string(out2.join("trace.json")).unwrap()).unwrap();
    let names = process_names(&trace);
    for rank in [0, 1] {
        let prefix = format!("rank {rank} ({host}, ");
        assert!(names.iter().any(|(_, n)| n.starts_with(&prefix)), "{names:?}");
    }
}

/// The real recordings of `tests/fixtures/ranks` (see its README), copied so they can be edited.
fn real_hosts(dir: &Path) -> (PathBuf, PathBuf) {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/ranks");
    let copy = |name: &str| {
        let to = dir.join(name);
        std::fs::create_dir_all(to.join("archive")).unwrap();
        std::fs::copy(trace_file(&fixtures.join(name)), trace_file(&to)).unwrap();
        to
    };
    (copy("host0"), copy("host1"))
}

#[test]
fn a_real_nccl_job_of_two_hosts_merges_its_collectives_matched_the_straggler_found_and_its_offset_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = real_hosts(dir.path());
    // As recorded: one machine, one clock. The pairs' alignment stays; the collectives say how
    // far the two GPUs' timestamps disagree.
    let out = dir.path().join("same");
    let o = merge(&[&a, &b], &out);
    let said = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{said}");
    let line = said.lines().find(|l| l.contains("one clock")).unwrap_or_else(|| panic!("{said}"));
    assert!(number_after(line, "shifted by ") < 1_000, "{said}");
    assert!(line.contains("the ends of the 298 collectives"), "{said}");

    // Host 1 said to be another host whose clock pair is 5.3 ms off: the collectives bring it
    // back to within the error they state of the truth (0), and that error is below the 300
    // µs the wall clocks were off.
    offset_clock(&a, &b, OFFSET_NS + WALL_ERROR_NS);
    let out = dir.path().join("apart");
    let o = merge(&[&a, &b], &out);
    let said = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{said}");
    let line = said.lines().find(|l| l.contains("lined up by the")).unwrap_or_else(|| panic!("{said}"));
    let error = number_after(line, "within ±");
    let lift =
        said.lines().find(|l| l.contains("times moved by")).map_or(0, |l| number_after(l, "moved by "));
    // Its pair would move host1 by OFFSET + WALL_ERROR; the truth is 0 (relative to host0's
    // times, which move by `lift` when host1's must go earlier).
    let shift = number_after(line, "shifted by ") as i64 - lift as i64;
    assert!(shift.unsigned_abs() <= error, "{shift} ns from the truth, stated error {error} ns: {said}");
    assert!(error < WALL_ERROR_NS, "{said}");

    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let c = &summary["collectives"];
    assert_eq!(
        (c["ranks"].as_u64(), c["collectives"].as_u64(), c["matched"].as_u64()),
        (Some(2), Some(302), Some(302))
    );
    let k = &c["kinds"][0];
    assert_eq!(k["kind"], "allreduce", "{c}");
    assert!(k["most_wait_on"].as_str().unwrap().starts_with("rank 1 ("), "{c}");
    assert!(
        k["python_line"].as_str().unwrap().ends_with("/tests/workloads/torch/ddp_straggler.py:29)"),
        "{c}"
    );
    assert_eq!(c["step_range"], "step", "{c}");
    let trace: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("trace.json")).unwrap()).unwrap();
    let linked = trace["traceEvents"].as_array().unwrap().iter().filter(|e| e["cat"] == "collective").count();
    assert_eq!(linked, 2 * 302, "every collective of both ranks carries its arrow");
}

/// The GPU machine's checker (`scripts/gpu/check_ranks.py`, run by `scripts/gpu/parts/ranks.sh`)
/// on these recordings merged as that part merges them: every row passes, so the part's checks
/// still read what the merge, the summary and the Chrome trace write now.
#[test]
fn the_gpu_part_s_checker_passes_the_merged_real_nccl_job() {
    require_plugin("dump");
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = real_hosts(dir.path());
    let out = dir.path().join("merged");
    let o = merge(&[&a, &b], &out);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let said = dir.path().join("merge.err");
    std::fs::write(&said, &o.stderr).unwrap();
    let mut dumps = Vec::new();
    for host in [&a, &b] {
        let to = host.with_extension("dump");
        let o = Command::new(xpuprof())
            .args(["report"])
            .arg(host)
            .args(["--sink", "dump", "-o"])
            .arg(&to)
            .output()
            .expect("failed to run xpuprof report");
        assert!(o.status.success(), "{}", stderr(&o));
        dumps.push(to.join("records.jsonl"));
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let checker = root.join("scripts/gpu/check_ranks.py");
    let workload = root.join("tests/workloads/torch/ddp_straggler.py");
    let check =
        Command::new("python3").arg(&checker).arg("check").arg(&out).arg(&workload).args(&dumps).output();
    let align = Command::new("python3").arg(&checker).arg("align").arg(&said).output();
    let mut rows = String::new();
    for o in [check, align] {
        let o = o.expect("failed to run python3 (scripts/install-deps.sh installs it)");
        rows += &String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "{rows}{}", stderr(&o));
    }
    let checks: Vec<&str> = rows.lines().filter(|l| l.starts_with("CHECK ")).collect();
    assert_eq!(checks.len(), 7, "six rows of `check` and one of `align`:\n{rows}");
    assert!(checks.iter().all(|l| l.split_whitespace().nth(2) == Some("PASS")), "{rows}");
}
