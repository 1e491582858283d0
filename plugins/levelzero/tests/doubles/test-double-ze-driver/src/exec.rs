//! Execution at submit: a command runs when an immediate list appends it or a queue executes
//! its regular list. Device time is virtual: each device's engine is busy until a tick, the next
//! command starts at `max(now, busy)` and lasts its scripted duration, so timestamps are exact.

use crate::state::{driver, monotonic_raw, obj, Action, Command, Device, Event};

/// Runs `cmd` on `device` now.
pub fn run(device: &Device, cmd: &Command) {
    let d = driver();
    let mut busy = device.busy_until.lock().expect("busy lock");
    let start = d.ticks_at(monotonic_raw()).max(*busy);
    let end = start + d.ticks_of(cmd.ns);
    *busy = end;
    drop(busy);
    match &cmd.action {
        Action::None => {}
        Action::Copy { dst, src, len } => {
            // SAFETY: the application gave these ranges to zeCommandListAppendMemoryCopy; a real
            // device would access them the same way.
            unsafe { std::ptr::copy(*src as *const u8, *dst as *mut u8, *len) };
        }
        Action::Fill { dst, pattern, len } => {
            for i in 0..*len {
                // SAFETY: the application gave this range to zeCommandListAppendMemoryFill.
                unsafe { *(*dst as *mut u8).add(i) = pattern[i % pattern.len().max(1)] };
            }
        }
        Action::Reset(ev) => {
            // SAFETY: `ev` is an event handle the application passed to zeCommandListAppendEventReset.
            let e: &Event = unsafe { obj(*ev as *mut u8) };
            *e.state.lock().expect("event lock") = Default::default();
        }
    }
    if cmd.signal != 0 {
        // SAFETY: `signal` is an event handle the application passed with the command.
        let e: &Event = unsafe { obj(cmd.signal as *mut u8) };
        signal(e, cmd.signal, start, end);
    }
}

/// Signals `e` with the command's ticks (only events of timestamp pools keep them).
pub fn signal(e: &Event, handle: usize, start: u64, end: u64) {
    let d = driver();
    let mask = d.script.mask();
    let mut s = e.state.lock().expect("event lock");
    s.signaled = true;
    s.visible = !d.script.complete_at_sync;
    s.ts = e.timestamps.then_some((start & mask, end & mask));
    drop(s);
    if d.script.complete_at_sync {
        d.pending.lock().expect("pending lock").push(handle);
    }
}

/// A host synchronisation: every signalled event becomes visible (`complete=sync`).
pub fn host_sync() {
    let pending = std::mem::take(&mut *driver().pending.lock().expect("pending lock"));
    for h in pending {
        // SAFETY: pending holds handles of events that were signalled; events destroyed before
        // a sync are removed from it by zeEventDestroy.
        let e: &Event = unsafe { obj(h as *mut u8) };
        e.state.lock().expect("event lock").visible = true;
    }
}

/// Forgets `handle` (the event is being destroyed).
pub fn forget(handle: usize) {
    driver().pending.lock().expect("pending lock").retain(|&h| h != handle);
}
