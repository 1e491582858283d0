//! The agent's last words, run once at exit, on SIGINT/SIGTERM (the kit's
//! [`exit`](xpuprof_agent_kit::exit)) or when the tracing library finalizes the tool: flush the
//! library's buffers and the launch buffers, send the totals and the channel's losses, wait for
//! the sender.

use std::sync::Once;
use std::time::Duration;

use crate::{Agent, Tracer};

static FINISH: Once = Once::new();

/// Flushes everything, sends the totals and waits for the sender (once).
pub fn finish(a: &Agent) {
    FINISH.call_once(|| {
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            match &a.tracer {
                Tracer::Sdk(s) => s.flush(),
                Tracer::Roctracer(r) => r.flush(),
            }
            a.send_clock_pair();
            let totals = a.core.finish(Duration::from_secs(10));
            if a.config.common.verbose {
                crate::say(&a.core.summary(totals, "the tracing library"));
            }
        }));
    });
}
