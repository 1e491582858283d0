//! The five-line digest printed to stderr when the sink finishes: totals, GPU busy share (and
//! the launch-bound verdict), the top lines of the user's Python code (or kernels, or CPU
//! functions for a CPU-only run), losses and device work without a launch site
//! (each with what it means), and device memory still allocated at exit (caching allocators'
//! pools named as such, never called leaks) with where the full report is.

use std::path::PathBuf;

use crate::fmt::{bytes, escape, function, ns, pct};
use crate::report::Summary;

/// Items listed per digest line.
const TOP: usize = 3;
/// xpuprof's share of the sampled CPU time from which the digest names it, percent.
const OWN_COST_PCT: f64 = 1.0;
/// Longest name shown in the digest (longer ones are cut with `...`).
const NAME_CHARS: usize = 64;

/// `name`, cut to [`NAME_CHARS`] characters.
fn short(name: &str) -> String {
    if name.chars().count() <= NAME_CHARS {
        return name.to_owned();
    }
    let mut s: String = name.chars().take(NAME_CHARS - 3).collect();
    s.push_str("...");
    s
}

/// The digest, exactly five lines (no trailing newlines), each [`escape`]d whole: the names in
/// it are the profiled program's text, and none of its own text holds a control character.
pub fn lines(s: &Summary, files: &[PathBuf]) -> [String; 5] {
    [totals(s), busy(s), top(s), losses(s), leaks(s, files)].map(|l| escape(&l).into_owned())
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
        .map(|d| {
            let launch_bound = s.launch_bound.iter().any(|l| {
                l.verdict == "launch-bound" && (l.device_index, &l.device) == (d.device_index, &d.device)
            });
            let verdict = if launch_bound { ", launch-bound" } else { "" };
            format!("device {} {} ({} idle gaps{verdict})", d.device_index, pct(d.busy_pct), d.idle_gaps)
        })
        .collect();
    let more = s.devices.len().saturating_sub(TOP);
    let tail = if more > 0 { format!(", +{more} more") } else { String::new() };
    format!("GPU busy: {}{tail}", parts.join(", "))
}

fn top(s: &Summary) -> String {
    let lines: Vec<String> = s
        .python
        .iter()
        .flat_map(|p| &p.by_line)
        .filter(|l| !l.function.is_empty())
        .take(TOP)
        .map(|l| format!("{} {}", short(&l.location), pct(l.gpu_pct)))
        .collect();
    if !lines.is_empty() {
        return format!("top lines of your code (GPU time): {}", lines.join(", "));
    }
    if !s.kernels.is_empty() {
        let parts: Vec<String> = s
            .kernels
            .iter()
            .take(TOP)
            .map(|k| format!("{} {}", short(&k.label), pct(k.gpu_time_pct)))
            .collect();
        return format!("top kernels: {}", parts.join(", "));
    }
    let cpu = &s.cpu.on_cpu;
    if cpu.samples > 0 {
        let parts: Vec<String> = cpu
            .hot_functions
            .iter()
            .take(TOP)
            .map(|f| format!("{} {}", short(&function(&f.function)), pct(f.self_pct)))
            .collect();
        return format!("top CPU functions (self): {}", parts.join(", "));
    }
    "top kernels: none recorded".to_owned()
}

fn losses(s: &Summary) -> String {
    let o = &s.xpuprof;
    let lost = if o.losses.is_empty() {
        "losses: none".to_owned()
    } else {
        let parts: Vec<String> =
            o.losses.iter().take(TOP).map(|l| format!("{} {}", l.cause, l.count)).collect();
        format!("losses: {} ({})", o.lost_total, parts.join(", "))
    };
    // xpuprof's own cost, where it is more than a rounding error of the sampled CPU time.
    let lost = if o.agent_cpu.on_cpu_pct >= OWN_COST_PCT {
        format!("{lost}; xpuprof's own code: {} of the sampled CPU time", pct(o.agent_cpu.on_cpu_pct))
    } else {
        lost
    };
    if o.unmatched_device_ops == 0 {
        return lost;
    }
    let (no_id, unmatched): (u64, u64) = o
        .unmatched_by_kind
        .iter()
        .fold((0, 0), |(a, b), r| (a + r.no_correlation_id, b + r.correlation_unmatched));
    let kinds: Vec<String> = o
        .unmatched_by_kind
        .iter()
        .take(TOP)
        .map(|r| format!("{} {}", r.kind, r.no_correlation_id + r.correlation_unmatched))
        .collect();
    let why = match (no_id, unmatched) {
        (_, 0) => {
            "reported by the backend without a correlation id, e.g. memory the runtime released on its own"
        }
        (0, _) => "their launch was not seen: launched before tracing started, or lost",
        _ => "some without a correlation id, some whose launch was not seen; see the report",
    };
    format!(
        "{lost}; device work without a launch site: {} ({}): {why}",
        o.unmatched_device_ops,
        kinds.join(", ")
    )
}

fn leaks(s: &Summary, files: &[PathBuf]) -> String {
    let count: u64 = s.memory.leaks.iter().map(|l| l.allocations).sum();
    let held: u64 = s.memory.leaks.iter().map(|l| l.bytes).sum();
    let report = files.first().map(|f| format!("; full report: {}", f.display())).unwrap_or_default();
    if count == 0 {
        return format!("device memory still allocated at exit: none{report}");
    }
    let mut pools: Vec<(&str, u64)> = Vec::new();
    for l in &s.memory.leaks {
        let holder = match (l.caching_allocator, l.by_runtime) {
            (Some(who), _) => Some(who),
            (None, true) => Some("the runtime itself (no API call)"),
            (None, false) => None,
        };
        if let Some(who) = holder {
            match pools.iter_mut().find(|(w, _)| *w == who) {
                Some(p) => p.1 += l.bytes,
                None => pools.push((who, l.bytes)),
            }
        }
    }
    let pooled: u64 = pools.iter().map(|(_, b)| b).sum();
    let sites = s.memory.leaks.iter().filter(|l| l.caching_allocator.is_none() && !l.by_runtime).count();
    let plural = if sites == 1 { "" } else { "s" };
    let whose = if pools.is_empty() {
        format!(" from {sites} allocation site{plural}")
    } else {
        let mut parts: Vec<String> =
            pools.iter().map(|(who, b)| format!("{} held by {who}", bytes(*b))).collect();
        if held > pooled {
            parts.push(format!("{} from {sites} other allocation site{plural}", bytes(held - pooled)));
        }
        format!(" ({})", parts.join(", "))
    };
    format!(
        "device memory still allocated at exit (released by the driver): {} in {count} allocations{whose}{report}",
        bytes(held)
    )
}
