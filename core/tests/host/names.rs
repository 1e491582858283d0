//! Names for people are decided once, by the host: a kernel's mangled name reaches every sink
//! with its demangled display text unless the top-level `demangle = false` says otherwise, live
//! and when an archive is replayed (under the switch of the report; the archive keeps the raw
//! name). Driven by a real H100 capture played into the `cupti` source.

use std::path::Path;
use std::process::Command;

use super::common::*;

/// The `basic` fixture's kernel, as CUDA reports it.
const MANGLED: &str = "_Z10add_kernelPfif";

fn fixtures() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../plugins/cupti/tests/fixtures"))
}

/// Runs `args` from `cwd` (whose `xpuprof.toml`, if any, applies) with the shipped plugins;
/// returns the folded profile written to `out`.
fn folded_from(cwd: &Path, out: &Path, args: &[&str]) -> String {
    let o = Command::new(xpuprof())
        .args(args)
        .current_dir(cwd)
        .env_remove("XPUPROF_PLUGIN_PATH")
        .output()
        .expect("failed to run xpuprof");
    assert!(o.status.success(), "xpuprof {args:?}: {}", stderr(&o));
    std::fs::read_to_string(out.join("profile.folded")).unwrap()
}

fn record(cwd: &Path, out: &Path) -> String {
    let (replay, stream) = (fixtures().join("replay.py"), fixtures().join("basic/stream.bin"));
    let (replay, stream, o) = (replay.to_str().unwrap(), stream.to_str().unwrap(), out.to_str().unwrap());
    let args = ["--source", "cupti", "--sink", "archive,folded", "-o", o, "--", "python3", replay, stream];
    folded_from(cwd, out, &args)
}

fn report(cwd: &Path, recorded: &Path, out: &Path) -> String {
    let args = ["report", recorded.to_str().unwrap(), "--sink", "folded", "-o", out.to_str().unwrap()];
    folded_from(cwd, out, &args)
}

fn shows_demangled(folded: &str) -> bool {
    folded.contains("[GPU_Kernel]add_kernel") && !folded.contains(MANGLED)
}

#[test]
fn the_one_demangle_switch_decides_live_and_on_replay() {
    require_plugin("cupti");
    let dir = tempfile::tempdir().unwrap();
    let (on, off) = (dir.path().join("on"), dir.path().join("off"));
    std::fs::create_dir_all(&off).unwrap();
    std::fs::write(off.join("xpuprof.toml"), "demangle = false\n").unwrap();

    let live_on = record(dir.path(), &on.join("out"));
    assert!(shows_demangled(&live_on), "default: demangled\n{live_on}");
    let live_off = record(&off, &off.join("out"));
    assert!(live_off.contains(&format!("[GPU_Kernel]{MANGLED}")), "demangle = false: raw\n{live_off}");

    // Replays follow the report's switch, whatever the recording's was.
    let replay_off = report(&off, &on.join("out"), &off.join("replay"));
    assert!(replay_off.contains(&format!("[GPU_Kernel]{MANGLED}")), "{replay_off}");
    let replay_on = report(dir.path(), &off.join("out"), &on.join("replay"));
    assert!(shows_demangled(&replay_on), "{replay_on}");
    assert_eq!(replay_on, live_on, "the replay of either recording shows what a live run shows");
}
