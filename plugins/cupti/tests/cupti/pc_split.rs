//! Which launch a kernel's PC samples came from, on a stream captured on the H200
//! (`tests/fixtures/pc_split/stream.bin`, `scripts/gpu/parts/pcsampling.sh`): `pc_split.cu`
//! launches one kernel, `mixed`, ten times from `memory_phase` (a pointer chase: its MEMORY
//! line) and then ten times from `math_phase` (an FMA chain: its MATH line). CUPTI's continuous
//! collection names no launch per sample, and samples come late and in batches: this capture
//! (CUPTI's default period, 2^11 cycles) came in two, the second holding the memory phase's last
//! 18% of samples and all of the math phase's. The outputs lay a kernel's samples, in fetch
//! order, over its device work in start order by device time, and within a batch laid over
//! both launchers give each instruction seen under one launcher alone to it first
//! (`xpuprof_toolbox::shares::affinity`). Here the decoded samples and kernel records of the
//! real run go through that split, each kernel's launcher named from its launch stack with the
//! program's symbols (`pc_split.syms`): each designed line must land under its own phase (by
//! device time alone: 88% and 64%).

use std::collections::HashMap;
use std::path::PathBuf;

use xpuprof_sdk::model::*;
use xpuprof_toolbox::shares::affinity::assign;
use xpuprof_toolbox::shares::launches::{LaunchSpans, SpanCounts};

use crate::pc_replay::decode;

/// A file of capture `capture` (a folder under `tests/fixtures/pc_split`, "" the first).
fn fixture(capture: &str, name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pc_split").join(capture).join(name)
}

/// `(address, size, name)` of the program's functions (`nm -C -S --defined-only`).
fn symbols(capture: &str) -> Vec<(u64, u64, String)> {
    let text = std::fs::read_to_string(fixture(capture, "pc_split.syms")).expect("symbols");
    text.lines()
        .filter_map(|l| {
            let mut it = l.splitn(4, ' ');
            let (a, sz, _, n) = (it.next()?, it.next()?, it.next()?, it.next()?);
            Some((u64::from_str_radix(a, 16).ok()?, u64::from_str_radix(sz, 16).ok()?, n.to_owned()))
        })
        .collect()
}

/// The lines of `pc_split.cu` marked `// MEMORY` and `// MATH`, with the phase each belongs to.
fn designed_lines() -> HashMap<u32, &'static str> {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/workloads/pc_split.cu");
    let text = std::fs::read_to_string(src).expect("pc_split.cu");
    let mut m = HashMap::new();
    for (i, l) in text.lines().enumerate() {
        if l.trim_end().ends_with("// MEMORY") {
            m.insert(i as u32 + 1, "memory_phase");
        } else if l.trim_end().ends_with("// MATH") {
            m.insert(i as u32 + 1, "math_phase");
        }
    }
    assert_eq!(m.len(), 2, "pc_split.cu marks one MEMORY and one MATH line");
    m
}

/// The phase whose function is on a launch stack, from the frames in the program's module.
fn phase(records: &[Record], syms: &[(u64, u64, String)]) -> HashMap<StackId, &'static str> {
    let mut frames = HashMap::new();
    let mut out = HashMap::new();
    for r in records {
        match r {
            Record::Frame(f) => {
                frames.insert(f.id, f.address);
            }
            Record::Stack(s) => {
                let named = s.frames.iter().filter_map(|f| frames.get(f)).find_map(|&a| {
                    let (_, _, n) = syms.iter().find(|(s, sz, _)| a >= *s && a < s + (*sz).max(1))?;
                    ["memory_phase", "math_phase"].into_iter().find(|p| n.contains(p))
                });
                if let Some(p) = named {
                    out.insert(s.id, p);
                }
            }
            _ => {}
        }
    }
    out
}

#[test]
fn captured_samples_go_under_the_phase_that_ran_them() {
    // CUPTI's default period (2^11 cycles): two batches, the second mixing both phases.
    check("");
}

#[test]
fn captured_samples_at_the_default_period_go_under_the_phase_that_ran_them() {
    // xpuprof's default period (2^16 cycles), second round: 596 k samples in three fetches.
    check("period16");
}

fn check(capture: &str) {
    let stream = std::fs::read(fixture(capture, "stream.bin")).expect("fixture stream");
    let records = decode(&stream);
    let phases = phase(&records, &symbols(capture));
    let sites: HashMap<u64, StackId> = records
        .iter()
        .filter_map(|r| if let Record::LaunchSite(s) = r { Some((s.correlation.id, s.stack)) } else { None })
        .collect();
    let mut spans: LaunchSpans<StrId, &'static str> = LaunchSpans::default();
    let mut launched = HashMap::new();
    for r in &records {
        let Record::DeviceOp(o) = r else { continue };
        if o.kind != DeviceOpKind::Kernel {
            continue;
        }
        let stack = o.correlation.and_then(|c| sites.get(&c.id)).expect("every kernel has a launch site");
        let p = phases.get(stack).copied().expect("every launch stack names its phase");
        spans.add(o.name, &p, o.start, o.end);
        *launched.entry(p).or_insert(0) += 1;
    }
    assert_eq!(launched.get("memory_phase"), Some(&10), "{launched:?}");
    assert_eq!(launched.get("math_phase"), Some(&10), "{launched:?}");

    let lines = designed_lines();
    let mut samples: SpanCounts<(StrId, u32, StrId)> = SpanCounts::default();
    for r in &records {
        if let Record::DeviceSample(d) = r {
            samples.add((d.kernel, d.line, d.stall), d.start, d.end, d.count);
        }
    }
    let mut got: HashMap<(u32, &str), u64> = HashMap::new();
    for ((k, _), shares) in assign(&samples, &spans, |k| k.0) {
        if lines.contains_key(&k.1) {
            for (p, n) in shares {
                *got.entry((k.1, *p)).or_default() += n;
            }
        }
    }
    for (&line, &want) in &lines {
        let all: u64 = got.iter().filter(|((l, _), _)| *l == line).map(|(_, n)| n).sum();
        let under = got.get(&(line, want)).copied().unwrap_or(0);
        assert!(all > 1000, "{capture}: pc_split.cu:{line}: only {all} samples");
        assert!(
            under * 10 >= all * 9,
            "{capture}: pc_split.cu:{line}: {under} of {all} under {want}: {got:?}"
        );
    }
}
