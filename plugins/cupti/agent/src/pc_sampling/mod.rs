//! PC sampling (`pc_sampling = 1`): CUPTI samples, on every SM, which instruction a warp is at
//! and why it is not issuing (its stall reason), continuously while kernels run; the agent
//! fetches the samples and sends them to the host with what the host needs to read them:
//!
//! - on context creation (resource callback): sampling is enabled and configured for the context
//!   (continuous collection, every stall reason the device reports, the period of
//!   `pc_sampling_period`), and the device's stall-reason table is sent
//!   ([`msg::MSG_PC_STALL_REASONS`]);
//! - on module load: the module's CRC (CUPTI's, which samples name their cubin by) is sent once
//!   per CRC, with the cubin itself when it carries a line table, so the host resolves source
//!   lines ([`msg::MSG_PC_CUBIN`]): the target never parses DWARF;
//! - every [`FETCH_EVERY`] on the `xpuprof-cupti-pc` thread, when a window closes, when a
//!   context goes away and at exit, `cuptiPCSamplingGetData` drains CUPTI's buffer and the PCs
//!   go out with their stall-reason counts and the fetch's totals (samples in all, dropped by the
//!   hardware, in kernels CUPTI gives no PCs for) ([`msg::MSG_PC_SAMPLES`]);
//! - a closed window disables sampling on every context (nothing is sampled between windows);
//!   an opening one enables and configures it again.
//!
//! A call CUPTI refuses is said once on stderr and sent to the host ([`msg::MSG_PC_STATUS`]);
//! the program runs on without samples for that context.

mod control;
mod sys;

use std::collections::HashSet;
use std::os::raw::c_void;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::time::Duration;

use xpuprof_agent_kit::channel::Chunk;
use xpuprof_cupti_wire::pc_sampling as msg;

use crate::capture::Capture;
use crate::sys::{ffi, CuptiError};
use crate::{agent, say, Agent};
use sys::PcBuffer;

/// How often the fetch thread drains CUPTI's buffer (CUPTI's own worker decodes the hardware
/// buffer every 100 ms by default).
pub const FETCH_EVERY: Duration = Duration::from_millis(100);
/// PCs one fetch takes (more come with the next `cuptiPCSamplingGetData` of the same drain).
const FETCH_PCS: usize = 4096;
/// PCs of the buffer CUPTI flushes into on its own (module unload, disable).
const CONFIG_PCS: usize = 16384;
/// Most fetches of one drain of one context: a program that fills CUPTI's buffer faster than
/// this drains it waits for the next drain instead of holding the fetch thread.
const MAX_FETCHES: usize = 64;

const DOMAIN_RESOURCE: u32 = ffi::CUpti_CallbackDomain::CUPTI_CB_DOMAIN_RESOURCE;
const CBID_CONTEXT_CREATED: u32 = ffi::CUpti_CallbackIdResource::CUPTI_CBID_RESOURCE_CONTEXT_CREATED;
const CBID_CONTEXT_DESTROYING: u32 =
    ffi::CUpti_CallbackIdResource::CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING;
const CBID_MODULE_LOADED: u32 = ffi::CUpti_CallbackIdResource::CUPTI_CBID_RESOURCE_MODULE_LOADED;
/// A module loaded before sampling began, reported when it is profiled.
const CBID_MODULE_PROFILED: u32 = ffi::CUpti_CallbackIdResource::CUPTI_CBID_RESOURCE_MODULE_PROFILED;

/// A CUDA context, an opaque handle CUPTI accepts from any thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Handle(ffi::CUcontext);

// SAFETY: the handle is an opaque token passed back to CUPTI, whose calls take it from any thread.
unsafe impl Send for Handle {}

/// Sampling on one context.
#[derive(Debug)]
struct Context {
    handle: Handle,
    id: u32,
    device: u32,
    reasons: Vec<(u32, String)>,
    indices: Vec<u32>,
    /// The buffer CUPTI flushes into on its own (it keeps its address while configured).
    config: PcBuffer,
    fetch: PcBuffer,
    enabled: bool,
    /// CUPTI's default period on this context, read back after a configuration that set none:
    /// set explicitly from then on, so a window at the default after one at another period
    /// does not keep CUPTI's last setting.
    default_period: Option<u32>,
}

/// What the agent counted, for the verbose line at exit.
#[derive(Debug, Default, Clone, Copy)]
struct Counts {
    contexts: u32,
    fetches: u64,
    pcs: u64,
    samples: u64,
    dropped: u64,
    hardware_full: u64,
    cubins: u64,
    cubins_with_lines: u64,
    refused: u64,
    /// The sampling period of the last context configured (N of 2^N cycles), 0 if unknown.
    period: u32,
}

#[derive(Debug, Default)]
struct State {
    /// Each context's handle (to find it without its lock) and state.
    contexts: Vec<(Handle, Shared)>,
    counts: Counts,
}

static STATE: Mutex<State> = Mutex::new(State { contexts: Vec::new(), counts: ZERO });
const ZERO: Counts = Counts {
    contexts: 0,
    fetches: 0,
    pcs: 0,
    samples: 0,
    dropped: 0,
    hardware_full: 0,
    cubins: 0,
    cubins_with_lines: 0,
    refused: 0,
    period: 0,
};
/// CRCs of the cubins sent.
static SEEN: Mutex<Option<HashSet<u64>>> = Mutex::new(None);
static FETCHER: Once = Once::new();
/// Sampling is wanted now (a window is open): kept by the window hooks here rather than read
/// from the capture state, whose lock a launch callback must not wait for (the window thread
/// holds it across CUPTI calls).
static OPEN: AtomicBool = AtomicBool::new(false);

fn counts() -> std::sync::MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(|p| p.into_inner())
}

/// Turns on the resource callbacks PC sampling needs, on while CUPTI is subscribed, windows or
/// not (as the markers' are): a context created while no window is open is known, and sampled
/// from the next window; a module loaded then still has its cubin sent.
pub(crate) fn enable(a: &Agent, capture: &mut Capture) -> Result<(), CuptiError> {
    if !a.config.opts.pc_sampling {
        return Ok(());
    }
    // The first window is open from the start unless the agent starts paused or markers decide.
    OPEN.store(!a.config.opts.paused && a.config.opts.range.is_none(), Ordering::Release);
    for cbid in [CBID_CONTEXT_CREATED, CBID_CONTEXT_DESTROYING, CBID_MODULE_LOADED] {
        capture.enable_marker(&a.lib, DOMAIN_RESOURCE, cbid)?;
    }
    // Not every CUPTI reports it; without it, modules loaded while CUPTI was detached stay unseen.
    let _ = capture.enable_marker(&a.lib, DOMAIN_RESOURCE, CBID_MODULE_PROFILED);
    Ok(())
}

/// The resource callback's part for PC sampling.
///
/// # Safety
/// `data` must be the `CUpti_ResourceData` CUPTI passes for resource callback `cbid`.
pub(crate) unsafe fn on_resource(a: &Agent, cbid: u32, data: *const c_void) {
    if !a.config.opts.pc_sampling {
        return;
    }
    // SAFETY: for resource callbacks CUPTI passes a valid CUpti_ResourceData for the call.
    let r = unsafe { &*(data as *const ffi::CUpti_ResourceData) };
    match cbid {
        CBID_CONTEXT_CREATED => context_created(a, r.context),
        CBID_CONTEXT_DESTROYING => context_destroying(a, r.context),
        CBID_MODULE_LOADED | CBID_MODULE_PROFILED if !r.resourceDescriptor.is_null() => {
            // SAFETY: for module callbacks resourceDescriptor points to a
            // CUpti_ModuleResourceData (cupti_callbacks.h), valid for the callback.
            let m = unsafe { &*(r.resourceDescriptor as *const ffi::CUpti_ModuleResourceData) };
            if !m.pCubin.is_null() && m.cubinSize > 0 {
                // SAFETY: CUPTI hands the module's cubin, `cubinSize` bytes, for the callback.
                let cubin = unsafe { std::slice::from_raw_parts(m.pCubin.cast::<u8>(), m.cubinSize) };
                module_loaded(a, m.moduleId, cubin);
            }
            drain_context(a, r.context);
        }
        _ => {}
    }
}

thread_local! {
    /// The context of this thread's last launch seen by [`launch_context`].
    static LAST_CONTEXT: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// At a launch's API entry: a context not seen created (it was, while CUPTI was detached
/// between windows, or before a late attach) is taken up now. One thread-local compare per
/// launch when the context is known.
pub(crate) fn launch_context(a: &Agent, ctx: ffi::CUcontext) {
    if !a.config.opts.pc_sampling || ctx.is_null() || LAST_CONTEXT.with(|c| c.get()) == ctx as usize {
        return;
    }
    LAST_CONTEXT.with(|c| c.set(ctx as usize));
    if !counts().contexts.iter().any(|(h, _)| h.0 == ctx) {
        context_created(a, ctx);
    }
}

/// Says and sends a refused call.
fn refused(a: &Agent, context: u32, what: &str, e: &CuptiError) {
    counts().counts.refused += 1;
    say(&format!("PC sampling: {what} on context {context}: {e}"));
    let mut m = Vec::new();
    msg::put_status(&mut m, context, e.code, &format!("{what}: {e}"));
    a.core.channel.push(Chunk::Bytes(m));
}

fn context_created(a: &Agent, ctx: ffi::CUcontext) {
    let lib = &a.lib;
    let c = Context {
        handle: Handle(ctx),
        id: sys::context_id(lib, ctx).unwrap_or(0),
        device: sys::device_id(lib, ctx).unwrap_or(0),
        reasons: Vec::new(),
        indices: Vec::new(),
        config: PcBuffer::new(0, 0),
        fetch: PcBuffer::new(0, 0),
        enabled: false,
        default_period: None,
    };
    // Known once: its creation and a first launch may race to report it.
    let shared = {
        let mut s = counts();
        if s.contexts.iter().any(|(h, _)| h.0 == ctx) {
            return;
        }
        let shared: Shared = Arc::new(Mutex::new(c));
        s.counts.contexts += 1;
        s.contexts.push((Handle(ctx), shared.clone()));
        shared
    };
    if OPEN.load(Ordering::Acquire) {
        if let Ok(mut c) = shared.lock() {
            if !c.enabled {
                start(a, &mut c);
            }
        }
    }
    FETCHER.call_once(start_fetcher);
}

/// Enables and configures sampling on `c` (unless the program chose no sampling for this window:
/// [`control`]); the first time, reads the device's stall reasons, sends them and sizes the
/// buffers. A refusal is said and sent; `c` stays disabled.
fn start(a: &Agent, c: &mut Context) {
    let control::Wanted::Period(period) = control::wanted(a.config.opts.pc_sampling_period) else {
        return;
    };
    let period = period.or(c.default_period);
    let (lib, ctx) = (&a.lib, c.handle.0);
    if let Err(e) = sys::enable(lib, ctx) {
        refused(a, c.id, "cuptiPCSamplingEnable", &e);
        return;
    }
    if c.reasons.is_empty() {
        match sys::stall_reasons(lib, ctx) {
            Ok(r) => c.reasons = r,
            Err(e) => {
                refused(a, c.id, "reading the stall reasons", &e);
                let _ = sys::disable(lib, ctx);
                return;
            }
        }
        c.indices = c.reasons.iter().map(|r| r.0).collect();
        c.config = PcBuffer::new(CONFIG_PCS, c.reasons.len());
        c.fetch = PcBuffer::new(FETCH_PCS, c.reasons.len());
        let mut m = Vec::new();
        msg::put_stall_reasons(&mut m, c.id, c.device, &c.reasons);
        a.core.channel.push(Chunk::Bytes(m));
    }
    if let Err(e) = configure(a, c, period) {
        refused(a, c.id, "cuptiPCSamplingSetConfigurationAttribute", &e);
        let _ = sys::disable(lib, ctx);
        return;
    }
    c.enabled = true;
    if let Ok(set) = sys::sampling_period(lib, ctx) {
        counts().counts.period = set;
        if period.is_none() {
            c.default_period = Some(set);
        }
    }
}

/// Configures `c` at 2^`period` cycles (`None`: CUPTI's default).
fn configure(a: &Agent, c: &mut Context, period: Option<u32>) -> Result<(), CuptiError> {
    let settings = sys::Settings { period, reasons: &mut c.indices, scratch_bytes: None };
    sys::configure(&a.lib, c.handle.0, settings, &mut c.config)
}

fn context_destroying(a: &Agent, ctx: ffi::CUcontext) {
    // The list is cloned first: the fetch thread holds a context's lock while it takes the
    // state's, so the state's is never held while waiting for a context's.
    let found = {
        let mut s = counts();
        let at = s.contexts.iter().position(|(h, _)| h.0 == ctx);
        at.map(|i| s.contexts.remove(i).1)
    };
    let Some(c) = found else { return };
    // Waits for a fetch in flight, but never forever: CUPTI's fetch could itself wait on the
    // context this thread is tearing down.
    let Some(mut c) = lock_within(&c, TEARDOWN_WAIT) else {
        say("PC sampling: a context went away while its samples were being fetched; its last samples are lost");
        return;
    };
    drain(a, &mut c);
    stop(a, &mut c);
}

fn module_loaded(a: &Agent, module: u32, cubin: &[u8]) {
    let crc = match sys::cubin_crc(&a.lib, cubin) {
        Ok(c) => c,
        Err(e) => {
            refused(a, 0, &format!("cuptiGetCubinCrc of module {module}"), &e);
            return;
        }
    };
    {
        let mut seen = SEEN.lock().unwrap_or_else(|p| p.into_inner());
        if !seen.get_or_insert_with(HashSet::new).insert(crc) {
            return;
        }
    }
    let lines = has_line_table(cubin);
    let mut m = Vec::with_capacity(32 + if lines { cubin.len() } else { 0 });
    msg::put_cubin(&mut m, crc, module, lines.then_some(cubin));
    a.core.channel.push(Chunk::Bytes(m));
    let mut s = counts();
    s.counts.cubins += 1;
    s.counts.cubins_with_lines += u64::from(lines);
}

/// Whether an ELF cubin names a line-table section (`.debug_line`, `.nv_debug_line_sass`) in
/// its section-name table: a byte search, no parsing (the host reads the table).
fn has_line_table(cubin: &[u8]) -> bool {
    let find = |needle: &[u8]| cubin.windows(needle.len()).any(|w| w == needle);
    cubin.starts_with(b"\x7fELF") && (find(b".debug_line\0") || find(b".nv_debug_line_sass\0"))
}

/// The fetch thread: [`fetch`] on every context each [`FETCH_EVERY`]. The buffer CUPTI flushes
/// into on its own is read where CUPTI writes it (module load, disable, context teardown), not
/// here, so the two never race.
fn start_fetcher() {
    let spawned = std::thread::Builder::new().name("xpuprof-cupti-pc".into()).spawn(|| loop {
        std::thread::sleep(FETCH_EVERY);
        let Some(a) = agent() else { continue };
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            for c in contexts() {
                if let Ok(mut c) = c.lock() {
                    fetch(a, &mut c);
                }
            }
        }));
    });
    if let Err(e) = spawned {
        say(&format!("PC sampling: failed to start the fetch thread: {e}; samples are fetched only at window ends and exit"));
    }
}

type Shared = Arc<Mutex<Context>>;

fn contexts() -> Vec<Shared> {
    counts().contexts.iter().map(|(_, c)| c.clone()).collect()
}

/// How long a context's teardown waits for a fetch in flight.
const TEARDOWN_WAIT: Duration = Duration::from_secs(2);

/// `m`'s lock, tried until `wait` has passed.
fn lock_within(m: &Mutex<Context>, wait: Duration) -> Option<std::sync::MutexGuard<'_, Context>> {
    let deadline = std::time::Instant::now() + wait;
    loop {
        match m.try_lock() {
            Ok(g) => return Some(g),
            Err(std::sync::TryLockError::Poisoned(p)) => return Some(p.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) if std::time::Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(std::sync::TryLockError::WouldBlock) => return None,
        }
    }
}

/// Fetches every context's samples and sends them.
/// After a module load on `ctx`: what CUPTI flushed into the configured buffer (a module
/// unloaded and another loaded start a new range) is sent.
fn drain_context(a: &Agent, ctx: ffi::CUcontext) {
    let found = counts().contexts.iter().find(|(h, _)| h.0 == ctx).map(|(_, c)| c.clone());
    // Not waiting for a fetch in flight (it could wait on this module load): the buffer is read
    // again at the next window end, teardown or exit.
    let Some(c) = found else { return };
    if let Ok(mut c) = c.try_lock() {
        let (id, device) = (c.id, c.device);
        send(a, id, device, &mut c.config);
    };
}

/// Sends what CUPTI flushed into the configured buffer, then fetches until CUPTI holds nothing.
fn drain(a: &Agent, c: &mut Context) {
    send(a, c.id, c.device, &mut c.config);
    fetch(a, c);
}

/// Fetches until CUPTI holds nothing (at most [`MAX_FETCHES`] times). A call CUPTI refuses for
/// another reason than a full hardware buffer is said once and sampling stops on the context.
fn fetch(a: &Agent, c: &mut Context) {
    if !c.enabled {
        return;
    }
    for _ in 0..MAX_FETCHES {
        c.fetch.clear();
        let got = sys::get_data(&a.lib, c.handle.0, &mut c.fetch);
        let remaining = c.fetch.counts().remaining;
        send(a, c.id, c.device, &mut c.fetch);
        if let Err(e) = got {
            if e.code == cupti_sys::CUptiResult::CUPTI_ERROR_OUT_OF_MEMORY {
                counts().counts.hardware_full += 1;
            } else {
                refused(a, c.id, "cuptiPCSamplingGetData", &e);
                stop(a, c);
            }
            return;
        }
        if remaining == 0 {
            return;
        }
    }
}

/// Sends the PCs of `buf` (if it holds any, or counted samples) and marks it read.
fn send(a: &Agent, context: u32, device: u32, buf: &mut PcBuffer) {
    let n = buf.counts();
    if n.pcs == 0 && n.total_samples == 0 && n.dropped_samples == 0 && !n.hardware_full {
        return;
    }
    let header = msg::FetchHeader {
        time: xpuprof_sdk::clock::now_ns(),
        context,
        device,
        range: n.range,
        total: n.total_samples,
        dropped: n.dropped_samples,
        non_user: n.non_user_samples,
        flags: if n.hardware_full { msg::SAMPLES_HW_FULL } else { 0 },
    };
    let mut w = msg::SamplesWriter::new(&header);
    let mut reasons = Vec::new();
    for pc in buf.pcs() {
        reasons.clear();
        reasons.extend(
            pc.reasons.iter().filter(|r| r.samples > 0).map(|r| (r.pcSamplingStallReasonIndex, r.samples)),
        );
        w.pc((pc.cubin_crc, pc.pc_offset, pc.function_index, pc.correlation), pc.function, &reasons);
    }
    let mut m = Vec::new();
    w.end(&mut m);
    a.core.channel.push(Chunk::Bytes(m));
    let mut s = counts();
    s.counts.fetches += 1;
    s.counts.pcs += n.pcs as u64;
    s.counts.samples += n.total_samples;
    s.counts.dropped += n.dropped_samples;
    s.counts.hardware_full += u64::from(n.hardware_full);
    drop(s);
    buf.clear();
}

/// The samples sent so far (CUPTI's totals of every fetch).
fn samples_sent() -> u64 {
    counts().counts.samples
}

/// Disables sampling on `c` and sends what CUPTI flushed at the disable.
fn stop(a: &Agent, c: &mut Context) {
    if !c.enabled {
        return;
    }
    c.enabled = false;
    if let Err(e) = sys::disable(&a.lib, c.handle.0) {
        refused(a, c.id, "cuptiPCSamplingDisable", &e);
    }
    send(a, c.id, c.device, &mut c.config);
}

/// A window closed: every context's samples are fetched and sampling is disabled.
pub(crate) fn window_closed(a: &Agent) {
    if !a.config.opts.pc_sampling {
        return;
    }
    OPEN.store(false, Ordering::Release);
    for c in contexts() {
        if let Ok(mut c) = c.lock() {
            drain(a, &mut c);
            stop(a, &mut c);
        }
    }
}

/// A window opened: sampling is enabled and configured again on every context known (CUPTI
/// may have been detached and attached in between).
pub(crate) fn window_opened(a: &Agent) {
    if !a.config.opts.pc_sampling {
        return;
    }
    OPEN.store(true, Ordering::Release);
    for c in contexts() {
        let Ok(mut c) = c.lock() else { continue };
        if !c.enabled {
            start(a, &mut c);
        }
    }
}

/// The agent's counts, for the verbose line at exit; `None` when sampling is off.
pub(crate) fn report(a: &Agent) -> Option<String> {
    if !a.config.opts.pc_sampling {
        return None;
    }
    let c = counts().counts;
    Some(format!(
        "PC sampling: {} context(s), period 2^{} cycles, {} fetches, {} PCs, {} samples ({} dropped by the hardware, hardware buffer full {} time(s)), {} cubins ({} with line tables), {} refused call(s)",
        c.contexts, c.period, c.fetches, c.pcs, c.samples, c.dropped, c.hardware_full, c.cubins, c.cubins_with_lines, c.refused
    ))
}

/// At exit: the last samples of every context.
pub(crate) fn finish(a: &Agent) {
    window_closed(a);
}

#[cfg(test)]
mod tests {
    use super::has_line_table;

    #[test]
    fn line_tables_are_found_by_section_name() {
        assert!(has_line_table(b"\x7fELF....\0.text.k\0.debug_line\0.symtab\0"));
        assert!(has_line_table(b"\x7fELF\0.nv_debug_line_sass\0"));
        assert!(!has_line_table(b"\x7fELF\0.text.k\0.rel.debug_line_x\0"));
        assert!(!has_line_table(b"not an elf .debug_line\0"));
    }
}
