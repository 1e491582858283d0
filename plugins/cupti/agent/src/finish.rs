//! The agent's last words, run once at exit or on SIGINT/SIGTERM (hooked by the kit's
//! [`exit`](xpuprof_agent_kit::exit)): flush CUPTI and the launch buffers, send the totals and
//! the channel's losses, and wait for the sender.

use std::sync::atomic::Ordering;
use std::sync::Once;
use std::time::Duration;

use xpuprof_agent_kit::channel::Chunk;
use xpuprof_agent_kit::wire;

use crate::Agent;

static FINISH: Once = Once::new();

/// Flushes CUPTI and the launch buffers, sends the totals and waits for the sender (once).
pub fn finish(a: &Agent) {
    FINISH.call_once(|| {
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _ = a.lib.flush_all(crate::sys::ffi::CUpti_ActivityFlag::CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
            crate::drain_launches(a);
            let mut m = Vec::new();
            if let Ok(n) = a.lib.dropped(std::ptr::null_mut(), 0) {
                if n > 0 {
                    wire::put_dropped(&mut m, n as u64, xpuprof_sdk::clock::now_ns());
                }
            }
            a.launches.python.put_counts(&mut m);
            if !m.is_empty() {
                a.channel.push(Chunk::Bytes(m));
            }
            if let Some(line) = a.capture.lock().ok().and_then(|c| c.report()) {
                crate::say(&line);
            }
            let (launches, stacks) = a.launches.totals();
            let sender = a.sender.lock().ok().and_then(|mut s| s.take());
            a.channel.goodbye(launches, stacks, sender, Duration::from_secs(10));
            if a.config.common.verbose {
                crate::say(&format!(
                    "{launches} launch sites, {stacks} distinct stacks, {} bytes sent, {} records dropped by CUPTI",
                    a.channel.written.load(Ordering::Relaxed),
                    a.dropped.load(Ordering::Relaxed)
                ));
            }
        }));
    });
}
