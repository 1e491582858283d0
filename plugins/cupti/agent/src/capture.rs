//! Pausing and resuming collection while the program runs: `xpuprof_cupti_capture(0)` turns
//! off every launch callback and record kind the agent turned on, `xpuprof_cupti_capture(1)`
//! turns them back on. While paused CUPTI has nothing enabled for this agent, so the program's
//! CUDA calls run as they would without a profiler (CUPTI stays loaded and subscribed).
//!
//! A program (or a benchmark) calls it through the agent's path, which the host puts in
//! `CUDA_INJECTION64_PATH`: from Python,
//! `ctypes.CDLL(os.environ["CUDA_INJECTION64_PATH"]).xpuprof_cupti_capture(0)`. The B2 benchmark
//! uses it to time the same process's steps with and without the profiler in adjacent windows
//! (`plugins/cupti/tests/workloads/transformer_bench.py`, mode `ab`).

use std::os::raw::c_int;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::sys::{ffi, CuptiError, Lib};

/// What the agent turned on at start, to turn off and on again.
#[derive(Debug, Default)]
pub struct Capture {
    sub: Option<Subscriber>,
    callbacks: Vec<(u32, u32)>,
    kinds: Vec<u32>,
    /// Marker callbacks (`cuProfilerStart`/`Stop`, NVTX ranges): on while subscribed, windows
    /// or not ([`crate::markers`]).
    markers: Vec<(u32, u32)>,
    /// A capture window is open ([`crate::window`]).
    pub(crate) open: bool,
    /// CUPTI is detached (`cuptiFinalize`): opening a window subscribes again.
    pub(crate) detached: bool,
    /// Marker windows end for good (`range_end=stop` after the first one).
    pub(crate) markers_done: bool,
    /// `xpuprof_cupti_capture` paused collection at least once (windows are reported by the
    /// host, not by [`Capture::report`]).
    by_function: bool,
    /// Pauses so far, when the current one began (`Some` while paused), and the time paused
    /// before it.
    pauses: u32,
    since: Option<Instant>,
    paused_for: Duration,
}

/// CUPTI's subscriber handle: an opaque pointer CUPTI accepts from any thread.
#[derive(Debug, Clone, Copy)]
struct Subscriber(ffi::CUpti_SubscriberHandle);

// SAFETY: the handle is an opaque token passed back to CUPTI, whose calls take it from any thread.
unsafe impl Send for Subscriber {}

impl Capture {
    /// Remembers the subscriber the callbacks below belong to.
    pub fn subscribed(&mut self, sub: ffi::CUpti_SubscriberHandle) {
        self.sub = Some(Subscriber(sub));
    }

    /// Turns on the callback `(domain, cbid)` and remembers it.
    pub fn enable_callback(&mut self, lib: &Lib, domain: u32, cbid: u32) -> Result<(), CuptiError> {
        let Some(s) = self.sub else { return Ok(()) };
        lib.set_callback(true, s.0, domain, cbid)?;
        self.callbacks.push((domain, cbid));
        Ok(())
    }

    /// Turns on the marker callback `(domain, cbid)` and remembers it.
    pub fn enable_marker(&mut self, lib: &Lib, domain: u32, cbid: u32) -> Result<(), CuptiError> {
        let Some(s) = self.sub else { return Ok(()) };
        lib.set_callback(true, s.0, domain, cbid)?;
        self.markers.push((domain, cbid));
        Ok(())
    }

    /// Collection is on (not paused by a window's end or `xpuprof_cupti_capture(0)`).
    pub(crate) fn collecting(&self) -> bool {
        self.since.is_none()
    }

    /// The subscriber, while subscribed.
    pub(crate) fn subscriber(&self) -> Option<ffi::CUpti_SubscriberHandle> {
        self.sub.map(|s| s.0)
    }

    /// CUPTI was detached: the subscriber is gone; collection counts as paused.
    pub(crate) fn finalized(&mut self) {
        self.sub = None;
        self.detached = true;
        self.since.get_or_insert_with(Instant::now);
    }

    /// CUPTI attached again under subscriber `sub`: the marker callbacks go back on (the
    /// launch callbacks and record kinds with the next [`Capture::set`]).
    pub(crate) fn resubscribed(
        &mut self,
        lib: &Lib,
        sub: ffi::CUpti_SubscriberHandle,
    ) -> Result<(), CuptiError> {
        self.sub = Some(Subscriber(sub));
        self.detached = false;
        for &(d, c) in &self.markers {
            lib.set_callback(true, sub, d, c)?;
        }
        Ok(())
    }

    /// Turns on the record kind and remembers it.
    pub fn enable_kind(&mut self, lib: &Lib, kind: u32) -> Result<(), CuptiError> {
        lib.activity_enable(kind)?;
        self.kinds.push(kind);
        Ok(())
    }

    /// Pauses (`on = false`) or resumes collection; returns whether it was on before. Callbacks
    /// go off before the record kinds and come back after them, so no launch site is recorded
    /// while its kernel's record kind is off.
    pub fn set(&mut self, lib: &Lib, on: bool) -> Result<bool, CuptiError> {
        let was_on = self.since.is_none();
        if on == was_on {
            return Ok(was_on);
        }
        let Some(s) = self.sub else { return Ok(was_on) };
        if on {
            for &k in &self.kinds {
                lib.activity_enable(k)?;
            }
            for &(d, c) in &self.callbacks {
                lib.set_callback(true, s.0, d, c)?;
            }
            self.paused_for += self.since.take().map_or(Duration::ZERO, |t| t.elapsed());
        } else {
            for &(d, c) in &self.callbacks {
                lib.set_callback(false, s.0, d, c)?;
            }
            for &k in &self.kinds {
                lib.activity_disable(k)?;
            }
            self.pauses += 1;
            self.since = Some(Instant::now());
        }
        Ok(was_on)
    }

    /// How often and how long collection was paused, for the user; `None` if it never was.
    pub fn report(&self) -> Option<String> {
        if self.pauses == 0 || !self.by_function {
            return None;
        }
        let total = self.paused_for + self.since.map_or(Duration::ZERO, |t| t.elapsed());
        Some(format!(
            "collection was paused {} time{} by xpuprof_cupti_capture, {:.2} s in all: launches made while paused are not in the profile",
            self.pauses,
            if self.pauses == 1 { "" } else { "s" },
            total.as_secs_f64()
        ))
    }
}

/// The agent's capture state.
pub(crate) type State = Mutex<Capture>;

/// Pauses (`on == 0`) or resumes (`on != 0`) collection. Returns 1 if collection was on before
/// the call, 0 if it was paused, and -1 if the agent is not running or CUPTI refused (the
/// reason goes to stderr).
#[no_mangle]
pub extern "C" fn xpuprof_cupti_capture(on: c_int) -> c_int {
    let Some(a) = crate::agent() else { return -1 };
    let Ok(mut c) = a.capture.lock() else { return -1 };
    c.by_function = true;
    match c.set(&a.lib, on != 0) {
        Ok(was_on) => {
            if was_on && on == 0 {
                a.core.launches.new_epoch();
                crate::pc_sampling::window_closed(a);
            } else if !was_on && on != 0 {
                crate::pc_sampling::window_opened(a);
            }
            c_int::from(was_on)
        }
        Err(e) => {
            crate::say(&format!("cannot {} collection: {e}", if on != 0 { "resume" } else { "pause" }));
            -1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Capture;

    #[test]
    fn reports_pauses_only_when_there_were_some() {
        let mut c = Capture::default();
        assert_eq!(c.report(), None);
        c.pauses = 2;
        assert_eq!(c.report(), None, "windows alone are not reported here");
        c.by_function = true;
        let line = c.report().unwrap();
        assert!(line.starts_with("collection was paused 2 times"), "{line}");
        assert!(line.contains("not in the profile"), "{line}");
    }
}
