//! `summary.txt`: the report as aligned tables for a terminal. Each table shows at most
//! `text_rows` rows (the JSON has them all); empty sections are left out.

use std::fmt::Write;

use crate::fmt::{bytes, escape, function, ns, pct, stack, Table, MAX_WIDTH};
use crate::report::*;
use crate::text_gpu;

/// Frames shown per stack in the text report.
const STACK_DEPTH: usize = 4;

/// Renders the whole report.
pub fn render(s: &Summary, rows: usize) -> String {
    let mut out = String::new();
    header(s, &mut out);
    text_gpu::devices(s, &mut out);
    crate::streams::render(&s.streams, rows, &mut out);
    text_gpu::ranks(s, &mut out);
    crate::collectives::render(&s.collectives, rows, &mut out);
    text_gpu::launch_bound(s, &mut out);
    crate::compile_time::render(&s.compile_time, &mut out);
    text_gpu::python(s, rows, &mut out);
    text_gpu::kernels(s, rows, &mut out);
    crate::pc_stalls::render(&s.pc_samples, rows, &mut out);
    text_gpu::launch_sites(s, rows, &mut out);
    api(s, rows, &mut out);
    transfers(s, rows, &mut out);
    memory(s, rows, &mut out);
    threads(s, rows, &mut out);
    cpu("CPU hot functions (on-CPU samples)", &s.cpu.on_cpu, rows, &mut out);
    cpu("Off-CPU time (blocked, by function)", &s.cpu.off_cpu, rows, &mut out);
    counters(s, rows, &mut out);
    own(s, &mut out);
    out
}

/// Starts a section: a blank line and its title, with `(top N of M)` when rows were left out.
pub fn section(out: &mut String, title: &str, shown: usize, total: usize) {
    out.push('\n');
    out.push_str(title);
    if shown < total {
        let _ = write!(out, " (top {shown} of {total})");
    }
    out.push('\n');
}

fn header(s: &Summary, out: &mut String) {
    let _ = writeln!(out, "xpuprof summary (schema {})", s.schema_version);
    if !s.session.command.is_empty() {
        let _ = writeln!(out, "command:  {}", escape(&s.session.command.join(" ")));
    }
    if !s.session.sources.is_empty() {
        let _ = writeln!(out, "sources:  {}", escape(&s.session.sources.join(", ")));
    }
    let _ = writeln!(
        out,
        "session:  {} (events from {} to {} ns)",
        ns(s.session.duration_ns),
        s.session.start_ns,
        s.session.end_ns
    );
    for (i, w) in s.session.windows.iter().enumerate() {
        let _ = writeln!(
            out,
            "window {}: {} from {} to {} ns (opened by {})",
            i + 1,
            ns(w.duration_ns),
            w.start_ns,
            w.end_ns,
            w.opened_by
        );
    }
}

/// Total, mean, min, max, p50 and p99 of `t`.
pub fn times(t: &Time) -> [String; 6] {
    [ns(t.total_ns), ns(t.mean_ns), ns(t.min_ns), ns(t.max_ns), ns(t.p50_ns), ns(t.p99_ns)]
}

fn api(s: &Summary, rows: usize, out: &mut String) {
    if s.api.is_empty() {
        return;
    }
    section(out, "API calls (host time)", rows.min(s.api.len()), s.api.len());
    let mut t = Table::new(&[
        "Function",
        "Calls",
        "Errors",
        "Total",
        "Mean",
        "Min",
        "Max",
        "p50",
        "p99",
        "<Error codes",
    ]);
    for r in s.api.iter().take(rows) {
        let codes: Vec<String> = r.errors_by_code.iter().map(|e| format!("{}x{}", e.code, e.count)).collect();
        let mut cells = vec![r.name.clone(), r.calls.to_string(), r.errors.to_string()];
        cells.extend(times(&r.time));
        cells.push(codes.join(" "));
        t.row(cells);
    }
    t.render(out);
}

fn transfers(s: &Summary, rows: usize, out: &mut String) {
    if s.transfers.is_empty() {
        return;
    }
    section(out, "Memory transfers (device time)", rows.min(s.transfers.len()), s.transfers.len());
    let mut t = Table::new(&["Operation", "<Direction", "<Device", "Count", "Bytes", "Time", "GB/s"]);
    for r in s.transfers.iter().take(rows) {
        t.row(vec![
            r.op.to_owned(),
            r.direction.to_owned(),
            device(r.device_index, &r.device),
            r.count.to_string(),
            bytes(r.bytes),
            ns(r.time_ns),
            format!("{:.2}", r.gb_per_s),
        ]);
    }
    t.render(out);
}

/// A process as tables name it: its rank name (`rank 1 (node-a, 4711)`) or its pid.
pub fn process(pid: u32, name: Option<&str>) -> String {
    name.map_or_else(|| pid.to_string(), str::to_owned)
}

/// A device as tables name it: `0 Acme X1`.
pub fn device(index: i64, name: &str) -> String {
    if index < 0 {
        name.to_owned()
    } else {
        format!("{index} {name}").trim_end().to_owned()
    }
}

fn memory(s: &Summary, rows: usize, out: &mut String) {
    let m = &s.memory;
    if !m.devices.is_empty() {
        section(out, "Device memory", m.devices.len(), m.devices.len());
        let _ = writeln!(
            out,
            "  Allocations and frees made by API calls of the program; in use: all memory records."
        );
        let mut t =
            Table::new(&["Device", "Allocs", "Allocated", "Frees", "Freed", "Peak in use", "At exit"]);
        for r in &m.devices {
            t.row(vec![
                device(r.device_index, &r.device),
                r.allocations.to_string(),
                bytes(r.allocated_bytes),
                r.frees.to_string(),
                bytes(r.freed_bytes),
                bytes(r.peak_in_use_bytes),
                bytes(r.in_use_at_exit_bytes),
            ]);
        }
        t.render(out);
        runtime_memory(m, out);
        if m.unmatched_frees > 0 {
            let _ = writeln!(out, "  {} frees matched no allocation of the same size", m.unmatched_frees);
        }
    }
    if !m.leaks.is_empty() {
        section(
            out,
            "Device memory still allocated at exit, by allocation site",
            rows.min(m.leaks.len()),
            m.leaks.len(),
        );
        let _ = writeln!(
            out,
            "  The driver releases it when the process exits. Caching allocators keep memory on purpose and\n  \
             the runtime allocates some on its own (\"Held by\"); look at sites that allocate again and\n  \
             again without a free."
        );
        let pid = if m.leaks.iter().any(|r| r.process.is_some()) { "<Process" } else { "PID" };
        let mut t =
            Table::new(&["Device", pid, "Allocs", "Bytes", "<Held by", "<Allocated at (your code first)"]);
        for r in m.leaks.iter().take(rows) {
            t.row(vec![
                device(r.device_index, &r.device),
                process(r.pid, r.process.as_deref()),
                r.allocations.to_string(),
                bytes(r.bytes),
                held_by(r).to_owned(),
                stack(&r.display_stack, STACK_DEPTH),
            ]);
        }
        t.render(out);
    }
}

fn threads(s: &Summary, rows: usize, out: &mut String) {
    if s.threads.is_empty() {
        return;
    }
    section(out, "Threads (launches and synchronisation)", rows.min(s.threads.len()), s.threads.len());
    let pid = if s.threads.iter().any(|r| r.process.is_some()) { "<Process" } else { "PID" };
    let mut t = Table::new(&[
        pid,
        "TID",
        "<Name",
        "Launches",
        "Launch API",
        "Sync calls",
        "Sync API",
        "Sync ops",
        "Sync op time",
        "API calls",
        "API time",
    ]);
    for r in s.threads.iter().take(rows) {
        t.row(vec![
            process(r.pid, r.process.as_deref()),
            r.tid.to_string(),
            r.name.clone(),
            r.launches.to_string(),
            ns(r.launch_api_ns),
            r.sync_api_calls.to_string(),
            ns(r.sync_api_ns),
            r.sync_ops.to_string(),
            ns(r.sync_op_ns),
            r.api_calls.to_string(),
            ns(r.api_ns),
        ]);
    }
    t.render(out);
}

/// Memory records no API call caused, said for what they are.
fn runtime_memory(m: &Memory, out: &mut String) {
    for r in &m.without_api_call {
        let what = if r.kind == "free" { "free" } else { "allocation" };
        let plural = if r.records == 1 { "" } else { "s" };
        let _ = writeln!(
            out,
            "  not counted above: {} {what} record{plural} ({}) on {} that no API call of the program caused (no \
             correlation id), named \"{}\" by their source: memory the runtime or driver handled on its own",
            r.records,
            bytes(r.bytes),
            escape(&device(r.device_index, &r.device)),
            escape(&r.name)
        );
    }
}

fn cpu(title: &str, p: &CpuProfile, rows: usize, out: &mut String) {
    if p.samples == 0 {
        return;
    }
    section(out, title, rows.min(p.hot_functions.len()), p.hot_functions.len());
    let _ = writeln!(out, "  {} samples, {} in all", p.samples, ns(p.weight_ns));
    let mut t = Table::new(&["Function", "Self", "Self%", "Total", "Samples"]);
    for r in p.hot_functions.iter().take(rows) {
        t.row(vec![
            function(&r.function),
            ns(r.self_ns),
            pct(r.self_pct),
            ns(r.total_ns),
            r.self_samples.to_string(),
        ]);
    }
    t.render(out);
}

fn counters(s: &Summary, rows: usize, out: &mut String) {
    if s.counters.is_empty() {
        return;
    }
    section(out, "Counters", rows.min(s.counters.len()), s.counters.len());
    let mut t = Table::new(&["Series", "<Device", "Points", "Min", "Mean", "Max", "Last"]);
    let num = |v: f64| format!("{v:.3}").trim_end_matches('0').trim_end_matches('.').to_owned();
    for r in s.counters.iter().take(rows) {
        t.row(vec![
            r.name.clone(),
            device(r.device_index, &r.device),
            r.count.to_string(),
            num(r.min),
            num(r.mean),
            num(r.max),
            num(r.last),
        ]);
    }
    t.render(out);
}

fn own(s: &Summary, out: &mut String) {
    let o = &s.xpuprof;
    section(out, "xpuprof's own record", 1, 1);
    let kinds: Vec<String> = o.records_by_kind.iter().map(|(k, n)| format!("{k} {n}")).collect();
    wrap(out, "  records:   ", &kinds);
    let backends: Vec<String> = o.events_by_backend.iter().map(|(k, n)| format!("{k} {n}")).collect();
    if !backends.is_empty() {
        wrap(out, "  backends:  ", &backends);
    }
    if o.unmatched_device_ops == 0 {
        let _ = writeln!(out, "  device work without a launch site: none");
    } else {
        let _ = writeln!(
            out,
            "  device work without a launch site: {} (under [unknown launch site] in the flame graphs)",
            o.unmatched_device_ops
        );
        let mut t = Table::new(&["  Kind", "Id unmatched", "No id", "<Why"]);
        for r in &o.unmatched_by_kind {
            t.row(vec![
                format!("  {}", r.kind),
                r.correlation_unmatched.to_string(),
                r.no_correlation_id.to_string(),
                unmatched_why(r).to_owned(),
            ]);
        }
        t.render(out);
    }
    if o.losses.is_empty() {
        let _ = writeln!(out, "  losses:    none");
    } else {
        let _ = writeln!(out, "  losses:    {} items", o.lost_total);
        let mut t = Table::new(&["  Cause", "Lost", "Reports"]);
        for l in &o.losses {
            t.row(vec![format!("  {}", l.cause), l.count.to_string(), l.reports.to_string()]);
        }
        t.render(out);
    }
    if !o.notes.is_empty() {
        let _ = writeln!(out, "  notes (nothing lost):");
        let mut t = Table::new(&["  Note", "Items", "Reports"]);
        for l in &o.notes {
            t.row(vec![format!("  {}", l.cause), l.count.to_string(), l.reports.to_string()]);
        }
        t.render(out);
    }
    overhead(s, out);
}

/// xpuprof's cost: its own code in the target's sampled CPU time, then the sources' overhead
/// records.
fn overhead(s: &Summary, out: &mut String) {
    let o = &s.xpuprof;
    let a = &o.agent_cpu;
    if s.cpu.on_cpu.samples == 0 {
        let _ =
            writeln!(out, "  xpuprof's code in the target: not measured (no on-CPU samples in this session)");
    } else {
        let _ = writeln!(
            out,
            "  xpuprof's code in the target: {} of the sampled on-CPU time ({} of {} samples, {}; [xpuprof] in the CPU \
             tables)",
            pct(a.on_cpu_pct),
            a.samples,
            s.cpu.on_cpu.samples,
            ns(a.weight_ns)
        );
    }
    for r in &o.overhead {
        let _ = writeln!(
            out,
            "  overhead records from the sources: {} x{}, {} ({} of the session)",
            escape(&r.name),
            r.count,
            ns(r.total_ns),
            pct(r.session_pct)
        );
    }
}

/// Who keeps an allocation alive at exit, for the "Held by" column.
fn held_by(r: &LeakRow) -> &'static str {
    match (r.caching_allocator, r.by_runtime) {
        (Some(who), _) => who,
        (None, true) => "the runtime (no API call)",
        (None, false) => "-",
    }
}

/// What a user can do about device work without a launch site, by why it had none.
pub fn unmatched_why(r: &UnmatchedRow) -> &'static str {
    if r.no_correlation_id >= r.correlation_unmatched {
        "reported without a correlation id: work the runtime did on its own (e.g. frees at exit)"
    } else {
        "launch not seen: before tracing started, or its record was lost (see losses)"
    }
}

/// Writes `items` joined by `, ` after `head`, wrapped to lines of at most [`MAX_WIDTH`]
/// columns (continuation lines indented like the first item).
fn wrap(out: &mut String, head: &str, items: &[String]) {
    let indent = " ".repeat(head.chars().count());
    let mut line = head.to_owned();
    for (i, item) in items.iter().enumerate() {
        let sep = if i + 1 < items.len() { "," } else { "" };
        let fresh = line.chars().count() == indent.chars().count();
        if !fresh && line.chars().count() + 1 + item.chars().count() + sep.len() > MAX_WIDTH {
            out.push_str(line.trim_end());
            out.push('\n');
            line = indent.clone();
        } else if !fresh {
            line.push(' ');
        }
        line.push_str(&escape(item));
        line.push_str(sep);
    }
    out.push_str(line.trim_end());
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_lists_wrap_within_the_width() {
        let items: Vec<String> = (0..40).map(|i| format!("kind_{i} {}", i * 1000)).collect();
        let mut out = String::new();
        wrap(&mut out, "  records:   ", &items);
        assert!(out.lines().count() > 1 && out.lines().all(|l| l.chars().count() <= MAX_WIDTH), "{out}");
        assert!(out.lines().nth(1).unwrap().starts_with("             kind_"), "{out}");
        assert_eq!(out.matches("kind_").count(), 40);
    }
}
