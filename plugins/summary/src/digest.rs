//! The five-line digest printed to stderr when the sink finishes: totals, GPU busy share, top
//! kernels (or CPU functions for a CPU-only run), losses, and device memory left allocated at
//! exit with where the full report is.

use std::path::PathBuf;

use crate::fmt::{bytes, ns, pct};
use crate::report::Summary;

/// Items listed per digest line.
const TOP: usize = 3;
/// Longest name shown in the digest (longer ones are cut with `...`).
const NAME_CHARS: usize = 40;

/// `name`, cut to [`NAME_CHARS`] characters.
fn short(name: &str) -> String {
    if name.chars().count() <= NAME_CHARS {
        return name.to_owned();
    }
    let mut s: String = name.chars().take(NAME_CHARS - 3).collect();
    s.push_str("...");
    s
}

/// The digest, exactly five lines (no trailing newlines).
pub fn lines(s: &Summary, files: &[PathBuf]) -> [String; 5] {
    [totals(s), busy(s), top(s), losses(s), leaks(s, files)]
}

fn totals(s: &Summary) -> String {
    let launches: u64 = s.kernels.iter().map(|k| k.launches).sum();
    let gpu: u64 = s.kernels.iter().map(|k| k.time.total_ns).sum();
    let calls: u64 = s.api.iter().map(|a| a.calls).sum();
    let errors: u64 = s.api.iter().map(|a| a.errors).sum();
    format!(
        "summary: {launches} kernel runs, {} GPU time; {calls} API calls ({errors} failed); session {}",
        ns(gpu),
        ns(s.session.duration_ns)
    )
}

fn busy(s: &Summary) -> String {
    if s.devices.is_empty() {
        return "GPU busy: no kernels recorded".to_owned();
    }
    let parts: Vec<String> = s
        .devices
        .iter()
        .take(TOP)
        .map(|d| format!("device {} {} ({} idle gaps)", d.device_index, pct(d.busy_pct), d.idle_gaps))
        .collect();
    let more = s.devices.len().saturating_sub(TOP);
    let tail = if more > 0 { format!(", +{more} more") } else { String::new() };
    format!("GPU busy: {}{tail}", parts.join(", "))
}

fn top(s: &Summary) -> String {
    if !s.kernels.is_empty() {
        let parts: Vec<String> = s
            .kernels
            .iter()
            .take(TOP)
            .map(|k| format!("{} {}", short(&k.name), pct(k.gpu_time_pct)))
            .collect();
        return format!("top kernels: {}", parts.join(", "));
    }
    let cpu = &s.cpu.on_cpu;
    if cpu.samples > 0 {
        let parts: Vec<String> = cpu
            .hot_functions
            .iter()
            .take(TOP)
            .map(|f| format!("{} {}", short(&f.function), pct(f.self_pct)))
            .collect();
        return format!("top CPU functions (self): {}", parts.join(", "));
    }
    "top kernels: none recorded".to_owned()
}

fn losses(s: &Summary) -> String {
    let o = &s.xpuprof;
    let unmatched = format!("; unmatched device ops: {}", o.unmatched_device_ops);
    if o.losses.is_empty() {
        return format!("losses: none{unmatched}");
    }
    let parts: Vec<String> = o.losses.iter().take(TOP).map(|l| format!("{} {}", l.cause, l.count)).collect();
    format!("losses: {} ({}){unmatched}", o.lost_total, parts.join(", "))
}

fn leaks(s: &Summary, files: &[PathBuf]) -> String {
    let count: u64 = s.memory.leaks.iter().map(|l| l.allocations).sum();
    let held: u64 = s.memory.leaks.iter().map(|l| l.bytes).sum();
    let leaks = if count == 0 {
        "none".to_owned()
    } else {
        format!("{} in {count} allocations still held at exit", bytes(held))
    };
    match files.first() {
        Some(f) => format!("leaks: {leaks}; full report: {}", f.display()),
        None => format!("leaks: {leaks}"),
    }
}
