//! What the agent is doing right now, for the program (or a benchmark) that wants to know:
//! `xpuprof_cupti_state()` says whether CUPTI is detached (dormant), subscribed with collection
//! paused, or collecting, and `xpuprof_cupti_detached_ns()` when CUPTI was last detached
//! (`CLOCK_MONOTONIC`, the session clock). A process that was attached to finds the agent in its
//! maps (`libxpuprof_cupti_agent.so`); one started under `xpuprof record` through
//! `CUDA_INJECTION64_PATH`. The dormancy benchmark (`tests/workloads/torch/dormant_bench.py`)
//! uses them to check the state it times and how long after a window's end CUPTI was detached.

use std::os::raw::c_int;
use std::sync::atomic::{AtomicU64, Ordering};

/// When CUPTI was last detached; 0 when it never was.
static DETACHED_AT: AtomicU64 = AtomicU64::new(0);

/// Notes that CUPTI was detached just now ([`crate::window`]'s `cuptiFinalize`).
pub(crate) fn detached_now() {
    DETACHED_AT.store(xpuprof_sdk::clock::now_ns(), Ordering::SeqCst);
}

/// The agent's state: -1 when it is not running (it failed to start, or CUDA has not loaded
/// it), 0 when CUPTI is detached (dormant: nothing of CUPTI runs on the program's CUDA calls),
/// 1 when CUPTI is subscribed with collection paused, 2 while collecting.
#[no_mangle]
pub extern "C" fn xpuprof_cupti_state() -> c_int {
    let Some(a) = crate::agent() else { return -1 };
    let Ok(c) = a.capture.lock() else { return -1 };
    if c.detached || c.subscriber().is_none() {
        0
    } else if c.collecting() {
        2
    } else {
        1
    }
}

/// When CUPTI was last detached (`cuptiFinalize`), in `CLOCK_MONOTONIC` nanoseconds; 0 when it
/// never was.
#[no_mangle]
pub extern "C" fn xpuprof_cupti_detached_ns() -> u64 {
    DETACHED_AT.load(Ordering::SeqCst)
}
