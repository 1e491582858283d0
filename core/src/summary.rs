//! What xpuprof tells the user on stderr: a status line while recording, a short summary at the
//! end (files written, events per source, correlation, losses).

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::session::SessionOutcome;

/// `1234`, `12.3k`, `4.5M`.
pub fn human(n: u64) -> String {
    match n {
        0..=9_999 => n.to_string(),
        10_000..=9_999_999 => format!("{:.1}k", n as f64 / 1e3),
        _ => format!("{:.1}M", n as f64 / 1e6),
    }
}

/// Rewrites the status line in place.
pub fn status_line(elapsed: Duration, names: &[String], counters: &[AtomicU64]) {
    let mut line = format!("xpuprof: recording {:.1}s", elapsed.as_secs_f64());
    for (n, c) in names.iter().zip(counters) {
        line.push_str(&format!(" | {n}: {} records", human(c.load(Ordering::Relaxed))));
    }
    let mut e = std::io::stderr();
    let _ = write!(e, "\r\x1b[K{line}");
    let _ = e.flush();
}

/// Prints the end-of-session summary.
pub fn print(o: &SessionOutcome) {
    let headline =
        format!("xpuprof: target exited with code {} after {:.2}s", o.target_exit, o.elapsed.as_secs_f64());
    print_with(o, headline);
}

/// Prints the end-of-session summary of `xpuprof attach`, whose process keeps running.
pub fn print_attached(o: &SessionOutcome, pid: u32) {
    print_with(o, format!("xpuprof: detached from process {pid} after {:.2}s", o.elapsed.as_secs_f64()));
}

fn print_with(o: &SessionOutcome, headline: String) {
    let mut lines = vec![headline];
    let per: Vec<String> = o
        .sources
        .iter()
        .zip(&o.stats.records_per_source)
        .map(|(n, c)| format!("{n}: {}", human(*c)))
        .collect();
    if !per.is_empty() {
        lines.push(format!("  records: {}", per.join(", ")));
    }
    let c = &o.stats.correlation;
    if c.device_ops > 0 || c.launch_sites > 0 {
        lines.push(format!(
            "  device ops: {} ({} with launch stack, {} with API call only, {} unmatched, {} without correlation id)",
            human(c.device_ops),
            human(c.joined_with_stack),
            human(c.joined_api_only),
            human(c.unmatched),
            human(c.uncorrelated)
        ));
    }
    let r = &c.recordings;
    if r.from_recordings > 0 || r.recordings_evicted > 0 {
        lines.push(format!(
            "  device ops run from recordings (graph replays, command lists): {} ({} under the call that recorded them, \
             {} whose recording call was not seen, {} whose recording call the source did not know); \
             recording calls forgotten at the bound: {}",
            human(r.from_recordings),
            human(r.recorded_joined),
            human(r.recorded_unmatched),
            human(r.recorded_unknown),
            human(r.recordings_evicted)
        ));
    }
    if c.retired > 0 {
        lines.push(format!(
            "  launches released when their backend retired the correlation id: {}",
            human(c.retired)
        ));
    }
    if c.uncorrelated_launch_sites > 0 {
        lines.push(format!(
            "  launch stacks without correlation id (plain uprobes): {}",
            human(c.uncorrelated_launch_sites)
        ));
    }
    let a = &o.stats.agreement;
    if a.compared > 0 {
        lines.push(format!(
            "  launch stacks from two sources: {} compared, {} agree, {} differ ({} compared to the shorter depth, \
             {} after skipping leaf frames only one path saw, {} on their native frames before Python frames)",
            human(a.compared),
            human(a.agreed),
            human(a.compared - a.agreed),
            human(a.depth_limited),
            human(a.loader_leaf_skipped),
            human(a.native_only)
        ));
        if let Some((x, y)) = &a.first_disagreement {
            lines.push(format!("    first difference: [{}] vs [{}]", x.join(", "), y.join(", ")));
        }
    }
    if !o.late_records.is_empty() {
        let per: Vec<String> = o.late_records.iter().map(|(n, c)| format!("{n}: {}", human(*c))).collect();
        lines.push(format!("  records emitted after the source stopped (dropped): {}", per.join(", ")));
    }
    if o.stats.losses.is_empty() {
        lines.push("  losses: none".to_owned());
    } else {
        let l: Vec<String> = o.stats.losses.iter().map(|(k, v)| format!("{k}: {}", human(*v))).collect();
        lines.push(format!("  losses: {}", l.join(", ")));
    }
    if o.stats.frames_cut > 0 {
        lines.push(format!(
            "  stack frames outside any module cut from stack roots (frame-pointer walks into code without frame pointers): {}",
            human(o.stats.frames_cut)
        ));
    }
    if o.stats.virtual_unmapped > 0 {
        lines.push(format!(
            "  frames at addresses no file maps (JIT code, or the process had exited), shown as addresses: {}",
            human(o.stats.virtual_unmapped)
        ));
    }
    let (during, total) = o.own_cpu;
    lines.push(format!(
        "  xpuprof's own CPU time: {:.2}s while the target ran, {:.2}s after",
        during.as_secs_f64(),
        total.saturating_sub(during).as_secs_f64()
    ));
    if o.stats.dangling > 0 {
        lines.push(format!("  references to undefined ids (a source bug): {}", o.stats.dangling));
    }
    for f in &o.files {
        lines.push(format!("  wrote {f}"));
    }
    for f in &o.plugin_failures {
        lines.push(format!("  FAILED: {f}"));
    }
    crate::say!("{}", lines.join("\n"));
}
