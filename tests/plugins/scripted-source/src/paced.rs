//! The paced mode: the script's rounds emitted on a clock, as a node's agents deliver launches.
//!
//! Round `r` is due `r * 6 / rate` seconds after the start (6 launches per device per round).
//! When the host does not take records as fast (its source queue full, so `emit` blocks), the
//! source falls behind its clock; like an in-target agent whose buffer holds [`AGENT_BUFFER`] of
//! work, what is due more than that long ago is dropped and counted in a `Loss` record (in
//! launches), never silently.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use xpuprof_sdk::prelude::*;

use crate::script::Script;

/// How far the simulated agents may lag their clock before they drop (their buffer's worth).
pub const AGENT_BUFFER: Duration = Duration::from_millis(500);

/// Launches per round and device.
const LAUNCHES_PER_ROUND: u64 = 6;

/// The emitting thread of a paced source.
#[derive(Debug)]
pub struct Paced {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<()>,
}

impl Paced {
    /// Starts emitting `rounds` rounds on `devices` devices at `rate` launches/s per device.
    pub fn start(mut e: Emitter, rounds: u64, devices: u32, rate: u64) -> PluginResult<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        // Named, so that a benchmark can tell its CPU time from the host's (/proc/PID/task).
        let thread = std::thread::Builder::new()
            .name("scripted-paced".into())
            .spawn(move || {
                run(&mut e, rounds, devices, rate, &flag);
                e.flush();
                // Alive until `stop`, so that its CPU time can be read apart until the end.
                while !flag.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(10));
                }
            })
            .map_err(|e| PluginError::new(format!("cannot start the paced source thread: {e}")))?;
        Ok(Self { stop, thread })
    }

    /// Stops emitting (rounds not yet due are not produced) and waits for the thread.
    pub fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.thread.join();
    }
}

fn run(e: &mut Emitter, rounds: u64, devices: u32, rate: u64, stop: &AtomicBool) {
    let interval = Duration::from_secs_f64(LAUNCHES_PER_ROUND as f64 / rate as f64);
    let mut s = Script::start(e, devices);
    let t0 = Instant::now();
    let mut round = 0;
    while round < rounds && !stop.load(Ordering::Relaxed) {
        let due = t0 + interval.mul_f64(round as f64);
        let now = Instant::now();
        if now < due {
            s.flush_if_due();
            // Sleeping a millisecond at least: the rounds due meanwhile go out in one burst.
            std::thread::sleep((due - now).max(Duration::from_millis(1)));
            continue;
        }
        let late = now - due;
        if late > AGENT_BUFFER {
            // The rounds due before (now - buffer) no longer fit in the agents' buffers.
            let over = ((late - AGENT_BUFFER).as_secs_f64() / interval.as_secs_f64()) as u64;
            let over = over.clamp(1, rounds - round);
            s.loss(
                round,
                over * LAUNCHES_PER_ROUND * u64::from(devices),
                "scripted agent buffer full (host behind)",
            );
            round += over;
            continue;
        }
        s.round(round);
        round += 1;
    }
    s.finish(round);
}
