//! # xpuprof CUPTI agent
//!
//! A shared library the CUDA driver loads into the profiled process because the host plugin set
//! `CUDA_INJECTION64_PATH` to it (and `NVTX_INJECTION64_PATH`, so NVTX calls reach CUPTI). At
//! `InitializeInjection` it finds the libcupti matching the process's CUDA runtime
//! ([`loader`]), connects to the host plugin's socket, and turns on:
//!
//! - activity records (kernels, memcpy, memset, synchronization, memory, NVTX, devices,
//!   contexts, overhead, and runtime/driver API records per `api`), forwarded raw from CUPTI's
//!   buffer-completion thread ([`activity`]);
//! - an API-entry callback on launch-class calls only, which records the launch site: the
//!   correlation id and the calling thread's stack ([`launches`]), and calls the SDK's
//!   correlation trampoline `xpuprof_agent_launch` for the eBPF source;
//! - the graph-node resource callbacks ([`graphs`]): which call created each CUDA graph node
//!   and which node each copy came from, so replayed kernels show their capture site too;
//! - the NVTX callbacks ([`annotations`]): the ranges a framework pushes around its operations
//!   (XLA's, [`xla`]) become frames between each launch's call site and its kernel, and its
//!   compiler phases mark their launches as compile-time work;
//! - NCCL's NVTX ranges ([`nccl`]): the message size and communicator of each collective, from
//!   the ranges' extended payloads, whose schemas NCCL registers through NVTX's payload
//!   extension ([`nvtx_ext`], [`payload_schemas`]), sent with the launch made inside the range.
//!
//! Collection can be paused and resumed while the program runs ([`capture`]); capture windows
//! ([`window`]) are opened and closed by the host or by the program's markers ([`markers`]),
//! and outside them CUPTI is detached. The agent can also be loaded into a running process and
//! attach late, and stays loaded, dormant, for a later attach ([`session`]).
//!
//! CUPTI timestamps are switched to `CLOCK_MONOTONIC` with the timestamp callback. Everything is
//! flushed at exit and on SIGINT/SIGTERM. If the host cannot be reached the agent turns itself
//! off with one line on stderr; the program runs unharmed.
//!
//! Everything that is not CUPTI (the wire protocol, the channel to the host, the launch-site
//! registry and stack walk, TSC timestamps, the trampoline, exit flush, library discovery) comes
//! from `xpuprof-agent-kit`; this crate is the CUPTI glue.

mod activity;
mod annotations;
mod callbacks;
mod capture;
mod config;
mod devices;
mod finish;
mod follow;
mod graphs;
mod loader;
mod markers;
mod nccl;
mod nvtx_ext;
mod payload_schemas;
mod pc_sampling;
mod session;
mod start;
mod state;
mod sys;
mod window;
mod xla;

use std::os::raw::{c_int, c_void};
use std::sync::OnceLock;

use config::Config;
use sys::Lib;
use xpuprof_agent_kit::{launches, AgentCore};

/// The agent's name in messages.
pub(crate) const NAME: &str = "cupti agent";

/// The running agent.
#[derive(Debug)]
pub struct Agent {
    /// Settings.
    pub config: Config,
    /// libcupti.
    pub lib: Lib,
    /// The channel (it also owns the activity buffers), launch registry, known modules, clock,
    /// own code (libcupti, this agent: left off launch stacks), CUPTI's drops and the sender.
    pub core: AgentCore,
    /// Launch entries are recorded (agent stacks, or API calls from callbacks).
    pub record_entries: bool,
    /// What is turned on, to pause and resume ([`capture`]), and the window state ([`window`]).
    pub(crate) capture: capture::State,
    /// CUPTI's API version (the hello's).
    pub(crate) version: u32,
    /// The hello's flags.
    pub(crate) hello_flags: u32,
    /// CUPTI's timestamps are in the session clock (the timestamp callback is registered).
    pub(crate) monotonic: bool,
    /// The API-name message of the launch-class calls, sent at the start of every session.
    pub(crate) api_names: std::sync::Mutex<Vec<u8>>,
    /// Started by a late attach (`xpuprof attach`), not at `cuInit`.
    pub(crate) late: bool,
    /// The connection to the current host ([`session`]).
    pub(crate) session: std::sync::Mutex<session::Session>,
    /// The program's NVTX ranges become annotation frames ([`annotations`]).
    pub(crate) annotations: bool,
}

impl Agent {
    /// The launch-site path's view of the settings.
    pub fn sites(&self) -> launches::Sites<'_> {
        self.core.sites_recording(&self.config.common, self.record_entries)
    }
}

pub(crate) static AGENT: OnceLock<Option<Agent>> = OnceLock::new();

/// One line on stderr, prefixed so the user knows who speaks.
pub(crate) fn say(msg: &str) {
    xpuprof_agent_kit::say(NAME, msg);
}

pub(crate) fn agent() -> Option<&'static Agent> {
    AGENT.get().and_then(Option::as_ref)
}

/// Called by the CUDA driver when it loads this library through `CUDA_INJECTION64_PATH`.
///
/// # Safety
/// Called by the CUDA driver, once, during `cuInit`.
#[no_mangle]
pub unsafe extern "C" fn InitializeInjection() -> c_int {
    let _ = std::panic::catch_unwind(ensure_started);
    1
}

/// Called by NVTX when it loads this library through `NVTX_INJECTION64_PATH`: starts the agent
/// and hands NVTX to CUPTI's own NVTX handler so markers and ranges become activity records.
///
/// # Safety
/// `get_export_table` must be the NVTX export-table function NVTX passes to injections.
#[no_mangle]
pub unsafe extern "C" fn InitializeInjectionNvtx2(get_export_table: *const c_void) -> c_int {
    let Ok(Some(a)) = std::panic::catch_unwind(|| {
        ensure_started();
        agent()
    }) else {
        return 0;
    };
    if !a.config.opts.nvtx {
        return 0;
    }
    // SAFETY: CUPTI exports `InitializeInjectionNvtx2` with this signature for exactly this use.
    unsafe { a.lib.forward_nvtx(get_export_table) }
}

fn ensure_started() {
    match config::from_env() {
        Ok(config) => ensure_started_with(config, false),
        Err(e) => {
            let _ = AGENT.set(None);
            say(&e);
        }
    }
}

/// Starts the agent with `config` (once per process; `late`: by a late attach, not at `cuInit`),
/// its first session, and its first window unless it starts paused or the program's markers
/// decide.
pub(crate) fn ensure_started_with(config: Config, late: bool) {
    let mut first = None;
    AGENT.get_or_init(|| match start::start(config, late) {
        Ok((a, outputs)) => {
            first = Some(outputs);
            Some(a)
        }
        Err(e) => {
            if !start::REPORTED.load(std::sync::atomic::Ordering::Relaxed) {
                say(&e);
            }
            None
        }
    });
    let (Some(a), Some(outputs)) = (agent(), first) else { return };
    xpuprof_agent_kit::exit::install(|| {
        if let Some(a) = agent() {
            finish::finish(a);
        }
    });
    if let Err(e) = session::begin(a, outputs) {
        say(&e);
        return;
    }
    window::first(a);
}
