//! The decoder on a real JAX stream with the agent's annotation frames (issue 33):
//! `tests/fixtures/jax_init/stream.bin`, the agent's stream of `tests/workloads/jax/train.py`
//! with `annotations=1`, captured on the H200 by `scripts/gpu/parts/xla.sh` (see
//! `tests/fixtures/README.md`). The capture holds the program's start: JAX compiling and running
//! its small initialisation modules (random keys, the weights' scaling), up to where the agent
//! of that round crashed. What the profile must show holds on it: the launches XLA makes inside
//! an operation's range carry that operation's label as their innermost frame, the launches
//! made while compiling carry `[compile]` and the Python stack of the call that compiles, and
//! the host's own compile-time patterns add no second marker.

use std::collections::HashMap;
use std::path::PathBuf;

use xpuprof_plugin_cupti::Decoder;
use xpuprof_sdk::model::*;
use xpuprof_sdk::{codec, Emitter, Logger};
use xpuprof_toolbox::agent_host::{CompileFrames, StreamDecoder, COMPILE_MARKER};

/// The decoded stream: every launch site's named frames (Python frames and the agent's
/// labels, innermost first, native frames as `None`), and how many stacks the host marked.
struct Run {
    sites: Vec<Vec<Option<String>>>,
    labels: Vec<String>,
    host_marked: u64,
    /// Device operations replayed from a recording (a graph), and those without a known
    /// recording call.
    replayed: usize,
    replayed_unknown: usize,
    /// The recording call's stack (as `sites`) of each replayed matrix-multiply kernel.
    replayed_gemms: Vec<Vec<Option<String>>>,
}

fn load(patterns: &[&str]) -> Run {
    load_from("jax_init", patterns)
}

/// The decoded stream of fixture `name` (`tests/fixtures/<name>/stream.bin`).
fn load_from(name: &str, patterns: &[&str]) -> Run {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/{name}"));
    let bytes = match std::fs::read(dir.join("stream.bin")) {
        Ok(b) => b,
        Err(_) => {
            // A large capture is kept gzipped.
            let gz = std::fs::File::open(dir.join("stream.bin.gz")).expect("fixture stream");
            let mut b = Vec::new();
            std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(gz), &mut b).expect("gunzip");
            b
        }
    };
    let mut dec = Decoder::new(Logger::stderr());
    dec.kit.stacks.compile = CompileFrames::parse(patterns).unwrap();
    let mut out = Emitter::detached();
    let mut pending = Vec::new();
    for chunk in bytes.chunks(1000) {
        pending.extend_from_slice(chunk);
        let used = dec.feed(1, &pending, &mut out);
        pending.drain(..used);
    }
    assert!(pending.is_empty(), "the stream ends inside a message");
    let host_marked = dec.kit.stacks.compile_marked;
    dec.finish(&mut out);
    let records = codec::decode_all(&out.take_buffer()).expect("decodable records");
    let (mut strs, mut frames, mut stacks) = (HashMap::new(), HashMap::new(), HashMap::new());
    let mut sites = Vec::new();
    let (mut replayed, mut replayed_unknown) = (0, 0);
    let (mut site_of, mut gemm_calls) = (HashMap::new(), Vec::new());
    for r in &records {
        match r {
            Record::Str(s) => {
                strs.insert(s.id, s.text.clone());
            }
            Record::Frame(f) => {
                frames.insert(f.id, f.clone());
            }
            Record::Stack(s) => {
                stacks.insert(s.id, s.frames.clone());
            }
            Record::LaunchSite(s) => {
                sites.push(s.stack);
                site_of.insert(s.correlation.id, s.stack);
            }
            Record::DeviceOp(op) => {
                if let Some(sub) = op.submission.as_ref() {
                    replayed += 1;
                    replayed_unknown += usize::from(sub.record.is_none());
                    gemm_calls.extend(sub.record.map(|c| (op.name, c.id)));
                }
            }
            _ => {}
        }
    }
    let named = |f: &FrameId| {
        let f = &frames[f];
        (f.kind == FrameKind::Synthetic).then(|| strs[&f.name].clone())
    };
    let sites = sites.iter().map(|s| stacks[s].iter().map(named).collect()).collect();
    let is_gemm = |n: &StrId| strs.get(n).is_some_and(|k| k.contains("gemm"));
    let replayed_gemms = gemm_calls
        .iter()
        .filter(|(n, _)| is_gemm(n))
        .filter_map(|(_, c)| site_of.get(c))
        .map(|s| stacks[s].iter().map(named).collect())
        .collect();
    let mut labels: Vec<String> = strs.values().filter(|t| t.starts_with("[xla] ")).cloned().collect();
    labels.sort();
    Run { sites, labels, host_marked, replayed, replayed_unknown, replayed_gemms }
}

#[test]
fn launches_inside_an_xla_operation_carry_its_label_innermost() {
    let r = load(&[]);
    assert!(r.labels.len() >= 5, "XLA's modules and operations as labels: {:?}", r.labels);
    assert!(r.labels.iter().any(|l| l.contains("threefry")), "{:?}", r.labels);
    let labelled: Vec<&Vec<Option<String>>> =
        r.sites.iter().filter(|s| s.iter().flatten().any(|n| n.starts_with("[xla] "))).collect();
    assert!(labelled.len() >= 10, "launches of the initialisation modules: {}", labelled.len());
    for s in &labelled {
        let first = s[0].as_deref().unwrap_or("");
        assert!(first.starts_with("[xla] "), "the operation is the innermost frame: {s:?}");
        assert!(s.iter().flatten().any(|n| n.contains("train.py:")), "under the script's own line: {s:?}");
    }
}

#[test]
fn launches_made_while_compiling_are_compile_time_work_under_the_compiling_call() {
    let r = load(&[]);
    let compiling: Vec<&Vec<Option<String>>> =
        r.sites.iter().filter(|s| s.iter().flatten().any(|n| n == COMPILE_MARKER)).collect();
    assert!(compiling.len() >= 10, "{}", compiling.len());
    for s in &compiling {
        assert_eq!(s[0].as_deref(), Some(COMPILE_MARKER), "innermost: {s:?}");
        let names: Vec<&str> = s.iter().flatten().map(String::as_str).collect();
        assert!(names.iter().any(|n| n.starts_with("backend_compile")), "the compiling call: {names:?}");
        assert!(names.iter().any(|n| n.contains("train.py:")), "under the script's line: {names:?}");
        assert!(
            !names.iter().any(|n| n.starts_with("[xla] ")),
            "compile-time work is no operation: {names:?}"
        );
        assert_eq!(names.iter().filter(|n| **n == COMPILE_MARKER).count(), 1);
    }
    // The host's pattern for JAX's compiler module matches these stacks too, and adds nothing.
    let again = load(&["jax/_src/compiler.py:*"]);
    assert_eq!(again.host_marked, 0, "the agent marked them already");
    assert_eq!(again.sites, r.sites);
}

/// `tests/fixtures/jax_steps/`: the agent's stream of the whole `train.py --steps 3` run with
/// annotations, captured on the H200 by `scripts/gpu/parts/xla_quick.sh` once the agent read
/// NVTX payloads through checked reads and took the source line from the payload's
/// source-locations handle: the operations' labels name the script's own `# OP` lines.
#[test]
fn the_whole_jax_run_labels_operations_with_their_source_lines() {
    let r = load_from("jax_steps", &[]);
    // XLA's command buffers: every replayed operation under the call that recorded it.
    assert!(r.replayed >= 50, "the steps replay their command buffer: {}", r.replayed);
    assert_eq!(r.replayed_unknown, 0, "replayed operations without their recording call");
    let op_lines: Vec<u32> = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/jax_steps/ops.txt"),
    )
    .expect("ops.txt")
    .lines()
    .filter_map(|l| {
        let mut f = l.split_whitespace();
        let (n, kind) = (f.next()?.parse().ok()?, f.next()?);
        (kind == "OP").then_some(n)
    })
    .collect();
    let at_op = |l: &str| op_lines.iter().any(|n| l.ends_with(&format!("train.py:{n})")));
    let named: Vec<&String> = r.labels.iter().filter(|l| at_op(l)).collect();
    assert!(named.len() >= 3, "operations at the script's OP lines {op_lines:?}: {:?}", r.labels);
    // The launch sites of those operations: the label innermost, the script's frames above.
    let sites: Vec<&Vec<Option<String>>> =
        r.sites.iter().filter(|s| s.iter().flatten().any(|n| n.starts_with("[xla] ") && at_op(n))).collect();
    assert!(!sites.is_empty(), "launches inside the operations' ranges");
    for s in &sites {
        assert!(s[0].as_deref().is_some_and(|n| n.starts_with("[xla] ")), "innermost: {s:?}");
        let script =
            s.iter().flatten().filter(|n| n.contains("train.py:") && !n.starts_with("[xla] ")).count();
        assert!(script > 0, "under the script's own frames: {s:?}");
    }
}

/// `tests/fixtures/jax_cmdbuf/`: the agent's stream of `train.py --steps 3` at the script's own
/// sizes (batch 256, width 2048), captured on the H200 by `scripts/gpu/parts/xla.sh`: XLA's
/// command buffer holds the step's cuBLAS gemms as child graphs, whose nodes instantiation
/// flattens into the executable graph without telling CUPTI (on the H200, 505 of 2,424 replayed
/// operations of 100 steps had no recording call before the host counted the executable
/// graph's own nodes as the copies instantiation made). Every replayed operation sits under
/// the call that recorded it, the gemms under their capture with their operation's label.
#[test]
fn command_buffer_gemms_in_child_graphs_sit_under_their_capture() {
    let r = load_from("jax_cmdbuf", &[]);
    assert!(r.replayed >= 60, "three steps replay their command buffer: {}", r.replayed);
    assert_eq!(r.replayed_unknown, 0, "replayed operations without their recording call");
    let dot_lines: Vec<String> = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/jax_cmdbuf/ops.txt"),
    )
    .expect("ops.txt")
    .lines()
    .filter(|l| l.ends_with(" OP dot_general"))
    .map(|l| format!("train.py:{})", l.split(' ').next().unwrap_or("")))
    .collect();
    assert!(r.replayed_gemms.len() >= 15, "five gemms a step: {}", r.replayed_gemms.len());
    for s in &r.replayed_gemms {
        let label = s[0].as_deref().unwrap_or("");
        assert!(
            label.starts_with("[xla] ") && dot_lines.iter().any(|l| label.ends_with(l.as_str())),
            "a gemm's recording call inside its dot_general operation: {s:?}"
        );
    }
}
