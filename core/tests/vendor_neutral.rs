//! The core and the sinks know no backend: every vendor fact (machine checks, default sources,
//! display names) comes from the backend's own plugin, so adding a backend touches neither.
//! This test reads their sources and fails on any backend's name, in code or in comments.

use std::path::{Path, PathBuf};

/// Backend names that may appear anywhere inside a word (`cudaMalloc`, `libxpuprof_cupti_agent`).
const ANYWHERE: &[&str] = &[
    "cupti",
    "cuda",
    "nvidia",
    "nvtx",
    "rocm",
    "roctracer",
    "rocprof",
    "roctx",
    "amdgpu",
    "levelzero",
    "level zero",
    "level-zero",
    "level_zero",
    "libze",
    "oneapi",
    "ebpf",
];

/// Backend names that are only names as whole words (`hip` but not `ship`, `bpf` in `CAP_BPF`).
const WORDS: &[&str] = &["hip", "bpf", "ze", "hsa", "kfd", "sycl", "cudnn", "nccl"];

/// API prefixes of vendor libraries, followed by a capital (`cuLaunchKernel`, `zeInit`,
/// `hipMalloc`, `hsaKmt`).
const API_PREFIXES: &[&str] = &["cu", "ze", "zet", "zel", "hip", "hsa"];

/// Matches that cannot be avoided, as (file relative to the repository, text of the line).
/// Keep it empty: reword a comment or use the test backend instead.
const ALLOWED: &[(&str, &str)] = &[];

/// The folders that must stay backend-neutral.
const NEUTRAL: &[&str] = &[
    "core/src",
    "plugins/folded/src",
    "plugins/chrome/src",
    "plugins/archive/src",
    "plugins/flamegraph/src",
    "plugins/summary/src",
    "plugins/perfetto/src",
    "plugins/pprof/src",
    "plugins/dump/src",
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("failed to read {}: {e}", dir.display())) {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The backend names on `line`.
fn names_in(line: &str) -> Vec<String> {
    let lower = line.to_ascii_lowercase();
    let mut found: Vec<String> =
        ANYWHERE.iter().filter(|n| lower.contains(*n)).map(|n| n.to_string()).collect();
    for word in line.split(|c: char| !c.is_ascii_alphanumeric()) {
        let w = word.to_ascii_lowercase();
        if WORDS.contains(&w.as_str()) {
            found.push(w);
        }
        // `cuLaunchKernel`: a prefix, then a capital after a lowercase one.
        for p in API_PREFIXES {
            if word.starts_with(p) && word[p.len()..].starts_with(|c: char| c.is_ascii_uppercase()) {
                found.push(word.to_owned());
            }
        }
    }
    found
}

#[test]
fn names_in_finds_backends_and_spares_common_words() {
    assert_eq!(names_in("a CUDA graph"), ["cuda"]);
    assert_eq!(names_in("cuLaunchKernel and zeInit"), ["cuLaunchKernel", "zeInit"]);
    assert_eq!(names_in("grant CAP_BPF"), ["bpf"]);
    assert_eq!(names_in("the Level Zero loader"), ["level zero"]);
    assert!(names_in("ownership of the zeroed cuboid; size_t; customer; hipster").is_empty());
}

#[test]
fn core_and_sinks_name_no_backend() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for dir in NEUTRAL {
        rust_files(&root.join(dir), &mut files);
    }
    files.sort();
    assert!(files.len() > 20, "found only {} files under {NEUTRAL:?}", files.len());
    let mut hits = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(&root).unwrap().display().to_string();
        let text = std::fs::read_to_string(f).unwrap();
        for (i, line) in text.lines().enumerate() {
            let names = names_in(line);
            if !names.is_empty() && !ALLOWED.contains(&(rel.as_str(), line.trim())) {
                hits.push(format!("{rel}:{}: {} ({})", i + 1, line.trim(), names.join(", ")));
            }
        }
    }
    assert!(
        hits.is_empty(),
        "the core and the sinks must not name a backend (its facts belong in its plugin: machine \
         checks, default sources, backend names); found {}:\n{}",
        hits.len(),
        hits.join("\n")
    );
}
