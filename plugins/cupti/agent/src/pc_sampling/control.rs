//! PC sampling switched by the program, for benchmarks that compare settings in one process:
//! `xpuprof_cupti_pc_sampling(period)` chooses the sampling of the windows that open after it
//! (off, CUPTI's default period, or 2^N cycles) and `xpuprof_cupti_pc_samples()` reads how many
//! samples the agent has sent. The cost benchmark (`tests/workloads/torch/pc_cost.py`) pauses
//! collection with `xpuprof_cupti_capture(0)`, sets the next window's sampling here, and opens
//! the window with `xpuprof_cupti_capture(1)`: every setting runs in the same process, next to
//! paused windows. Only an agent started with `pc_sampling=1` samples at all.

use std::os::raw::c_int;
use std::sync::atomic::{AtomicI32, Ordering};

/// The sampling the next window takes: [`FROM_CONFIG`], [`OFF`], 0 (CUPTI's default period) or
/// N of 2^N cycles.
static WANTED: AtomicI32 = AtomicI32::new(FROM_CONFIG);
/// No choice made: the agent's `pc_sampling_period`.
const FROM_CONFIG: i32 = i32::MIN;
/// Windows take no PC samples (the rest of collection goes on).
const OFF: i32 = -1;

/// What a window opened now samples with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Wanted {
    /// No samples in this window.
    Off,
    /// Samples at `Some(N)`: 2^N cycles, or `None`: CUPTI's default period.
    Period(Option<u32>),
}

/// The sampling of the next window, given the agent's configured period (0: CUPTI's default).
pub(super) fn wanted(configured: u32) -> Wanted {
    decide(WANTED.load(Ordering::Acquire), configured)
}

fn decide(choice: i32, configured: u32) -> Wanted {
    match choice {
        FROM_CONFIG => Wanted::Period(Some(configured).filter(|&p| p != 0)),
        OFF => Wanted::Off,
        0 => Wanted::Period(None),
        n => Wanted::Period(u32::try_from(n).ok()),
    }
}

/// Whether `period` is a choice [`xpuprof_cupti_pc_sampling`] accepts.
fn valid(period: c_int) -> bool {
    period == OFF || period == 0 || (5..=31).contains(&period)
}

/// Chooses the PC sampling of the windows opened from now on: `period` -1 takes no samples, 0
/// samples at CUPTI's default period, 5 to 31 every 2^`period` cycles on each SM. A window open
/// now keeps its sampling until it closes (pause with `xpuprof_cupti_capture(0)` first).
/// Returns 0, or -1 if the agent is not running, was started without `pc_sampling=1`, or
/// `period` is none of those.
#[no_mangle]
pub extern "C" fn xpuprof_cupti_pc_sampling(period: c_int) -> c_int {
    let Some(a) = crate::agent() else { return -1 };
    if !a.config.opts.pc_sampling || !valid(period) {
        return -1;
    }
    WANTED.store(period, Ordering::Release);
    0
}

/// PC samples the agent has sent to the host so far (CUPTI's totals of every fetch, dropped
/// ones included); all of a window's samples are counted once `xpuprof_cupti_capture(0)` has
/// returned. 0 when sampling is off or the agent is not running.
#[no_mangle]
pub extern "C" fn xpuprof_cupti_pc_samples() -> u64 {
    if crate::agent().is_none() {
        return 0;
    }
    super::samples_sent()
}

#[cfg(test)]
mod tests {
    use super::{decide, valid, Wanted, FROM_CONFIG, OFF};

    #[test]
    fn the_next_window_samples_as_chosen_or_as_configured() {
        assert_eq!(decide(FROM_CONFIG, 0), Wanted::Period(None), "CUPTI's default");
        assert_eq!(decide(FROM_CONFIG, 18), Wanted::Period(Some(18)));
        assert_eq!(decide(OFF, 18), Wanted::Off);
        assert_eq!(decide(0, 18), Wanted::Period(None));
        assert_eq!(decide(13, 0), Wanted::Period(Some(13)));
    }

    #[test]
    fn only_off_default_and_cuptis_periods_are_accepted() {
        for p in [-1, 0, 5, 11, 31] {
            assert!(valid(p), "{p}");
        }
        for p in [-2, 1, 4, 32, i32::MIN] {
            assert!(!valid(p), "{p}");
        }
    }
}
