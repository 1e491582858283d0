//! Starting the agent: connect to the host, load and check CUPTI, subscribe, turn on the
//! record kinds and the launch callbacks. Every failure is one message, sent to the host when it
//! is reachable (which shows it) and otherwise printed once on stderr.

use std::sync::atomic::Ordering;

use xpuprof_agent_kit::channel::{Channel, Chunk, Outputs};
use xpuprof_agent_kit::{modules, timestamps, wire, AgentCore};

use crate::callbacks::{buffer_completed, buffer_requested, monotonic_ns, on_api};
use crate::config::{Api, Config, PythonMode, StackMode};
use crate::sys::ffi::{self, CUpti_ActivityKind as K, DOMAIN_DRIVER, DOMAIN_RUNTIME};
use crate::sys::{self, Lib};
use crate::{graphs, loader, Agent, NAME};

/// Oldest CUPTI API version the decoder knows (CUDA 12.0).
const MIN_CUPTI_VERSION: u32 = 19;

/// Set when a start-up error went to the host, which shows it: stderr stays quiet then.
pub(crate) static REPORTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn connect(config: &Config) -> Result<Outputs, String> {
    if config.common.socket.is_none() && config.common.dump_dir.is_none() {
        return Err("XPUPROF_CUPTI_SOCKET is not set (run the program under `xpuprof --source cupti`); tracing is off".into());
    }
    Outputs::connect(config.common.socket.as_deref(), config.common.dump_dir.as_deref(), "cupti")
}

fn load_cupti() -> Result<Lib, String> {
    loader::CUPTI.load(|p| {
        // SAFETY: the candidates are libcupti files found in CUDA install locations.
        match unsafe { Lib::load(p) } {
            Ok(lib) if lib.api.cuptiActivityEnable.is_ok() => Ok(lib),
            Ok(_) => Err(format!("{p} is not a CUPTI library")),
            Err(e) => Err(e),
        }
    })
}

/// Connects, loads and checks CUPTI, subscribes and turns everything on; returns the agent and
/// the outputs of its first session ([`crate::session::begin`] starts it once the agent is
/// stored). Errors are sent to the host when it is reachable.
/// Whether the program's NVTX ranges become annotation frames (`annotations`): they need NVTX
/// and agent stacks.
fn annotations_on(config: &Config) -> bool {
    config.opts.annotations && config.opts.nvtx && config.common.stacks.agent_walks()
}

pub(crate) fn start(config: Config, late: bool) -> Result<(Agent, Outputs), String> {
    let outputs = connect(&config)?;
    let mut hello_flags = 0;
    let lib = match load_cupti() {
        Ok(l) => l,
        Err(e) => {
            send_error_now(outputs, &e);
            return Err(e);
        }
    };
    let version = lib.version().map_err(|e| e.to_string())?;
    if version < MIN_CUPTI_VERSION {
        let e = format!("CUPTI API version {version} at {} is older than CUDA 12.0 (version {MIN_CUPTI_VERSION}); xpuprof needs CUDA 12.0 or newer", lib.path);
        send_error_now(outputs, &e);
        return Err(e);
    }
    // Subscribe before touching any global CUPTI setting, so that when another CUPTI client
    // (torch.profiler, Nsight Systems) already owns the process, it is left working.
    let sub = match lib.subscribe(on_api) {
        Ok(s) => s,
        Err(e) => {
            let e = format!("cannot trace this process: {e}");
            send_error_now(outputs, &e);
            return Err(e);
        }
    };
    let monotonic = config.opts.monotonic && lib.register_timestamp(monotonic_ns).is_ok();
    if monotonic {
        hello_flags |= wire::FLAG_MONOTONIC_TIMESTAMPS;
    }
    if config.common.stacks.agent_walks() {
        hello_flags |= wire::FLAG_AGENT_STACKS;
    }
    if config.opts.api == Api::Launches {
        hello_flags |= wire::FLAG_API_FROM_CALLBACKS;
    }
    if config.common.stacks.trampoline() {
        hello_flags |= wire::FLAG_TRAMPOLINE_STACKS;
    }
    // Launch entries: for the agent's stacks, for API calls timed by the callbacks, and to
    // announce each launch whose stack the eBPF source sends (so the host waits for it).
    let flags = wire::FLAG_AGENT_STACKS | wire::FLAG_API_FROM_CALLBACKS | wire::FLAG_TRAMPOLINE_STACKS;
    let record_entries = hello_flags & flags != 0;
    let me = modules::own_path().unwrap_or_default();
    let mut core = AgentCore::new(NAME, config.common.buffer_bytes, modules::ranges_of(&[&lib.path, &me]));
    core.clock = timestamps::Clock::new(config.opts.tsc);
    let annotations = annotations_on(&config);
    let a = Agent {
        config,
        lib,
        core,
        record_entries,
        capture: Default::default(),
        version,
        hello_flags,
        monotonic,
        api_names: Default::default(),
        late,
        session: Default::default(),
        annotations,
    };
    a.core.launches.python.set_enabled(a.config.opts.python == PythonMode::Auto);
    if let Err(e) = enable(&a, sub) {
        let msg = e.to_string();
        let mut m = hello(version, hello_flags);
        put_error(&mut m, &msg);
        a.core.channel.push(Chunk::Bytes(m));
        a.core.channel.close();
        if outputs.socket.is_some() {
            REPORTED.store(true, Ordering::Relaxed);
        }
        a.core.channel.run(outputs, || {});
        return Err(msg);
    }
    Ok((a, outputs))
}

fn hello(version: u32, flags: u32) -> Vec<u8> {
    let mut b = Vec::new();
    wire::Hello::new(version, flags).encode(&mut b);
    b
}

fn put_error(out: &mut Vec<u8>, msg: &str) {
    wire::put_message(out, wire::MSG_ERROR, &[msg.as_bytes()]);
}

/// Tells the host about a start-up failure before CUPTI was usable.
pub(crate) fn send_error_now(outputs: Outputs, msg: &str) {
    if outputs.socket.is_some() {
        REPORTED.store(true, Ordering::Relaxed);
    }
    let ch = Channel::new(NAME, 64 * 1024);
    let mut m = hello(0, 0);
    put_error(&mut m, msg);
    ch.push(Chunk::Bytes(m));
    ch.close();
    ch.run(outputs, || {});
}

pub(crate) fn clock_pair(a: &Agent, out: &mut Vec<u8>) {
    let before = xpuprof_sdk::clock::now_ns();
    let Ok(cupti) = a.lib.timestamp() else { return };
    let after = xpuprof_sdk::clock::now_ns();
    wire::put_clock(out, cupti, before / 2 + after / 2);
}

/// True for the API names that get a launch site: calls that put work on a device (kernel and
/// graph launches, copies, sets, prefetches) and the calls whose device-side records (memory
/// allocation/free, synchronization) carry their correlation id, so every device record joins a
/// call site; and the calls that add CUDA graph nodes, whose stack is where a replayed node was
/// built.
pub fn is_launch_api(name: &str) -> bool {
    const PREFIXES: [&str; 33] = [
        "cudaLaunch",
        "__cudaLaunch",
        "cudaGraphLaunch",
        "cuLaunch",
        "cuGraphLaunch",
        "cudaMemcpy",
        "cudaMemset",
        "cuMemcpy",
        "cuMemset",
        "cudaMemPrefetch",
        "cuMemPrefetch",
        "cudaMalloc",
        "cudaFree",
        "cuMemAlloc",
        "cuMemFree",
        "cudaDeviceSynchronize",
        "cudaStreamSynchronize",
        "cudaEventSynchronize",
        "cudaStreamWaitEvent",
        "cudaDeviceReset",
        "cuCtxSynchronize",
        "cuStreamSynchronize",
        "cuEventSynchronize",
        "cuStreamWaitEvent",
        "cudaMemPoolTrim",
        "cuMemPoolTrim",
        "cudaHostAlloc",
        "cuMemHostAlloc",
        "cuMemCreate",
        "cuMemRelease",
        "cuMemMap",
        // Graph nodes added explicitly: the stack where a replayed kernel's node was built.
        "cudaGraphAdd",
        "cuGraphAdd",
    ];
    PREFIXES.iter().any(|p| name.starts_with(p))
        && !name.contains("HostFunc")
        && !name.contains("Dependencies")
}

fn enable(a: &Agent, sub: ffi::CUpti_SubscriberHandle) -> Result<(), sys::CuptiError> {
    let lib = &a.lib;
    let mut capture = a.capture.lock().unwrap_or_else(|p| p.into_inner());
    capture.subscribed(sub);
    crate::callbacks::START_BUFFER_BYTES.store(a.config.common.buffer_bytes, Ordering::Relaxed);
    lib.register_buffers(buffer_requested, buffer_completed)?;
    lib.use_system_thread_ids()?;
    let _ = lib
        .set_size_attribute(ffi::CUpti_ActivityAttribute::CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, 32 << 20);
    let (c, common) = (&a.config.opts, &a.config.common);
    let mut names = wire::names::Entries::default();
    let runtime_cb = c.runtime_callbacks;
    for (domain, size) in [
        (DOMAIN_RUNTIME, ffi::CUpti_runtime_api_trace_cbid_enum::CUPTI_RUNTIME_TRACE_CBID_SIZE),
        (DOMAIN_DRIVER, ffi::CUpti_driver_api_trace_cbid_enum::CUPTI_DRIVER_TRACE_CBID_SIZE),
    ] {
        if domain == DOMAIN_RUNTIME && !runtime_cb {
            continue;
        }
        for cbid in 1..size {
            let Some(name) = lib.callback_name(domain as u32, cbid) else { continue };
            if !is_launch_api(&name) {
                continue;
            }
            names.api_name(domain as u32, cbid, name.as_bytes());
            // Launch-class calls get the entry/exit callback (launch sites, the trampoline, and
            // with api = "launches" the API call itself): no CUPTI API records are needed.
            if common.stacks != StackMode::Off || c.api == Api::Launches {
                capture.enable_callback(lib, domain as u32, cbid)?;
            }
        }
    }
    if common.stacks != StackMode::Off || c.api == Api::Launches {
        for cbid in [graphs::CBID_NODE_CREATED, graphs::CBID_NODE_CLONED] {
            capture.enable_callback(lib, graphs::DOMAIN_RESOURCE, cbid)?;
        }
    }
    crate::pc_sampling::enable(a, &mut capture)?;
    if let Some(range) = &c.range {
        crate::markers::enable(&mut capture, lib, range)?;
    }
    if a.annotations {
        crate::annotations::enable(&mut capture, lib)?;
    }
    if c.nvtx && (common.stacks != StackMode::Off || c.api == Api::Launches) {
        crate::nccl::enable(&mut capture, lib)?;
    }
    if let Ok(mut m) = a.api_names.lock() {
        names.put_api_names(&mut m);
    }
    let kinds = [
        (c.kernels, K::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL),
        (c.memcpy, K::CUPTI_ACTIVITY_KIND_MEMCPY),
        (c.memcpy, K::CUPTI_ACTIVITY_KIND_MEMCPY2),
        (c.memset, K::CUPTI_ACTIVITY_KIND_MEMSET),
        (c.sync, K::CUPTI_ACTIVITY_KIND_SYNCHRONIZATION),
        (c.memory, K::CUPTI_ACTIVITY_KIND_MEMORY2),
        (c.nvtx, K::CUPTI_ACTIVITY_KIND_MARKER),
        (c.devices, K::CUPTI_ACTIVITY_KIND_DEVICE),
        (c.devices, K::CUPTI_ACTIVITY_KIND_CONTEXT),
        (c.overhead, K::CUPTI_ACTIVITY_KIND_OVERHEAD),
        (c.api == Api::All, K::CUPTI_ACTIVITY_KIND_RUNTIME),
        (c.api == Api::All, K::CUPTI_ACTIVITY_KIND_DRIVER),
    ];
    for (on, kind) in kinds {
        if on {
            capture.enable_kind(lib, kind)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::is_launch_api;

    #[test]
    fn launch_class_calls() {
        for n in [
            "cuLaunchKernel",
            "cuLaunchKernelEx_ptsz",
            "cuGraphLaunch",
            "cudaLaunchKernel_v7000",
            "cuMemcpyHtoDAsync_v2",
            "cuMemAlloc_v2",
            "cuCtxSynchronize",
            "cudaGraphAddKernelNode_v10000",
            "cuGraphAddMemcpyNode",
        ] {
            assert!(is_launch_api(n), "{n}");
        }
        for n in [
            "cuLaunchHostFunc",
            "cuCtxGetDevice",
            "cuModuleLoadData",
            "cudaGetLastError",
            "cudaGraphAddDependencies_v10000",
            "cudaGraphInstantiate",
        ] {
            assert!(!is_launch_api(n), "{n}");
        }
    }
}
