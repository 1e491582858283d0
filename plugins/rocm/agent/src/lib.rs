//! # xpuprof ROCm agent
//!
//! A shared library the ROCm runtimes load into the profiled process because the host plugin
//! named it in `ROCP_TOOL_LIBRARIES` (rocprofiler-sdk, ROCm 6.2 and later) and `HSA_TOOLS_LIB`
//! (ROCr, which is how roctracer tools load on older ROCm). Which path runs is chosen at run
//! time by what the process maps:
//!
//! - **rocprofiler-sdk** (`sdk.rs`): the HIP runtime hands its API tables to
//!   `librocprofiler-register`, which loads `librocprofiler-sdk`, which calls this library's
//!   [`rocprofiler_configure`]. The agent resolves the SDK's entry points from the library the
//!   process already mapped (never links it), and turns on: HIP runtime API callbacks on
//!   launch-class calls (launch sites: the stack, keyed by the SDK's internal correlation id),
//!   code-object callbacks (kernel names and resources), roctx markers, HIP stream bindings, and
//!   one DISCARD-policy buffer (the application never blocks; drops are counted) for kernel
//!   dispatches, memory copies, allocations, scratch memory and correlation-id retirements.
//! - **roctracer** (`roctracer.rs`): ROCr calls [`OnLoad`]; when `librocprofiler-register` is not
//!   mapped (a runtime older than ROCm 6.2), the agent loads `libroctracer64` and takes HIP API
//!   callbacks, HIP activity records and roctx callbacks from it.
//!
//! Records travel raw to the host plugin (`xpuprof-wire`'s record message); what only callbacks
//! know goes in `xpuprof-rocm-wire`'s messages. Device timestamps stay in the library's clock
//! (CLOCK_BOOTTIME for the SDK, ROCr's system clock for roctracer): the agent sends paired
//! readings and the host converts them. Everything else (channel, launch registry, stack walk,
//! timestamps, trampoline, exit flush, library discovery) is the agent kit's.

mod config;
mod finish;
mod launch_class;
mod loader;
mod roctracer;
mod sdk;
mod start;

use std::sync::OnceLock;

use xpuprof_agent_kit::channel::Chunk;
use xpuprof_agent_kit::{launches, wire, AgentCore};

use config::Config;

pub use roctracer::OnLoad;
pub use sdk::rocprofiler_configure;

/// The agent's name in messages.
pub(crate) const NAME: &str = "rocm agent";

/// The tracing library in use and its handles.
#[derive(Debug)]
pub enum Tracer {
    /// rocprofiler-sdk.
    Sdk(sdk::Sdk),
    /// roctracer.
    Roctracer(roctracer::Rt),
}

/// The running agent.
#[derive(Debug)]
pub struct Agent {
    /// Settings.
    pub config: Config,
    /// The tracing library.
    pub tracer: Tracer,
    /// Channel, launch registry, known modules, clock, own code (the tracing library, this
    /// agent: left off launch stacks), drops, sender.
    pub core: AgentCore,
}

impl Agent {
    /// The launch-site path's view of the settings.
    pub fn sites(&self) -> launches::Sites<'_> {
        self.core.sites(&self.config.common)
    }

    /// Queues a paired reading of the tracing library's clock and the session clock: the
    /// tightest of a few readings (the host fits a line through the pairs, so a reading that
    /// was preempted between its two session-clock reads would tilt every duration).
    pub(crate) fn send_clock_pair(&self) {
        let mut best: Option<(u64, u64, u64)> = None;
        for _ in 0..8 {
            let before = xpuprof_sdk::clock::now_ns();
            let Some(vendor) = (match &self.tracer {
                Tracer::Sdk(s) => s.timestamp(),
                Tracer::Roctracer(r) => r.timestamp(),
            }) else {
                return;
            };
            let after = xpuprof_sdk::clock::now_ns();
            let window = after.saturating_sub(before);
            if best.is_none_or(|(w, _, _)| window < w) {
                best = Some((window, vendor, before + window / 2));
            }
        }
        let Some((_, vendor, session)) = best else { return };
        let mut m = Vec::new();
        wire::put_clock(&mut m, vendor, session);
        self.core.channel.push(Chunk::Bytes(m));
    }
}

pub(crate) static AGENT: OnceLock<Option<Agent>> = OnceLock::new();

/// The running agent, once started.
pub(crate) fn agent() -> Option<&'static Agent> {
    AGENT.get().and_then(Option::as_ref)
}

/// One line on stderr, prefixed so the user knows who speaks.
pub(crate) fn say(msg: &str) {
    xpuprof_agent_kit::say(NAME, msg);
}

/// The calling thread's kernel id.
/// The text of a NUL-terminated C string from the tracing library or the application; empty for
/// null.
///
/// # Safety
/// `p` is null or points to a NUL-terminated string valid during the call.
pub(crate) unsafe fn c_text(p: *const std::os::raw::c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: non-null and NUL-terminated (the caller's contract).
    unsafe { std::ffi::CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// The error of a tracing-library call `what` that returned `status`, named by the library's
/// `text` for it (null: the number).
///
/// # Safety
/// As for [`c_text`].
pub(crate) unsafe fn call_failed(
    what: &str,
    status: impl std::fmt::Display,
    text: *const std::os::raw::c_char,
) -> String {
    // SAFETY: the caller's contract.
    let text = unsafe { c_text(text) };
    if text.is_empty() {
        format!("{what} failed: status {status}")
    } else {
        format!("{what} failed: {text}")
    }
}

pub(crate) fn gettid() -> u32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::syscall(libc::SYS_gettid) as u32 }
}
