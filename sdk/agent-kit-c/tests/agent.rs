//! The C agent kit end to end: a C program built against `xpuprof/agent.h` and
//! `libxpuprof_agent.so` records launches from nested functions; the host end of the socket
//! reads a hello, the module map, launch entries whose stacks walk up through the program's
//! own functions, the program's raw message and a bye.

use std::io::Read;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::Command;

use xpuprof_agent_kit::wire;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The agent library cargo built for this test (`target/<profile>/libxpuprof_agent.so`).
/// `cargo test` leaves it in `deps/`, `cargo build` in the profile directory.
fn agent_lib_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap().to_path_buf();
    [deps.clone(), deps.parent().unwrap().to_path_buf()]
        .into_iter()
        .find(|d| d.join("libxpuprof_agent.so").exists())
        .unwrap_or_else(|| panic!("libxpuprof_agent.so is missing next to {}", deps.display()))
}

fn build_app(out: &Path) -> PathBuf {
    let exe = out.join("app");
    let lib = agent_lib_dir();
    let o = Command::new("cc")
        .args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-O1", "-fno-omit-frame-pointer", "-I"])
        .arg(repo().join("sdk/include"))
        .arg(repo().join("sdk/agent-kit-c/tests/app.c"))
        .arg("-L")
        .arg(&lib)
        // DT_RPATH, searched before LD_LIBRARY_PATH (where cargo test puts target/debug, whose
        // libxpuprof_agent.so may be another build's): the library this test built is the one run.
        .arg(format!("-Wl,--disable-new-dtags,-rpath,{}", lib.display()))
        .args(["-lxpuprof_agent", "-o"])
        .arg(&exe)
        .output()
        .expect("run cc");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    exe
}

/// Stacks (by hash) and launches (api, correlation, stack hash) of every `MSG_LAUNCHES`, read
/// in the framing of the hello's `protocol`.
fn launches(
    payload: &[u8],
    protocol: u32,
    stacks: &mut Vec<(u64, Vec<u64>)>,
    calls: &mut Vec<(u32, u32, u64)>,
) {
    for e in wire::launches::parse(payload, protocol).1 {
        match e {
            wire::launches::Entry::Stack { hash, frames } => stacks.push((hash, frames)),
            wire::launches::Entry::Launch(l) => calls.push((l.api_id, l.correlation, l.stack)),
        }
    }
}

#[test]
fn a_c_agent_sends_launch_stacks_through_its_own_functions() {
    let dir = tempfile::tempdir().unwrap();
    let exe = build_app(dir.path());
    let sock = dir.path().join("host.sock");
    let listener = UnixListener::bind(&sock).unwrap();
    let child = Command::new(&exe)
        .env("ACME_SOCKET", &sock)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (mut conn, _) = listener.accept().unwrap();
    let mut stream = Vec::new();
    conn.read_to_end(&mut stream).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}: {}", out.status, String::from_utf8_lossy(&out.stderr));
    let addr = |name: &str| -> u64 {
        let text = String::from_utf8_lossy(&out.stdout);
        let line = text.lines().find(|l| l.starts_with(&format!("{name} "))).unwrap();
        u64::from_str_radix(line.split_once(" 0x").unwrap().1, 16).unwrap()
    };
    let (msgs, rest) = wire::split_messages(&stream);
    assert_eq!(rest, stream.len(), "the stream ends on a message boundary");
    let types: Vec<u8> = msgs.iter().map(|m| m.ty).collect();
    assert_eq!(types.first(), Some(&wire::MSG_HELLO));
    let hello = wire::Hello::decode(msgs[0].payload);
    hello.check().unwrap();
    assert_eq!(hello.protocol, wire::PROTOCOL, "the agent library of this build");
    assert!(hello.has(wire::FLAG_AGENT_STACKS));
    assert!(types.contains(&wire::MSG_MODULES) && types.last() == Some(&wire::MSG_BYE), "{types:?}");
    let raw: Vec<&[u8]> = msgs.iter().filter(|m| m.ty == wire::MSG_RECORDS).map(|m| m.payload).collect();
    assert_eq!(raw, [&[1u8, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12][..]]);
    let (mut stacks, mut calls) = (Vec::new(), Vec::new());
    for m in msgs.iter().filter(|m| m.ty == wire::MSG_LAUNCHES) {
        launches(m.payload, hello.protocol, &mut stacks, &mut calls);
    }
    assert_eq!(calls.iter().map(|c| (c.0, c.1)).collect::<Vec<_>>(), [(42, 1), (42, 2), (42, 3)]);
    assert_eq!(stacks.len(), 1, "one distinct stack, sent once: {stacks:?}");
    assert!(calls.iter().all(|c| c.2 == stacks[0].0), "every launch names it");
    // Innermost first: the hook's caller chain inner <- middle <- outer <- main, each return
    // address a little past its function's start.
    let frames = &stacks[0].1;
    let within = |a: u64, f: &str| a > addr(f) && a < addr(f) + 256;
    let at = frames
        .iter()
        .position(|&a| within(a, "inner"))
        .unwrap_or_else(|| panic!("no frame in inner: {frames:x?}"));
    for (i, f) in ["middle", "outer", "main"].iter().enumerate() {
        assert!(within(frames[at + 1 + i], f), "frame {} is not in {f}: {frames:x?}", at + 1 + i);
    }
}
