//! `xpuprof report`: it never writes over the archive it reads, and a damaged archive (a
//! malformed record behind a valid checksum, raw damage anywhere) still gives valid outputs from
//! every sink. The fuzz loop here runs in CI; `scripts/fuzz-archive.sh` runs it longer.

use std::path::{Path, PathBuf};
use std::process::Command;

use xpuprof_archive::mutate::{self, Rng};

use super::common::*;

const SINKS: &str = "chrome,folded,summary,flamegraph,perfetto,pprof";

/// Records the scripted session with the archive sink into `dir`; returns the trace file.
fn scripted_archive(dir: &Path) -> PathBuf {
    require_plugin("scripted");
    std::fs::create_dir_all(dir).unwrap();
    let out = dir.to_str().unwrap();
    let o = run_in(dir, &["--source", "scripted", "--sink", "archive", "-o", out, "--", "true"]);
    assert!(o.status.success(), "{}", stderr(&o));
    dir.join("archive/trace.xpa")
}

/// Replays what `out_dir`'s archive holds into `report`; returns the process output.
fn report(archive_dir: &Path, report: &Path, sinks: &str) -> std::process::Output {
    Command::new(xpuprof())
        .args(["report"])
        .arg(archive_dir)
        .args(["--sink", sinks, "-o"])
        .arg(report)
        .env_remove("XPUPROF_PLUGIN_PATH")
        .output()
        .expect("failed to run xpuprof report")
}

/// Every output of a report is complete and parses.
fn assert_outputs_valid(dir: &Path, what: &str) {
    for json in ["trace.json", "summary.json"] {
        let text = std::fs::read_to_string(dir.join(json)).unwrap_or_else(|e| panic!("{what}: {json}: {e}"));
        if let Err(e) = serde_json::from_str::<serde_json::Value>(&text) {
            panic!("{what}: {json} is not valid JSON ({e}), {} bytes", text.len());
        }
    }
    let svg = std::fs::read_to_string(dir.join("flamegraph.svg")).unwrap();
    assert!(svg.trim_end().ends_with("</svg>"), "{what}: flamegraph.svg is incomplete");
    assert!(dir.join("profile.folded").is_file(), "{what}: no profile.folded");
}

#[test]
fn report_refuses_to_write_an_archive_over_the_one_it_reads() {
    let dir = tempfile::tempdir().unwrap();
    let trace = scripted_archive(dir.path());
    let before = std::fs::read(&trace).unwrap();
    for input in [dir.path().to_owned(), dir.path().join("archive"), trace.clone()] {
        let o = report(&input, dir.path(), "archive,folded");
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        let e = stderr(&o);
        assert!(e.contains("refusing to replay") && e.contains("-o"), "{e}");
        assert_eq!(std::fs::read(&trace).unwrap(), before, "the input archive was changed");
    }
    // Into another directory it works, and the copy replays.
    let other = dir.path().join("copy");
    let o = report(dir.path(), &other, "archive");
    assert!(o.status.success(), "{}", stderr(&o));
    let o = report(&other, &other.join("again"), "folded");
    assert!(o.status.success(), "{}", stderr(&o));
}

/// The byte offset of the first record's codec length in the first chunk (a raw definition:
/// header byte with kind 0, optional sequence delta, raw length, then `tag, len, payload`).
fn first_raw_record_len_byte(bytes: &[u8]) -> usize {
    let (at, _) = mutate::chunks(bytes)[0];
    let mut i = at + 28;
    assert_eq!(bytes[i] & 0x0f, 0, "the first record is stored raw");
    let delta_follows = bytes[i] >> 4 == 0;
    i += 1;
    if delta_follows {
        while bytes[i] & 0x80 != 0 {
            i += 1;
        }
        i += 1;
    }
    assert!(bytes[i] < 0x7f, "a short raw record");
    i + 2
}

#[test]
fn a_malformed_record_behind_a_valid_checksum_is_skipped_and_every_output_stays_valid() {
    let dir = tempfile::tempdir().unwrap();
    let trace = scripted_archive(dir.path());
    let mut bytes = std::fs::read(&trace).unwrap();
    let len_byte = first_raw_record_len_byte(&bytes);
    bytes[len_byte] = 0x7f;
    mutate::repair_checksums(&mut bytes);
    std::fs::write(&trace, &bytes).unwrap();
    let out = dir.path().join("report");
    let o = report(dir.path(), &out, SINKS);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "damage is exit 1: {e}");
    assert!(e.contains("1 record(s) could not be read and were skipped"), "{e}");
    assert!(!e.contains("FAILED") && !e.contains("panicked"), "{e}");
    assert_outputs_valid(&out, "one malformed record");
    let folded = std::fs::read_to_string(out.join("profile.folded")).unwrap();
    assert!(folded.lines().count() > 3, "the records after the bad one were replayed:\n{folded}");
}

#[test]
fn a_damaged_file_header_is_recovered_from_and_every_output_matches_the_intact_replay() {
    let dir = tempfile::tempdir().unwrap();
    let trace = scripted_archive(dir.path());
    let intact = std::fs::read(&trace).unwrap();
    let clean = dir.path().join("clean");
    let o = report(dir.path(), &clean, "folded,summary");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let folded = std::fs::read_to_string(clean.join("profile.folded")).unwrap();
    let region = mutate::header_region(&intact);
    let header_end = 16 + u32::from_le_bytes(intact[12..16].try_into().unwrap()) as usize + 4;
    // The bytes the issue named (magic, version, metadata length, metadata, checksum), and the
    // copy of the header (its checksum, its payload).
    for at in [0, 9, 12, 20, 40, header_end - 1, header_end + 24, region - 1] {
        let mut bytes = intact.clone();
        bytes[at] ^= 0x10;
        std::fs::write(&trace, &bytes).unwrap();
        let out = dir.path().join(format!("at{at}"));
        let o = report(dir.path(), &out, "folded,summary");
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "byte {at}: damage is exit 1: {e}");
        assert!(
            e.contains("the archive is damaged in 1 place(s)") && e.contains("0 record(s)"),
            "byte {at}: {e}"
        );
        assert!(e.contains("header"), "byte {at}: the damage is named: {e}");
        let got = std::fs::read_to_string(out.join("profile.folded")).unwrap();
        assert_eq!(got, folded, "byte {at}: every record is replayed");
    }
}

/// The archives of the CUDA fixtures, recorded by the real host from the captured agent
/// streams (the `cupti` source with a replaying target, as `plugins/cupti/tests/cupti/host.rs` does).
fn cuda_archives(dir: &Path) -> Vec<PathBuf> {
    const REPLAY: &str = "import os, socket, sys\n\
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n\
        s.connect(os.environ['XPUPROF_CUPTI_SOCKET'])\n\
        s.sendall(open(sys.argv[1], 'rb').read())\n\
        s.close()\n";
    require_plugin("cupti");
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins/cupti/tests/fixtures");
    let mut out = Vec::new();
    for name in ["basic", "driver_launch", "graph_launch", "multi_stream", "multi_thread"] {
        let o_dir = dir.join(name);
        let stream = fixtures.join(name).join("stream.bin");
        let o = Command::new(xpuprof())
            .args(["--source", "cupti", "--sink", "archive", "-o"])
            .arg(&o_dir)
            .args(["--", "python3", "-c", REPLAY])
            .arg(&stream)
            .env_remove("XPUPROF_PLUGIN_PATH")
            .output()
            .expect("run xpuprof");
        assert!(o.status.success(), "{name}: {}", stderr(&o));
        out.push(o_dir.join("archive/trace.xpa"));
    }
    out
}

/// Reports each mutation through every sink: exit 0 or 1, no plugin failure or panic, and every
/// output complete and valid.
fn fuzz_report(seeds: &[Vec<u8>], iterations: usize, seed: u64) {
    let work = tempfile::tempdir().unwrap();
    let input = work.path().join("in");
    std::fs::create_dir_all(input.join("archive")).unwrap();
    let mut rng = Rng::new(seed);
    for it in 0..iterations {
        let k = rng.below(seeds.len());
        let bytes = if it % 2 == 0 {
            mutate::repaired(&seeds[k], &mut rng)
        } else {
            mutate::raw(&seeds[k], &mut rng)
        };
        std::fs::write(input.join("archive/trace.xpa"), &bytes).unwrap();
        let out = work.path().join(format!("out{it}"));
        let o = report(&input, &out, SINKS);
        let e = stderr(&o);
        let what = format!("seed {seed} iteration {it} (archive {k})");
        if o.status.code() == Some(2) && e.contains("trace.xpa") && !e.contains("panicked") {
            // The file header and its copy both damaged (or the old formats' header, which has
            // no copy): a clear error naming it, nothing to write.
            continue;
        }
        assert!(matches!(o.status.code(), Some(0 | 1)), "{what}: exit {:?}: {e}", o.status.code());
        assert!(!e.contains("FAILED") && !e.contains("panicked"), "{what}: {e}");
        assert_outputs_valid(&out, &what);
        std::fs::remove_dir_all(&out).unwrap();
    }
}

/// Iterations: `XPUPROF_FUZZ_ITERS`, default small enough for CI.
fn iterations(default: usize) -> usize {
    std::env::var("XPUPROF_FUZZ_ITERS").ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

#[test]
fn fuzz_report_of_damaged_scripted_and_cuda_archives() {
    let dir = tempfile::tempdir().unwrap();
    let mut seeds = vec![std::fs::read(scripted_archive(&dir.path().join("scripted"))).unwrap()];
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/model/archive/trace.xpa");
    seeds.push(std::fs::read(fixture).unwrap());
    for a in cuda_archives(dir.path()) {
        seeds.push(std::fs::read(a).unwrap());
    }
    fuzz_report(&seeds, iterations(60), 11);
}
