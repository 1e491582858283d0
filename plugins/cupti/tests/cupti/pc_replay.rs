//! PC sampling, end to end without a GPU: a stream the agent wrote on the GPU machine
//! (`tests/fixtures/pc_sampling/stream.bin`, captured on an H200 by
//! `scripts/gpu/parts/pcsampling.sh` from `tests/workloads/pc_stalls.cu` built with `-lineinfo`;
//! it carries the program's cubin) through the real decoder, whose line tables resolve each
//! sampled instruction to its source line, checked against nvdisasm's own line table of the same
//! cubin (`pc_stalls.lines`); each kernel's designed stall and hot line; the folded PC view; and
//! the same view after the records went through the native archive and were replayed
//! (identical).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use xpuprof_archive::{Meta, Writer};
use xpuprof_fold::{FoldedBuilder, FoldedOptions};
use xpuprof_plugin_cupti::Decoder;
use xpuprof_sdk::model::*;
use xpuprof_sdk::{codec, Emitter, Logger};
use xpuprof_toolbox::agent_host::StreamDecoder;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests").join(name)
}

/// The records of a stream, fed in uneven pieces as a socket delivers them.
pub(crate) fn decode(stream: &[u8]) -> Vec<Record> {
    decode_with(stream, None)
}

/// [`decode`], the sampled cubins disassembled by `nvdisasm`.
fn decode_with(stream: &[u8], nvdisasm: Option<PathBuf>) -> Vec<Record> {
    let mut dec = Decoder::new(Logger::stderr());
    if nvdisasm.is_some() {
        dec.disassemble_with(nvdisasm);
    }
    let mut out = Emitter::detached();
    let mut pending = Vec::new();
    for chunk in stream.chunks(777) {
        pending.extend_from_slice(chunk);
        let used = dec.feed(1, &pending, &mut out);
        pending.drain(..used);
    }
    assert!(pending.is_empty(), "the stream ends inside a message");
    dec.finish(&mut out);
    codec::decode_all(&out.take_buffer()).expect("decodable records")
}

/// The PC view's lines of `records`.
pub(crate) fn pc_lines(records: &[Record]) -> Vec<(String, u64)> {
    let mut b = FoldedBuilder::new(FoldedOptions::default());
    for r in records {
        b.add(r);
    }
    b.fold_pc().lines
}

/// `records` written to a native archive in `dir` and replayed.
pub(crate) fn through_archive(dir: &Path, records: &[Record]) -> Vec<Record> {
    let mut w = Writer::create(&dir.join("archive"), &Meta::default()).expect("archive");
    for batch in records.chunks(100) {
        for r in batch {
            w.write(r).expect("write");
        }
        w.end_batch().expect("batch");
    }
    w.finish().expect("finish");
    let mut reader = xpuprof_archive::open(dir).expect("open");
    let mut got = Vec::new();
    let stats = reader.replay_records(&mut |batch| got.append(batch)).expect("replay");
    assert!(stats.corruption.is_none(), "{:?}", stats.corruption);
    got
}

#[test]
fn the_pc_view_replays_identically_through_the_archive() {
    use xpuprof_plugin_cupti::cuda_wire::pc_sampling as pc;
    use xpuprof_plugin_cupti::wire::{self, Hello};
    let mut s = Vec::new();
    Hello::new(130_000, wire::FLAG_MONOTONIC_TIMESTAMPS).encode(&mut s);
    pc::put_stall_reasons(&mut s, 1, 0, &[(1, "smsp__pcsamp_warps_issue_stalled_wait".to_owned())]);
    for t in [100, 200] {
        let mut w = pc::SamplesWriter::new(&pc::FetchHeader { time: t, context: 1, ..Default::default() });
        w.pc((7, 0x10, 0, 0), b"k", &[(1, 3)]);
        w.end(&mut s);
    }
    let records = decode(&s);
    let before = pc_lines(&records);
    assert_eq!(before, [("[unknown launch site];[GPU_Kernel]k;[no source line];[stall]wait".to_owned(), 6)]);
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(pc_lines(&through_archive(dir.path(), &records)), before);
}

fn text(records: &[Record]) -> HashMap<StrId, String> {
    records
        .iter()
        .filter_map(|r| if let Record::Str(s) = r { Some((s.id, s.text.clone())) } else { None })
        .collect()
}

/// nvdisasm's line table of the program (`function offset file line`).
fn reference() -> HashMap<(String, u64), (String, u32)> {
    let t = std::fs::read_to_string(fixture("fixtures/pc_sampling/pc_stalls.lines")).expect("line map");
    t.lines()
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            let offset = u64::from_str_radix(f[1].trim_start_matches("0x"), 16).expect("offset");
            ((f[0].to_owned(), offset), (f[2].to_owned(), f[3].parse().expect("line")))
        })
        .collect()
}

/// The lines of the workload marked `// HOT: <kernel>`.
fn hot_lines() -> HashMap<String, u32> {
    let src = std::fs::read_to_string(fixture("workloads/pc_stalls.cu")).expect("workload");
    src.lines()
        .enumerate()
        .filter_map(|(i, l)| l.split("// HOT: ").nth(1).map(|k| (k.trim().to_owned(), i as u32 + 1)))
        .collect()
}

/// A kernel's samples by stall reason and by line.
type Tally = (HashMap<String, u64>, HashMap<u32, u64>);

/// The key with the most samples.
fn top<K: Clone + Ord>(m: &HashMap<K, u64>) -> K {
    m.iter().map(|(k, n)| (*n, k.clone())).max().map(|(_, k)| k).expect("samples")
}

#[test]
fn captured_samples_resolve_to_nvdisasm_lines_and_the_designed_stalls() {
    let stream = std::fs::read(fixture("fixtures/pc_sampling/stream.bin")).expect("fixture stream");
    let records = decode(&stream);
    let strs = text(&records);
    let reference = reference();
    let mut per: HashMap<&str, Tally> = HashMap::new();
    let mut checked = 0;
    for r in &records {
        let Record::DeviceSample(d) = r else { continue };
        let kernel = strs[&d.kernel].as_str();
        match reference.get(&(kernel.to_owned(), d.pc_offset)) {
            Some((file, line)) => {
                assert_eq!(
                    d.line, *line,
                    "{kernel}+{:#x}: the host's line differs from nvdisasm's",
                    d.pc_offset
                );
                assert!(
                    strs[&d.file].ends_with(&format!("/{file}")),
                    "{kernel}+{:#x}: {}",
                    d.pc_offset,
                    strs[&d.file]
                );
                checked += 1;
            }
            None => panic!("{kernel}+{:#x}: sampled where nvdisasm shows no instruction", d.pc_offset),
        }
        let short = if kernel.contains("chase") { "chase" } else { "chain" };
        let e = per.entry(short).or_default();
        *e.0.entry(strs[&d.stall].clone()).or_default() += d.count;
        *e.1.entry(d.line).or_default() += d.count;
    }
    assert!(checked > 50, "only {checked} sampled instructions");
    let hot = hot_lines();
    for (kernel, want_reason) in [("chase", "long_scoreboard"), ("chain", "wait")] {
        let (reasons, lines) = &per[kernel];
        assert_eq!(top(reasons).as_str(), want_reason, "{kernel}: {reasons:?}");
        assert_eq!(top(lines), hot[kernel], "{kernel}: {lines:?}");
    }
    // Below each kernel's frame in the PC view (its launch stack comes from the host's
    // correlator, which this decoder-only test does not run; the GPU part checks it).
    let lines = pc_lines(&records);
    for (kernel, reason) in [("chase", "long_scoreboard"), ("chain", "wait")] {
        let tail = format!(";pc_stalls.cu:{};[stall]{reason}", hot[kernel]);
        let found = lines.iter().any(|(s, _)| {
            s.ends_with(&tail)
                && s.rsplit(';').nth(2).is_some_and(|k| k.starts_with("[GPU_Kernel]") && k.contains(kernel))
        });
        assert!(found, "no [GPU_Kernel]…{kernel}…{tail} in {lines:?}");
    }
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(pc_lines(&through_archive(dir.path(), &records)), lines, "replayed identically");
}

/// nvdisasm's listing of the fixture's cubin, read here on its own: (kernel, offset) → text.
fn listing() -> HashMap<(String, u64), String> {
    let t = std::fs::read_to_string(fixture("fixtures/pc_sampling/pc_stalls.sass.txt")).expect("listing");
    let mut kernel = String::new();
    let mut out = HashMap::new();
    for l in t.lines() {
        if let Some(k) = l.trim().strip_prefix(".section\t.text.") {
            kernel = k.split(',').next().unwrap_or("").to_owned();
        } else if let Some((hex, rest)) = l.trim().strip_prefix("/*").and_then(|r| r.split_once("*/")) {
            let Ok(offset) = u64::from_str_radix(hex, 16) else { continue };
            let text = rest.trim().trim_end_matches(';').split_whitespace().collect::<Vec<_>>().join(" ");
            out.insert((kernel.clone(), offset), text);
        }
    }
    out
}

#[test]
fn sampled_instructions_carry_their_sass_and_the_archive_keeps_it() {
    // The double: nvdisasm's listing of the cubin the stream carries, captured on the H200.
    let stream = std::fs::read(fixture("fixtures/pc_sampling/stream.bin")).expect("fixture stream");
    let records = decode_with(&stream, Some(fixture("doubles/nvdisasm")));
    let strs = text(&records);
    let listing = listing();
    assert!(listing.len() > 100, "the fixture's listing has {} instructions", listing.len());
    let mut hottest: HashMap<&str, (u64, String, u64)> = HashMap::new();
    let mut by_pc: HashMap<(String, u64), u64> = HashMap::new();
    for r in &records {
        let Record::DeviceSample(d) = r else { continue };
        let kernel = strs[&d.kernel].clone();
        let want = &listing[&(kernel.clone(), d.pc_offset)];
        assert_eq!(&strs[&d.instruction], want, "{kernel}+{:#x}", d.pc_offset);
        assert_eq!((d.call_file, d.call_line), (StrId::NONE, 0), "no inlined code in pc_stalls");
        *by_pc.entry((kernel, d.pc_offset)).or_default() += d.count;
    }
    for ((kernel, offset), n) in &by_pc {
        let short = if kernel.contains("chase") { "chase" } else { "chain" };
        let e = hottest.entry(short).or_default();
        if *n > e.0 {
            *e = (*n, kernel.clone(), *offset);
        }
    }
    // The chase's warps wait at the instruction that uses the value its global load (the
    // instruction before) brings; the chain's at its dependent multiply-add.
    let at = |k: &str, o: u64| listing[&(k.to_owned(), o)].clone();
    let (_, k, o) = &hottest["chase"];
    assert!(
        at(k, o - 0x10).starts_with("LDG") && at(k, *o).starts_with("IMAD"),
        "chase's hottest instruction {:#x} {:?}, after {:?}",
        o,
        at(k, *o),
        at(k, o - 0x10)
    );
    let (_, k, o) = &hottest["chain"];
    assert!(at(k, *o).starts_with("FFMA"), "chain's hottest instruction: {:?}", at(k, *o));
    // Replayed elsewhere from the archive alone (no cubin, no disassembler): the same lines and
    // instruction texts.
    let dir = tempfile::tempdir().unwrap();
    let replayed = through_archive(dir.path(), &records);
    let samples = |rs: &[Record]| -> Vec<(String, u64, String, u32, String, u64)> {
        let strs = text(rs);
        let name = |id: StrId| strs.get(&id).cloned().unwrap_or_default();
        rs.iter()
            .filter_map(|r| match r {
                Record::DeviceSample(d) => {
                    Some((name(d.kernel), d.pc_offset, name(d.file), d.line, name(d.instruction), d.count))
                }
                _ => None,
            })
            .collect()
    };
    let (before, after) = (samples(&records), samples(&replayed));
    assert!(before.iter().all(|s| s.3 != 0 && !s.4.is_empty()), "every sample has its line and SASS");
    assert_eq!(after, before);
}

#[test]
fn without_a_disassembler_the_samples_have_no_sass_and_the_run_says_why() {
    let stream = std::fs::read(fixture("fixtures/pc_sampling/stream.bin")).expect("fixture stream");
    let mut dec = Decoder::new(Logger::stderr());
    dec.disassemble_with(None);
    let mut out = Emitter::detached();
    let used = dec.feed(1, &stream, &mut out);
    assert_eq!(used, stream.len());
    let line = dec.pc_report().expect("an end-of-run line");
    assert!(line.contains("nvdisasm was not found"), "{line}");
    dec.finish(&mut out);
    let records = codec::decode_all(&out.take_buffer()).expect("records");
    assert!(records.iter().any(|r| matches!(r, Record::DeviceSample(_))));
    assert!(records.iter().all(|r| !matches!(r, Record::DeviceSample(d) if d.instruction != StrId::NONE)));
}

#[test]
fn a_triton_kernels_samples_carry_their_sass_and_lines() {
    // pc_triton.py's Triton kernel under the agent on the H200 (its stream carries the cubin
    // Triton built), disassembled by the double printing nvdisasm's listing of that cubin.
    let stream = std::fs::read(fixture("fixtures/pc_sampling/triton_stream.bin")).expect("fixture stream");
    let records = decode_with(&stream, Some(fixture("doubles/nvdisasm")));
    let strs = text(&records);
    let (mut all, mut with_text, mut hot) = (0, 0, 0);
    let src =
        std::fs::read_to_string(fixture("../../../tests/workloads/torch/pc_triton.py")).expect("workload");
    let hot_line = src.lines().position(|l| l.trim_end().ends_with("# HOT")).expect("HOT line") as u32 + 1;
    for r in &records {
        let Record::DeviceSample(d) = r else { continue };
        all += d.count;
        with_text += if d.instruction != StrId::NONE { d.count } else { 0 };
        if d.line == hot_line && strs[&d.file].ends_with("/pc_triton.py") {
            hot += d.count;
        }
    }
    assert!(all > 1_000_000, "{all} samples");
    assert_eq!(with_text, all, "every sample has its instruction's text");
    assert!(hot * 2 > all, "{hot} of {all} samples on the helper's hot line {hot_line}");
}
