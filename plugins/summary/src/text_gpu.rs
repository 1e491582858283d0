//! `summary.txt`'s GPU sections, the first questions first: how busy each device was and why
//! not more (idle gaps, the launch-bound verdict), which lines and modules of the user's Python
//! code the GPU time comes from, forward against backward, then kernels and launch sites.

use std::fmt::Write;

use crate::fmt::{escape, ns, pct, stack, Table};
use crate::report::*;
use crate::text::{device, section, times};

/// Frames shown per stack.
const STACK_DEPTH: usize = 4;

/// Per rank of the job: GPU time, launches and top kernel, when the session has two or more.
pub fn ranks(s: &Summary, out: &mut String) {
    if s.ranks.len() < 2 {
        return;
    }
    section(out, "Ranks (GPU time: the sum of each rank's kernel durations)", s.ranks.len(), s.ranks.len());
    let mut t = Table::new(&["Rank", "<Process", "GPU time", "Launches", "<Top kernel"]);
    for r in &s.ranks {
        t.row(vec![
            r.rank.to_string(),
            r.name.clone(),
            ns(r.gpu_time_ns),
            r.launches.to_string(),
            r.top_kernel.clone(),
        ]);
    }
    t.render(out);
}

/// Device busy time, per window, and the largest idle gaps.
pub fn devices(s: &Summary, out: &mut String) {
    if s.devices.is_empty() {
        return;
    }
    section(
        out,
        "Devices (busy: the union of kernel intervals, over the session)",
        s.devices.len(),
        s.devices.len(),
    );
    let mut t = Table::new(&["Device", "Kernels", "Busy", "Session", "Busy%", "Idle gaps", "Idle total"]);
    for r in &s.devices {
        t.row(vec![
            device(r.device_index, &r.device),
            r.kernels.to_string(),
            ns(r.kernel_busy_ns),
            ns(r.session_ns),
            pct(r.busy_pct),
            format!("{} >= {}", r.idle_gaps, ns(r.idle_gap_threshold_ns)),
            ns(r.idle_gap_total_ns),
        ]);
    }
    t.render(out);
    for r in s.devices.iter().filter(|r| !r.windows.is_empty()) {
        let _ = writeln!(out, "  busy per capture window on {}:", escape(&device(r.device_index, &r.device)));
        let mut t = Table::new(&["  Window", "From (ns)", "To (ns)", "Busy", "Busy%"]);
        for (i, w) in r.windows.iter().enumerate() {
            t.row(vec![
                format!("  {}", i + 1),
                w.start_ns.to_string(),
                w.end_ns.to_string(),
                ns(w.busy_ns),
                pct(w.busy_pct),
            ]);
        }
        t.render(out);
    }
    for r in s.devices.iter().filter(|r| !r.largest_gaps.is_empty()) {
        let _ = writeln!(out, "  largest idle gaps on {}:", escape(&device(r.device_index, &r.device)));
        let mut t = Table::new(&["  Gap", "From (ns)", "To (ns)", "<CPU before the gap"]);
        for g in &r.largest_gaps {
            // The profiler's samples after the user's one, said before the (cut) stack.
            let n = g.xpuprof_samples_before;
            let own = match n {
                0 => String::new(),
                1 => " (then 1 sample in xpuprof's own code)".to_owned(),
                _ => format!(" (then {n} samples in xpuprof's own code)"),
            };
            let cpu = match &g.cpu_before {
                Some(c) => {
                    format!("tid {} at {}{own}: {}", c.tid, c.time_ns, stack(&c.display_stack, STACK_DEPTH))
                }
                None => format!("[no CPU sample before the gap]{own}"),
            };
            t.row(vec![
                format!("  {}", ns(g.duration_ns)),
                g.start_ns.to_string(),
                g.end_ns.to_string(),
                cpu,
            ]);
        }
        t.render(out);
    }
}

/// The launch-bound verdict per device, with its evidence.
pub fn launch_bound(s: &Summary, out: &mut String) {
    if s.launch_bound.is_empty() {
        return;
    }
    section(
        out,
        "Launch-bound? (launch API time against GPU busy time)",
        s.launch_bound.len(),
        s.launch_bound.len(),
    );
    let mut t = Table::new(&[
        "Device",
        "<Verdict",
        "Launch calls",
        "Launch API",
        "GPU busy",
        "Busy%",
        "Calls/s",
        "Per call",
        "Busy/launch",
    ]);
    for r in &s.launch_bound {
        t.row(vec![
            device(r.device_index, &r.device),
            r.verdict.to_owned(),
            r.launch_api_calls.to_string(),
            ns(r.launch_api_ns),
            ns(r.kernel_busy_ns),
            pct(r.busy_pct),
            format!("{}", r.launch_calls_per_s),
            ns(r.mean_launch_api_ns),
            ns(r.busy_ns_per_launch),
        ]);
    }
    t.render(out);
    for r in &s.launch_bound {
        let _ = writeln!(out, "  {}: {}", escape(&device(r.device_index, &r.device)), escape(&r.evidence));
    }
}

/// GPU time by user line, by module, and forward against backward.
pub fn python(s: &Summary, rows: usize, out: &mut String) {
    let Some(p) = &s.python else { return };
    section(
        out,
        "GPU time by line of your Python code (the innermost one on each kernel's launch stack)",
        rows.min(p.by_line.len()),
        p.by_line.len(),
    );
    let mut t = Table::new(&["Line", "GPU time", "GPU%", "Launches", "<Top kernel"]);
    for r in p.by_line.iter().take(rows) {
        t.row(vec![
            r.location.clone(),
            ns(r.gpu_ns),
            pct(r.gpu_pct),
            r.launches.to_string(),
            r.top_kernel.clone(),
        ]);
    }
    t.render(out);
    section(
        out,
        "GPU time by nn.Module (Self: the innermost forward on the launch stack; Total: anywhere on it)",
        rows.min(p.by_module.len()),
        p.by_module.len(),
    );
    let mut t = Table::new(&["Module", "<File", "Self", "Self%", "Total", "Total%", "Launches"]);
    for r in p.by_module.iter().take(rows) {
        t.row(vec![
            r.module.clone(),
            r.file.clone(),
            ns(r.self_ns),
            pct(r.self_pct),
            ns(r.total_ns),
            pct(r.total_pct),
            r.launches.to_string(),
        ]);
    }
    t.render(out);
    section(out, "Forward and backward (GPU time)", p.phases.len(), p.phases.len());
    let mut t = Table::new(&["Phase", "GPU time", "GPU%", "Launches"]);
    for r in &p.phases {
        t.row(vec![r.phase.to_owned(), ns(r.gpu_ns), pct(r.gpu_pct), r.launches.to_string()]);
    }
    t.render(out);
    let _ = writeln!(
        out,
        "  backward: launches of autograd engine threads and under a backward() call; forward: under an nn.Module \
         forward; your code: {}",
        escape(&user_rule(&p.user_code))
    );
}

fn user_rule(u: &UserCodeRule) -> String {
    let mut rule = "Python files outside lib/pythonX.Y/, site-packages and dist-packages".to_owned();
    if !u.user_paths.is_empty() {
        let _ = write!(rule, ", and paths with {}", u.user_paths.join(", "));
    }
    if !u.library_paths.is_empty() {
        let _ = write!(rule, ", except paths with {}", u.library_paths.join(", "));
    }
    rule
}

/// The kernel table, and per device when there are several.
pub fn kernels(s: &Summary, rows: usize, out: &mut String) {
    if s.kernels.is_empty() {
        return;
    }
    section(out, "Kernels (device time)", rows.min(s.kernels.len()), s.kernels.len());
    let by_site = s.kernels.iter().any(|r| r.launch_site.is_some());
    let mut headers = vec!["Kernel", "<Id", "Launches", "Total", "GPU%", "p50", "p99", "<Grid", "<Block"];
    if by_site {
        headers.push("<Launched from (your code first)");
    }
    let mut t = Table::new(&headers);
    for r in s.kernels.iter().take(rows) {
        let [total, _, _, _, p50, p99] = times(&r.time);
        let c = &r.typical;
        let dim = |d: [u32; 3]| format!("{}x{}x{}", d[0], d[1], d[2]);
        let mut cells = vec![
            r.label.clone(),
            r.id.clone(),
            r.launches.to_string(),
            total,
            pct(r.gpu_time_pct),
            p50,
            p99,
            dim(c.grid),
            dim(c.block),
        ];
        if by_site {
            cells.push(r.display_launch_site.as_deref().map_or(String::new(), |f| stack(f, STACK_DEPTH)));
        }
        t.row(cells);
    }
    t.render(out);
    if s.kernels_by_device.len() < 2 {
        return;
    }
    for d in &s.kernels_by_device {
        let title =
            format!("Kernels on {} ({} of kernel time)", device(d.device_index, &d.device), ns(d.total_ns));
        section(out, &escape(&title), rows.min(d.kernels.len()), d.kernels.len());
        let mut t = Table::new(&["Kernel", "<Id", "Launches", "Total", "GPU%"]);
        for r in d.kernels.iter().take(rows) {
            t.row(vec![
                r.label.clone(),
                r.id.clone(),
                r.launches.to_string(),
                ns(r.total_ns),
                pct(r.gpu_pct),
            ]);
        }
        t.render(out);
    }
}

/// Launch sites by GPU time.
pub fn launch_sites(s: &Summary, rows: usize, out: &mut String) {
    if s.launch_sites.is_empty() {
        return;
    }
    section(
        out,
        "Launch sites (GPU time; your code first)",
        rows.min(s.launch_sites.len()),
        s.launch_sites.len(),
    );
    let mut t = Table::new(&[">GPU time", "GPU%", "Launches", "Kernels", "<Top kernel", "<Launched from"]);
    for r in s.launch_sites.iter().take(rows) {
        t.row(vec![
            ns(r.gpu_ns),
            pct(r.gpu_pct),
            r.launches.to_string(),
            r.kernels.to_string(),
            r.top_kernel.clone(),
            if r.stack.is_empty() { "[no launch stack]".to_owned() } else { stack(&r.stack, STACK_DEPTH) },
        ]);
    }
    t.render(out);
}
