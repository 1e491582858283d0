//! Sessions: one connection to one xpuprof host. The first starts with the agent (at `cuInit`
//! under `xpuprof record`, or at a late attach); when the host ends it (a detach command, or
//! its connection closes) the agent flushes, says goodbye, closes the connection and stays
//! loaded, dormant. A later `xpuprof attach` calls [`xpuprof_cupti_attach`] again (the injector
//! finds the agent in the process's maps and only calls it): the agent connects to the new
//! host, sends its hello, module map, API names and every stack and Python frame again, and
//! opens a window.
//!
//! `xpuprof_cupti_attach` runs on the thread the injector stopped: it copies its arguments,
//! starts the `xpuprof-cupti-attach` thread and returns at once; CUPTI is set up there.

use std::ffi::CStr;
use std::os::raw::{c_char, c_int};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use xpuprof_agent_kit::channel::{Chunk, Outputs};
use xpuprof_agent_kit::wire;
use xpuprof_agent_kit::wire::control::CAUSE_ATTACH;

use crate::config::Config;
use crate::{say, window, Agent, AGENT};

/// The agent's connection to its current host.
#[derive(Debug, Default)]
pub struct Session {
    /// Connected to a host.
    pub connected: bool,
    /// Sessions so far.
    pub count: u32,
    /// The connection, to shut down at the end (the control thread reads a clone).
    control: Option<UnixStream>,
}

/// Called in a running process by the injector (`xpuprof attach`): connects to the host at
/// `socket` with the options `opts` (`XPUPROF_CUPTI_OPTS`' format) and starts recording. Returns
/// 0 when the attach thread started (the outcome reaches the host through the socket), -1
/// otherwise.
///
/// # Safety
/// `socket` and `opts` are NUL-terminated strings (or null), valid for the call.
#[no_mangle]
pub unsafe extern "C" fn xpuprof_cupti_attach(socket: *const c_char, opts: *const c_char) -> c_int {
    let read = |p: *const c_char| {
        // SAFETY: the caller's contract.
        (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
    };
    let (Some(socket), opts) = (read(socket), read(opts).unwrap_or_default()) else { return -1 };
    let spawned = std::thread::Builder::new().name("xpuprof-cupti-attach".into()).spawn(move || {
        let _ = std::panic::catch_unwind(|| attach(&socket, &opts));
    });
    if spawned.is_ok() {
        0
    } else {
        -1
    }
}

fn attach(socket: &str, opts: &str) {
    let mut config = Config::new(crate::config::DEFAULT_DEPTH);
    if let Err(e) = config.parse_opts(opts) {
        refuse(socket, &format!("bad options from the host: {e}"));
        return;
    }
    match AGENT.get() {
        Some(Some(a)) => {
            if let Err(e) = reconnect(a, socket, config.opts.paused) {
                refuse(socket, &e);
            }
        }
        Some(None) => {
            refuse(socket, "the agent failed to start earlier in this process; it cannot attach again")
        }
        None if crate::sys::cuda_initialised() == Some(false) => refuse(
            socket,
            "CUDA is not initialised in this process yet (no CUDA call so far): nothing to record; \
             attach once it uses the GPU",
        ),
        None => {
            config.common.socket = Some(socket.to_owned());
            crate::ensure_started_with(config, true);
        }
    }
}

/// Tells the host at `socket` why this process is not recorded.
fn refuse(socket: &str, msg: &str) {
    match Outputs::connect(Some(socket), None, "cupti") {
        Ok(out) => crate::start::send_error_now(out, msg),
        Err(_) => say(msg),
    }
}

/// Starts session number `count + 1` on `outputs`: hello, module map, API names (and a clock
/// pair), the devices' descriptions ([`crate::devices`]), the sender and the control thread.
pub(crate) fn begin(a: &'static Agent, outputs: Outputs) -> Result<(), String> {
    let mut s = a.session.lock().map_err(|_| "poisoned")?;
    if s.connected {
        return Err("this process is already recorded by another xpuprof session".into());
    }
    if s.count > 0 {
        a.core.channel.reopen();
        a.core.launches.new_session();
        if let Ok(mut f) = crate::activity::FRAMER.lock() {
            *f = None;
        }
    }
    let mut first = Vec::new();
    if !a.monotonic {
        crate::start::clock_pair(a, &mut first);
    }
    if let Ok(names) = a.api_names.lock() {
        first.extend_from_slice(&names);
    }
    // The devices, described from the driver (CUPTI's own description may come only at the
    // end): at once where CUDA is up, else from the window thread after `cuInit`.
    let describe_later = a.config.opts.devices && !a.late && s.count == 0;
    if a.config.opts.devices && !describe_later {
        crate::devices::put_all(a, &mut first);
    }
    a.core.hello(&wire::Hello::new(a.version, a.hello_flags), &first);
    let control = outputs.control();
    a.core.start_sender("xpuprof-cupti", outputs, || {
        if let Some(a) = crate::agent() {
            a.core.drain_launches();
        }
    })?;
    let number = s.count + 1;
    if let Some(c) = control.as_ref().and_then(|c| c.try_clone().ok()) {
        xpuprof_agent_kit::control::spawn("cupti", c, move |cmd| {
            window::post(window::Job::Host(cmd, number))
        })
        .map_err(|e| format!("failed to start the control thread: {e}"))?;
    }
    s.control = control;
    s.connected = true;
    s.count += 1;
    drop(s);
    if describe_later {
        window::post(window::Job::Describe(number));
    }
    Ok(())
}

/// True when session `number` is the connected one.
pub(crate) fn is_current(a: &Agent, number: u32) -> bool {
    a.session.lock().is_ok_and(|s| s.connected && s.count == number)
}

fn reconnect(a: &'static Agent, socket: &str, paused: bool) -> Result<(), String> {
    let outputs = Outputs::connect(Some(socket), None, "cupti")?;
    begin(a, outputs)?;
    if !paused {
        window::switch(a, true, CAUSE_ATTACH)?;
    }
    Ok(())
}

/// Ends the session (the host's detach, or its connection closed): closes the window, flushes,
/// says goodbye, closes the connection, and leaves CUPTI detached.
pub(crate) fn end(a: &Agent) {
    if !a.session.lock().map(|s| s.connected).unwrap_or(false) {
        return;
    }
    if let Err(e) = window::switch(a, false, CAUSE_ATTACH) {
        say(&e);
    }
    if let Ok(mut c) = a.capture.lock() {
        c.markers_done = true;
    }
    goodbye(a);
    if a.config.opts.dormant == crate::config::Dormancy::Finalize {
        window::detach_cupti(a);
    }
}

/// Sends CUPTI's drops, then the kit's last words (pending launch sites, Python counts, the
/// totals and the goodbye; waits for the sender), and closes the connection (once per session;
/// at exit too).
pub(crate) fn goodbye(a: &Agent) {
    let control = {
        let Ok(mut s) = a.session.lock() else { return };
        if !s.connected {
            return;
        }
        s.connected = false;
        s.control.take()
    };
    if a.capture.lock().is_ok_and(|c| !c.detached) {
        if let Some(n) = a.lib.dropped(std::ptr::null_mut(), 0).ok().filter(|&n| n > 0) {
            let mut m = Vec::new();
            wire::put_dropped(&mut m, n as u64, xpuprof_sdk::clock::now_ns());
            a.core.channel.push(Chunk::Bytes(m));
        }
    }
    let totals = a.core.finish(Duration::from_secs(10));
    if let Some(c) = control {
        let _ = c.shutdown(std::net::Shutdown::Both);
    }
    if a.config.common.verbose {
        say(&a.core.summary(totals, "CUPTI"));
        if let Some(line) = crate::pc_sampling::report(a) {
            say(&line);
        }
    }
}
