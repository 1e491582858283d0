//! The agent's last words, run at exit or on SIGINT/SIGTERM (hooked by the kit's
//! [`exit`](xpuprof_agent_kit::exit)): when a host is connected, close the window (flushing
//! CUPTI and the launch buffers), send the totals and the channel's losses, and wait for the
//! sender. Runs once per session; nothing without one (a dormant agent after a detach).

use xpuprof_agent_kit::channel::Chunk;
use xpuprof_agent_kit::wire::control::{WindowEdge, CAUSE_EXIT};

use crate::Agent;

/// Flushes CUPTI and the launch buffers, sends the totals and waits for the sender.
pub fn finish(a: &Agent) {
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        if !a.session.lock().map(|s| s.connected).unwrap_or(false) {
            return;
        }
        let (open, detached) = a.capture.lock().map(|c| (c.open, c.detached)).unwrap_or((false, true));
        if !detached {
            crate::pc_sampling::finish(a);
            let _ = a.lib.flush_all(crate::sys::ffi::CUpti_ActivityFlag::CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
        }
        a.core.drain_launches();
        if open {
            let mut m = Vec::new();
            WindowEdge {
                open: false,
                cause: CAUSE_EXIT,
                time: xpuprof_sdk::clock::now_ns(),
                marker: String::new(),
            }
            .encode(&mut m);
            a.core.channel.push(Chunk::Bytes(m));
        }
        if let Some(line) = a.capture.lock().ok().and_then(|c| c.report()) {
            crate::say(&line);
        }
        if let Some(line) = crate::annotations::report() {
            crate::say(&line);
        }
        if let Some(line) = crate::annotations::cost().filter(|_| a.config.common.verbose) {
            crate::say(&line);
        }
        crate::session::goodbye(a);
    }));
}
