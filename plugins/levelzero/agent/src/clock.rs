//! Host clocks as the agent reads them: `CLOCK_MONOTONIC` (the session clock) for API calls,
//! `CLOCK_MONOTONIC_RAW` (the clock Intel's driver pairs device ticks with) for clock pairs.

use xpuprof_levelzero_wire::Msg;

fn clock(id: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes into a valid timespec.
    unsafe { libc::clock_gettime(id, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// `CLOCK_MONOTONIC` ns: the session clock.
pub fn mono() -> u64 {
    clock(libc::CLOCK_MONOTONIC)
}

/// `CLOCK_MONOTONIC_RAW` ns: the host clock Intel's driver pairs device ticks with.
pub fn raw() -> u64 {
    clock(libc::CLOCK_MONOTONIC_RAW)
}

/// A `CLOCK_MONOTONIC_RAW` / `CLOCK_MONOTONIC` pair (raw read on both sides, averaged).
pub fn host_pair() -> Msg {
    let r0 = raw();
    let m = mono();
    let r1 = raw();
    Msg::HostClock { raw: r0 + (r1 - r0) / 2, mono: m }
}

/// The calling thread's kernel id.
pub fn tid() -> u32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() as u32 }
}
