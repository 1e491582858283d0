//! The session clock: `CLOCK_MONOTONIC` nanoseconds, the clock of `bpf_ktime_get_ns`.

/// Reads the session clock.
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64).wrapping_mul(1_000_000_000).wrapping_add(ts.tv_nsec as u64)
}

/// A duration in ns for people, with a unit that keeps 3–4 significant digits (`"912 ns"`,
/// `"1.50 µs"`, `"15.30 ms"`, `"2.000 s"`): one format for every report and summary.
pub fn format_duration(ns: u64) -> String {
    let f = ns as f64;
    match ns {
        0..=999 => format!("{ns} ns"),
        1_000..=999_999 => format!("{:.2} µs", f / 1e3),
        1_000_000..=999_999_999 => format!("{:.2} ms", f / 1e6),
        _ => format!("{:.3} s", f / 1e9),
    }
}
