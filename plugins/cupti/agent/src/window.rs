//! Capture windows: open (CUPTI subscribed, the launch callbacks and record kinds on) and
//! closed (dormant). Outside a window the agent leaves CUPTI fully detached (`cuptiFinalize`,
//! `dormant=finalize`, the default) or subscribed with everything off (`dormant=pause`, and
//! always while the program's markers decide: their callbacks must stay on).
//!
//! Who switches: the host's commands ([`crate::session`]) and the program's markers
//! ([`crate::markers`]). Everything but the marker's own switch (which must happen inside the
//! marker call) runs on one window thread, `xpuprof-cupti-win`, in order: closing a window
//! waits [`CLOSE_GRACE`] for the window's last kernels, flushes CUPTI, queues the launch sites,
//! then the [`WindowEdge`] message, so the host gets every record of a window before its end.
//!
//! CUPTI recommends calling `cuptiFinalize` from the exit of a CUDA API call: the window thread
//! turns on the driver and runtime callbacks and the next API exit on any thread finalizes
//! ([`finalize_hook`]); a process that makes no CUDA call for [`FINALIZE_WAIT`] is idle in CUDA,
//! and the window thread finalizes itself. Opening a window again subscribes, registers the
//! buffer and timestamp callbacks, and turns everything back on.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use xpuprof_agent_kit::channel::Chunk;
use xpuprof_agent_kit::wire::control::{Command, WindowEdge};

use crate::callbacks::{buffer_completed, buffer_requested, monotonic_ns, on_api};
use crate::capture::Capture;
use crate::config::Dormancy;
use crate::sys::ffi::{self, DOMAIN_DRIVER, DOMAIN_RUNTIME};
use crate::{agent, say, Agent};

/// How long a closing window waits for the kernels launched inside it to finish before the
/// flush (kernels still running after it are reported by the next window, or lost at a detach).
pub const CLOSE_GRACE: Duration = Duration::from_millis(200);
/// How long the window thread waits for a CUDA API exit to finalize CUPTI on.
pub const FINALIZE_WAIT: Duration = Duration::from_secs(1);

/// Work for the window thread.
#[derive(Debug)]
pub(crate) enum Job {
    /// A marker switched collection on its thread: flush (when it closed) and tell the host.
    Edge { open: bool, cause: u8, marker: String, time: u64 },
    /// A command of the host, read in session number `.1` (a command of an ended session, such
    /// as the detach its closed connection reads as, is ignored).
    Host(Command, u32),
    /// Detach CUPTI (a session that started paused).
    Detach,
    /// Describe the devices to session `.0` once CUDA is initialised (a session begun inside
    /// `cuInit`, [`crate::devices`]).
    Describe(u32),
}

static WORKER: OnceLock<Mutex<Sender<Job>>> = OnceLock::new();

/// Queues `job` for the window thread (started on first use).
pub(crate) fn post(job: Job) {
    let tx = WORKER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        let spawned = std::thread::Builder::new().name("xpuprof-cupti-win".into()).spawn(move || {
            for job in rx {
                let Some(a) = agent() else { continue };
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(a, job)));
            }
        });
        if let Err(e) = spawned {
            say(&format!("failed to start the window thread: {e}; capture windows do not switch"));
        }
        Mutex::new(tx)
    });
    if let Ok(tx) = tx.lock() {
        let _ = tx.send(job);
    }
}

fn run(a: &Agent, job: Job) {
    match job {
        Job::Edge { open, cause, marker, time } => edge(a, open, cause, marker, time),
        Job::Host(cmd, session) => {
            if !crate::session::is_current(a, session) {
                return;
            }
            match cmd {
                Command::Capture(on) => {
                    if let Err(e) = switch(a, on, xpuprof_agent_kit::wire::control::CAUSE_HOST) {
                        say(&e);
                    }
                }
                Command::Detach => crate::session::end(a),
                Command::Unknown(_) => {}
            }
        }
        Job::Detach => detach_cupti(a),
        Job::Describe(session) => crate::devices::describe_when_initialised(a, session),
    }
}

/// The first window of the agent's life: open from the start (a window edge says so), or
/// closed when the agent starts paused or the program's markers decide; a paused agent without
/// markers detaches CUPTI with `dormant=finalize`.
pub(crate) fn first(a: &Agent) {
    use xpuprof_agent_kit::wire::control::{CAUSE_ATTACH, CAUSE_START};
    let time = xpuprof_sdk::clock::now_ns();
    let closed = a.config.opts.paused || a.config.opts.range.is_some();
    let Ok(mut c) = a.capture.lock() else { return };
    if closed {
        let _ = c.set(&a.lib, false);
        drop(c);
        // What CUPTI wrote at the start reaches the host before CUPTI is detached: the devices'
        // descriptions, which CUPTI does not write again after a new subscription (without them
        // the host holds every later window's kernels waiting for their device).
        let _ = a.lib.flush_all(ffi::CUpti_ActivityFlag::CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
        if a.config.opts.dormant == Dormancy::Finalize && a.config.opts.range.is_none() {
            post(Job::Detach);
        }
        return;
    }
    c.open = true;
    drop(c);
    let cause = if a.late { CAUSE_ATTACH } else { CAUSE_START };
    edge(a, true, cause, String::new(), time);
}

/// A marker's switch, on the marker call's own thread: exactly the launches after an opening
/// marker and before a closing one are recorded. The rest goes to the window thread.
pub(crate) fn from_marker(a: &Agent, open: bool, cause: u8, marker: String) {
    let time = xpuprof_sdk::clock::now_ns();
    let Ok(mut c) = a.capture.lock() else { return };
    if c.open == open || (open && c.markers_done) || c.detached {
        return;
    }
    if let Err(e) = c.set(&a.lib, open) {
        drop(c);
        say(&format!("cannot {} collection at a marker: {e}", if open { "start" } else { "stop" }));
        return;
    }
    c.open = open;
    if open {
        crate::pc_sampling::window_opened(a);
    } else {
        a.core.launches.new_epoch();
        if a.config.opts.range_end == crate::config::RangeEnd::Stop {
            c.markers_done = true;
        }
    }
    drop(c);
    post(Job::Edge { open, cause, marker, time });
}

/// Opens or closes the window for the host (on the window thread); closing flushes and, with
/// `dormant=finalize` and no markers, detaches CUPTI.
pub(crate) fn switch(a: &Agent, on: bool, cause: u8) -> Result<(), String> {
    let time = xpuprof_sdk::clock::now_ns();
    let mut c = a.capture.lock().map_err(|_| "the capture state is poisoned".to_owned())?;
    if c.open == on {
        return Ok(());
    }
    if on && c.detached {
        reattach(a, &mut c).map_err(|e| format!("cannot attach CUPTI again to open a window: {e}"))?;
    }
    c.set(&a.lib, on)
        .map_err(|e| format!("cannot {} collection: {e}", if on { "resume" } else { "pause" }))?;
    c.open = on;
    if on {
        crate::pc_sampling::window_opened(a);
    } else {
        a.core.launches.new_epoch();
    }
    drop(c);
    edge(a, on, cause, String::new(), time);
    if !on && a.config.opts.dormant == Dormancy::Finalize && a.config.opts.range.is_none() {
        detach_cupti(a);
    }
    Ok(())
}

/// Queues the window edge; a closing one first waits for the window's kernels, flushes CUPTI
/// and queues the launch sites.
fn edge(a: &Agent, open: bool, cause: u8, marker: String, time: u64) {
    if !open {
        std::thread::sleep(CLOSE_GRACE);
        let detached = a.capture.lock().map(|c| c.detached).unwrap_or(true);
        if !detached {
            crate::pc_sampling::window_closed(a);
            let _ = a.lib.flush_all(ffi::CUpti_ActivityFlag::CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
        }
        a.core.drain_launches();
    }
    let mut m = Vec::new();
    WindowEdge { open, cause, time, marker }.encode(&mut m);
    a.core.channel.push(Chunk::Bytes(m));
}

/// Subscribes again after a detach and restores what the agent registered at start.
fn reattach(a: &Agent, c: &mut Capture) -> Result<(), crate::sys::CuptiError> {
    let lib = &a.lib;
    let sub = lib.subscribe(on_api)?;
    lib.register_buffers(buffer_requested, buffer_completed)?;
    if a.monotonic {
        lib.register_timestamp(monotonic_ns)?;
    }
    lib.use_system_thread_ids()?;
    let _ = lib
        .set_size_attribute(ffi::CUpti_ActivityAttribute::CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, 32 << 20);
    c.resubscribed(lib, sub)
}

/// 0: no detach under way; 1: requested (the next API exit finalizes); 2: finalizing; 3: done;
/// 4: CUPTI refused (it stays subscribed, paused); 5: arming (callbacks being turned on: they
/// do nothing yet, so no CUPTI call races with the window thread's).
static FINALIZE: AtomicU8 = AtomicU8::new(0);

/// Detaches CUPTI (`cuptiFinalize`) from an API exit, or from here when the process makes no
/// CUDA call for [`FINALIZE_WAIT`]. Nothing when a window is open or CUPTI is detached already.
pub(crate) fn detach_cupti(a: &Agent) {
    {
        let Ok(c) = a.capture.lock() else { return };
        let Some(sub) = c.subscriber().filter(|_| !c.open) else { return };
        FINALIZE.store(5, Ordering::SeqCst);
        for d in [DOMAIN_DRIVER, DOMAIN_RUNTIME] {
            let _ = a.lib.set_domain(true, sub, d as u32);
        }
        FINALIZE.store(1, Ordering::SeqCst);
    }
    let deadline = Instant::now() + FINALIZE_WAIT;
    while FINALIZE.load(Ordering::SeqCst) == 1 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    if FINALIZE.compare_exchange(1, 2, Ordering::SeqCst, Ordering::SeqCst).is_ok() {
        finalize_now(a);
    }
    while FINALIZE.load(Ordering::SeqCst) == 2 {
        std::thread::sleep(Duration::from_millis(1));
    }
    if let Ok(mut c) = a.capture.lock() {
        if FINALIZE.load(Ordering::SeqCst) == 3 {
            c.finalized();
        } else if let Some(sub) = c.subscriber() {
            for d in [DOMAIN_DRIVER, DOMAIN_RUNTIME] {
                let _ = a.lib.set_domain(false, sub, d as u32);
            }
        }
    }
    FINALIZE.store(0, Ordering::SeqCst);
}

fn finalize_now(a: &Agent) {
    let done = match a.lib.finalize() {
        Ok(()) => {
            crate::state::detached_now();
            3
        }
        Err(e) => {
            say(&format!("cannot detach CUPTI (it stays attached, paused): {e}"));
            4
        }
    };
    FINALIZE.store(done, Ordering::SeqCst);
}

/// At every callback: true while a detach is under way (the callback does nothing else); the
/// first driver or runtime API exit after the request finalizes CUPTI.
pub(crate) fn finalize_hook(a: &Agent, api_exit: bool) -> bool {
    match FINALIZE.load(Ordering::Relaxed) {
        0 => false,
        1 if api_exit => {
            if FINALIZE.compare_exchange(1, 2, Ordering::SeqCst, Ordering::SeqCst).is_ok() {
                finalize_now(a);
            }
            true
        }
        _ => true,
    }
}
