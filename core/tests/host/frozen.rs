//! Frozen copies of the plugin kit's older interfaces against today's host
//! (`docs/stability.md`): C plugins compiled with the 0.3.0 C headers
//! (`tests/c-abi/frozen-0.3.0/`) pass today's conformance check and run a session, and a stream
//! an agent on the protocol-1 C agent kit wrote (`tests/agent-stream/protocol-1/`) is decoded
//! with its exact launch stack, and that agent, compiled against the `agent.h` of its time,
//! runs on today's kit. The Rust ABI's frozen SDK is tested in `abi.rs`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use super::cabi::repo;
use super::common::*;

fn frozen_c() -> PathBuf {
    repo().join("tests/c-abi/frozen-0.3.0")
}

/// Compiles the frozen example `source` against the frozen headers into `dir`, as its Makefile
/// of the time did.
fn compile_frozen(source: &str, lib: &str, dir: &Path) -> PathBuf {
    let out = dir.join(lib);
    let o = Command::new("cc")
        .args([
            "-std=c99",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-pedantic",
            "-fPIC",
            "-fvisibility=hidden",
            "-pthread",
        ])
        .arg("-I")
        .arg(frozen_c().join("include"))
        .args(["-shared", "-o"])
        .arg(&out)
        .arg(frozen_c().join(source))
        .output()
        .unwrap_or_else(|e| panic!("failed to run cc (install gcc: scripts/install-deps.sh): {e}"));
    assert!(o.status.success(), "cc {source} failed:\n{}", stderr(&o));
    out
}

fn xpuprof_alone(cwd: &Path, args: &[&str]) -> Output {
    Command::new(xpuprof())
        .args(args)
        .current_dir(cwd)
        .env_remove("XPUPROF_PLUGIN_PATH")
        .output()
        .expect("failed to run xpuprof")
}

#[test]
fn c_plugins_built_with_the_0_3_0_headers_pass_todays_check_and_run() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("plugins");
    std::fs::create_dir(&dir).unwrap();
    let source = compile_frozen("acme.c", "libxpuprof_plugin_acme.so", &dir);
    let sink = compile_frozen("kernel_csv.c", "libxpuprof_plugin_kernel_csv.so", &dir);
    for lib in [&source, &sink] {
        let o = xpuprof_alone(tmp.path(), &["check-plugin", lib.to_str().unwrap()]);
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "{out}\n{}", stderr(&o));
        assert!(out.contains("C ABI, header 0.3.0"), "the plugin says its header: {out}");
        assert!(out.contains("passes the conformance check (0 warnings)"), "{out}");
    }
    let out = tmp.path().join("out");
    let args = ["--plugin-dir", dir.to_str().unwrap(), "--source", "acme", "--sink", "kernel-csv"];
    let o = xpuprof_alone(
        tmp.path(),
        &[&args[..], &["-o", out.to_str().unwrap(), "--quiet", "--", "true"]].concat(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let csv = std::fs::read_to_string(out.join("kernels.csv")).unwrap();
    assert!(csv.contains("\"acme::gemm<float>\",5,"), "{csv}");
}

/// The JSON lines of `xpuprof decode-agent-dump FILE`.
fn decode_dump(file: &Path) -> (Vec<serde_json::Value>, String) {
    let o = xpuprof_alone(file.parent().unwrap(), &["decode-agent-dump", file.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    let lines =
        text.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect();
    (lines, stderr(&o))
}

#[test]
fn a_protocol_1_agent_stream_is_decoded_with_its_exact_launch_stack() {
    let dir = repo().join("tests/agent-stream/protocol-1");
    let expected = std::fs::read_to_string(dir.join("expected.txt")).unwrap();
    assert_eq!(expected.lines().next(), Some("protocol 1"), "the frozen stream is protocol 1's");
    let functions: Vec<(&str, u64)> = expected
        .lines()
        .skip(1)
        .map(|l| {
            let (name, at) = l.split_once(' ').unwrap();
            (name, u64::from_str_radix(at.trim_start_matches("0x"), 16).unwrap())
        })
        .collect();
    let (lines, summary) = decode_dump(&dir.join("stream.bin"));
    assert!(summary.contains("1 process(es), 0 refused"), "{summary}");
    let of = |kind: &'static str| lines.iter().filter(move |l| l["record"] == kind);
    let sites: Vec<_> = of("LaunchSite").collect();
    let ids: Vec<u64> = sites.iter().map(|s| s["correlation"]["id"].as_u64().unwrap()).collect();
    assert_eq!(ids, [1, 2, 3], "three launches");
    let stack = sites[0]["stack"].as_u64().unwrap();
    assert!(stack != 0 && sites.iter().all(|s| s["stack"] == stack), "one stack, named by every launch");
    let frames = of("Stack").find(|s| s["id"] == stack).unwrap()["frames"].as_array().unwrap().clone();
    let frame = |id: &serde_json::Value| of("Frame").find(|f| f["id"] == *id).unwrap();
    // The runtime's and the agent's frames are cut: the stack starts in the application's
    // inner, then its callers, each a file offset inside its function (256 bytes at most).
    let app = frame(&frames[0])["module"].clone();
    for (i, (name, start)) in functions.iter().enumerate() {
        let f = frame(&frames[i]);
        let at = f["address"].as_u64().unwrap();
        assert_eq!((f["kind"].as_str(), &f["module"]), (Some("FileOffset"), &app), "frame {i}: {f}");
        assert!((*start..start + 256).contains(&at), "frame {i} at {at:#x} is not in {name} ({start:#x})");
    }
}

/// The SDK's reader (`xpuprof_sdk::wire::stream`, what a third-party source decodes with) reads
/// the same protocol-1 stream: its hello, module map, one 7-frame stack named by three launches,
/// and its bye, fed in small reads as a socket delivers them.
#[test]
fn the_stream_reader_reads_the_protocol_1_stream_in_small_reads() {
    use xpuprof_wire::launches::Entry;
    use xpuprof_wire::stream::{AgentMessage, StreamReader};

    let bytes = std::fs::read(repo().join("tests/agent-stream/protocol-1/stream.bin")).unwrap();
    let mut reader = StreamReader::new();
    let (mut stacks, mut launches, mut seen) = (Vec::new(), Vec::new(), Vec::new());
    for chunk in bytes.chunks(7) {
        reader.push(chunk);
        while let Some(m) = reader.next_message() {
            match m.unwrap() {
                AgentMessage::Hello(h) => seen.push(format!("hello {}", h.protocol)),
                AgentMessage::Modules(maps) => {
                    seen.push(format!("modules {}", maps.iter().any(|m| m.path.ends_with("/app"))))
                }
                AgentMessage::Launches { entries, .. } => {
                    for e in entries {
                        match e {
                            Entry::Stack { hash, frames } => stacks.push((hash, frames.len())),
                            Entry::Launch(l) => launches.push((l.correlation, l.stack)),
                        }
                    }
                }
                AgentMessage::Bye { launches, stacks } => seen.push(format!("bye {launches} {stacks}")),
                other => seen.push(format!("{other:?}")),
            }
        }
    }
    assert_eq!(reader.pending(), 0, "the stream ends on a message boundary");
    assert_eq!(seen, ["hello 1", "modules true", "bye 3 1"]);
    assert_eq!(stacks.len(), 1);
    let (hash, frames) = stacks[0];
    assert_eq!(frames, 7, "inner, middle, outer, main and the three start frames below main");
    assert_eq!(launches, [(1, hash), (2, hash), (3, hash)]);
}

/// The agent that wrote the protocol-1 stream, compiled as it was against the `agent.h` of its
/// time (`tests/agent-stream/protocol-1/agent/`) and linked with today's `libxpuprof_agent.so`:
/// it runs, and today's kit sends today's protocol with the exact launch stack (the agent kit's
/// C ABI holds for agents built with an older header).
#[test]
fn an_agent_built_with_the_older_agent_header_runs_on_todays_kit() {
    use xpuprof_wire::launches::Entry;
    use xpuprof_wire::stream::{call_site, AgentMessage, StreamReader};

    let src = repo().join("tests/agent-stream/protocol-1/agent");
    let kit = plugin_dir();
    assert!(kit.join("libxpuprof_agent.so").is_file(), "run `cargo build --workspace` before the tests");
    let tmp = tempfile::tempdir().unwrap();
    let (dir, dump) = (tmp.path(), tmp.path().join("dump"));
    std::fs::create_dir(&dump).unwrap();
    let cc = |args: &[&str]| {
        let o = Command::new("cc")
            .args(["-O2", "-g", "-std=c11", "-Wall", "-Wextra", "-Werror", "-fno-omit-frame-pointer"])
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap_or_else(|e| panic!("failed to run cc (install gcc: scripts/install-deps.sh): {e}"));
        assert!(o.status.success(), "cc {args:?} failed:\n{}", stderr(&o));
    };
    let s = |f: &str| src.join(f).display().to_string();
    let (include, kit) = (format!("-I{}", src.join("include").display()), kit.display().to_string());
    cc(&["-fPIC", "-shared", "-o", "libacme.so", &s("acme.c")]);
    let rpath = format!("-Wl,-rpath,{kit}");
    let libdir = format!("-L{kit}");
    cc(&["-fPIC", "-shared", &include, "-o", "libacme_agent.so", &s("acme_agent.c"), "-L.", "-lacme"]
        .iter()
        .copied()
        .chain([libdir.as_str(), "-lxpuprof_agent", "-Wl,-rpath,$ORIGIN", rpath.as_str()])
        .collect::<Vec<_>>());
    cc(&["-o", "app", &s("app.c"), "-L.", "-lacme", "-Wl,-rpath,$ORIGIN"]);
    let run = Command::new(dir.join("app"))
        .current_dir(dir)
        .env("ACME_XPUPROF_DUMP", &dump)
        .env("LD_PRELOAD", dir.join("libacme_agent.so"))
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", stderr(&run));
    let printed = String::from_utf8_lossy(&run.stdout).into_owned();
    let functions: Vec<(&str, u64)> = printed
        .lines()
        .map(|l| {
            let (name, at) = l.split_once(' ').unwrap();
            (name, u64::from_str_radix(at.trim_start_matches("0x"), 16).unwrap())
        })
        .collect();

    let file = std::fs::read_dir(&dump).unwrap().next().expect("the agent wrote its dump").unwrap().path();
    let mut reader = StreamReader::new();
    reader.push(&std::fs::read(file).unwrap());
    let (mut maps, mut stacks, mut launches, mut bye) = (Vec::new(), Vec::new(), 0, false);
    while let Some(m) = reader.next_message() {
        match m.unwrap() {
            AgentMessage::Modules(m) => maps = m,
            AgentMessage::Launches { entries, .. } => {
                for e in entries {
                    match e {
                        Entry::Stack { frames, .. } => stacks.push(frames),
                        Entry::Launch(_) => launches += 1,
                    }
                }
            }
            AgentMessage::Bye { .. } => bye = true,
            _ => {}
        }
    }
    assert_eq!(reader.hello().map(|h| h.protocol), Some(xpuprof_wire::PROTOCOL), "today's kit speaks");
    assert!(
        bye && launches == 3 && stacks.len() == 1,
        "bye {bye}, {launches} launches, {} stacks",
        stacks.len()
    );
    // Frame i lies in function i (the runtime's and the agent's frames cut), in the executable.
    let app = std::fs::canonicalize(dir.join("app")).unwrap();
    for (i, (name, start)) in functions.iter().enumerate() {
        let ra = stacks[0][i];
        let (m, _) = call_site(&maps, ra).unwrap_or_else(|| panic!("frame {i} ({ra:#x}) is in no module"));
        assert_eq!(std::fs::canonicalize(&m.path).unwrap(), app, "frame {i}");
        assert!(
            (*start..start + 256).contains(&(ra - 1)),
            "frame {i} at {ra:#x} is not in {name} ({start:#x})"
        );
    }
}
