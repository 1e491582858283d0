//! A plugin host as xpuprof 0.1.0 had it: built against the frozen SDK 0.1.0 and loading a
//! plugin the way xpuprof 0.1.0's loader did (`abi_stable`'s own checks, then the ABI version),
//! then running it through its whole lifecycle and decoding what it emitted with SDK 0.1.0's
//! codec. The ABI tests (`core/tests/host/abi.rs`) point it at today's plugins: an older host
//! must load and run newer plugins of the same ABI.
//!
//! Usage: `xpuprof-abi-host-0-1 PLUGIN.so`. Prints one `key: value` line per fact and exits
//! with 1 (and the reason on stderr) when anything fails.

use std::ffi::c_void;
use std::path::Path;
use std::sync::Mutex;

use abi_stable::library::lib_header_from_path;
use abi_stable::std_types::{RResult, RSlice, RStr, RVec};
use xpuprof_sdk::abi::{FfiHost, FfiInstance, PluginModuleRef, ABI_VERSION, KIND_SINK, KIND_SOURCE};
use xpuprof_sdk::codec::Decoder;
use xpuprof_sdk::model::Record;

/// What the host callbacks collect.
#[derive(Default)]
struct Collected {
    bytes: Mutex<Vec<u8>>,
    logs: Mutex<Vec<String>>,
}

extern "C" fn emit(ctx: *const c_void, batch: RSlice<'_, u8>) {
    // SAFETY: `ctx` points at the `Collected` in `main`, which outlives the plugin instance.
    let c = unsafe { &*(ctx as *const Collected) };
    c.bytes.lock().unwrap().extend_from_slice(batch.as_slice());
}

extern "C" fn log(ctx: *const c_void, level: u8, message: RStr<'_>) {
    // SAFETY: as in `emit`.
    let c = unsafe { &*(ctx as *const Collected) };
    c.logs.lock().unwrap().push(format!("{level}: {message}"));
}

fn ok<T>(what: &str, r: RResult<T, abi_stable::std_types::RString>) -> Result<T, String> {
    match r {
        RResult::ROk(v) => Ok(v),
        RResult::RErr(e) => Err(format!("{what} failed: {e}")),
    }
}

/// xpuprof 0.1.0's load steps.
fn load(path: &Path) -> Result<PluginModuleRef, String> {
    let header = lib_header_from_path(path).map_err(|e| format!("failed to open: {e}"))?;
    let module = header.init_root_module::<PluginModuleRef>().map_err(|e| format!("refused: {e}"))?;
    if module.abi_version() != ABI_VERSION {
        return Err(format!("built for ABI {}, this host speaks {ABI_VERSION}", module.abi_version()));
    }
    Ok(module)
}

fn run(path: &Path) -> Result<(), String> {
    let module = load(path)?;
    let d = (module.describe())();
    println!("name: {}", d.name);
    println!(
        "kind: {}",
        match d.kind {
            KIND_SOURCE => "source",
            KIND_SINK => "sink",
            _ => "unknown",
        }
    );
    println!("version: {}", d.version);
    let collected = Collected::default();
    let host = FfiHost { ctx: &collected as *const Collected as *const c_void, emit, log };
    let out = std::env::temp_dir().join(format!("xpuprof-abi-host-0-1-{}", std::process::id()));
    let args = format!("[plugin]\n[session]\noutput_dir = {:?}\n", out.display().to_string());
    let inst: FfiInstance = ok("create", (module.create())(RStr::from_str(&args), host))?;
    let result = lifecycle(module, inst, d.kind);
    (module.destroy())(inst);
    let _ = std::fs::remove_dir_all(&out);
    result?;
    let bytes = collected.bytes.lock().unwrap();
    let (mut records, mut device_ops) = (0usize, 0usize);
    for r in Decoder::new(&bytes) {
        let r =
            r.map_err(|e| format!("failed to decode record {} of the plugin's batches: {e}", records + 1))?;
        records += 1;
        device_ops += usize::from(matches!(r, Record::DeviceOp(_)));
    }
    println!("bytes: {}", bytes.len());
    println!("records: {records}");
    println!("device_ops: {device_ops}");
    for l in collected.logs.lock().unwrap().iter() {
        println!("log: {l}");
    }
    Ok(())
}

fn lifecycle(module: PluginModuleRef, inst: FfiInstance, kind: u8) -> Result<(), String> {
    if kind == KIND_SOURCE {
        let mut env = RVec::new();
        ok("prepare", (module.prepare())(inst, &mut env))?;
        ok("start", (module.start())(inst, std::process::id()))?;
        ok("stop", (module.stop())(inst))?;
    } else {
        ok("consume", (module.consume())(inst, RSlice::from_slice(&[])))?;
        let files = ok("finish", (module.finish())(inst))?;
        println!("files: {}", files.len());
    }
    println!("lifecycle: ok");
    Ok(())
}

fn main() {
    let Some(path) = std::env::args_os().nth(1) else {
        eprintln!("usage: xpuprof-abi-host-0-1 PLUGIN.so");
        std::process::exit(2);
    };
    if let Err(e) = run(Path::new(&path)) {
        eprintln!("xpuprof-abi-host-0-1: {}: {e}", Path::new(&path).display());
        std::process::exit(1);
    }
}
