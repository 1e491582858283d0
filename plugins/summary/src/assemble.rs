//! Turns the aggregates into the [`Summary`] report: resolves ids to names, computes shares and
//! rates, and sorts every table deterministically (largest first, ties by name).

use xpuprof_sdk::hash::IdMap;
use xpuprof_sdk::model::{DeviceId, DeviceOpKind, StrId, WindowOpener};
use xpuprof_sdk::SessionInfo;

use crate::collect::{Collector, KernelAgg};
use crate::cpu::CpuProfile as CpuAggProfile;
use crate::frames::Stack;
use crate::quantile::DurSummary;
use crate::report::*;
use crate::samples::SampleRef;
use crate::timeline::DeviceTimeline;
use crate::{allocators, gpu_time, kernel_label, launch_bound, own_record};
use xpuprof_toolbox::kernel_name;

/// CPU hot functions kept in the JSON per profile.
const MAX_HOT_FUNCTIONS: usize = 200;

/// Rounds to two decimals (percentages).
fn round2(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

/// `part / whole` in percent, two decimals; 0 when `whole` is 0.
pub fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        round2(part as f64 * 100.0 / whole as f64)
    }
}

fn time(s: DurSummary) -> Time {
    Time {
        total_ns: s.total,
        mean_ns: s.mean,
        min_ns: s.min,
        max_ns: s.max,
        p50_ns: s.p50,
        p99_ns: s.p99,
        exact: s.exact,
    }
}

/// Builds the report (consumes the collector's kept durations and timelines; call once).
pub fn summary(c: &mut Collector, session: &SessionInfo) -> Summary {
    let windows = window_rows(&mut c.windows);
    let (start, end) = match (windows.first(), windows.last()) {
        (Some(first), Some(last)) => (first.start_ns, last.end_ns.max(first.start_ns)),
        _ => c.span.unwrap_or((0, 0)),
    };
    // Rates and busy shares are per window: the session's time is the time inside them.
    let session_ns = if windows.is_empty() { end - start } else { union_ns(&windows) };
    c.cpu.finish_index(&c.defs);
    let devices = device_rows(c, &windows, session_ns);
    let spans: Vec<(u64, u64)> = windows.iter().map(|w| (w.start_ns, w.end_ns)).collect();
    let streams =
        crate::streams::rows(std::mem::take(&mut c.streams), &c.defs, &spans, session_ns, &c.cpu.index);
    let labels = kernel_labels(c);
    let gpu = gpu_time::tables(&c.gpu, &c.defs, &c.cfg.user_code, &labels);
    let ids: Vec<(DeviceId, &DeviceRow)> = devices.iter().map(|(id, r)| (*id, r)).collect();
    let launch_bound = launch_bound::rows(&ids, &c.threads, &c.gpu.per_thread_device(), session_ns);
    Summary {
        schema_version: SCHEMA_VERSION,
        generator: format!("xpuprof-plugin-summary {}", env!("CARGO_PKG_VERSION")),
        session: Session {
            command: session.command.clone(),
            sources: session.sources.clone(),
            start_ns: start,
            end_ns: end,
            duration_ns: session_ns,
            windows,
        },
        percentiles: PercentileMethod {
            definition: "nearest-rank",
            exact_samples_cap: c.cfg.exact_samples as u64,
            histogram_relative_error: 1.0 / 256.0,
        },
        api: api_rows(c),
        python: gpu.python,
        compile_time: crate::compile_time::row(&c.gpu, &c.defs),
        launch_bound,
        launch_sites: gpu.launch_sites,
        kernels: kernel_rows(c, &labels),
        pc_samples: crate::pc_stalls::rows(&c.pc, &c.defs),
        kernels_by_device: gpu.kernels_by_device,
        transfers: transfer_rows(c),
        memory: memory(c),
        devices: devices.into_iter().map(|(_, r)| r).collect(),
        streams,
        threads: thread_rows(c),
        ranks: rank_rows(c, &labels),
        collectives: crate::collectives::report(&c.collectives, &c.defs),
        cpu: Cpu { on_cpu: cpu_profile(c, &c.cpu.on_cpu), off_cpu: cpu_profile(c, &c.cpu.off_cpu) },
        counters: counter_rows(c),
        xpuprof: own_record::own(c, session, session_ns),
    }
}

/// Every kernel name's label and id, as tables show them ([`kernel_label`]).
fn kernel_labels(c: &Collector) -> IdMap<StrId, (String, String)> {
    let mut ids: Vec<StrId> = c.kernels.keys().map(|(name, _)| *name).collect();
    ids.sort_unstable_by_key(|id| id.0);
    ids.dedup();
    let names: Vec<&str> = ids.iter().map(|id| c.defs.str_or(*id, "[unnamed kernel]")).collect();
    let labels = kernel_label::labels(&names);
    ids.into_iter()
        .zip(names)
        .zip(labels)
        .map(|((id, name), label)| (id, (label, kernel_name::id(name))))
        .collect()
}

/// The windows in time order.
fn window_rows(windows: &mut [(u64, u64, WindowOpener)]) -> Vec<WindowRow> {
    windows.sort_unstable_by_key(|w| (w.0, w.1));
    windows
        .iter()
        .map(|&(start, end, opener)| WindowRow {
            start_ns: start,
            end_ns: end,
            duration_ns: end - start,
            opened_by: opener_name(opener),
        })
        .collect()
}

/// What opened a window, as the report names it: the model's [`WindowOpener`] variant in
/// kebab case (`Start` is `start`, a source's marker kind `FooMarkerApi` is `foo-marker-api`),
/// so an opener added to the model needs no change here.
fn opener_name(o: WindowOpener) -> String {
    let mut name = String::new();
    for (i, c) in format!("{o:?}").chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            name.push('-');
        }
        name.push(c.to_ascii_lowercase());
    }
    name
}

/// The time covered by windows sorted by start (overlaps counted once).
fn union_ns(windows: &[WindowRow]) -> u64 {
    let (mut total, mut reach) = (0u64, 0u64);
    for w in windows {
        let from = w.start_ns.max(reach);
        if w.end_ns > from {
            total += w.end_ns - from;
        }
        reach = reach.max(w.end_ns);
    }
    total
}

fn api_rows(c: &mut Collector) -> Vec<ApiRow> {
    let defs = &c.defs;
    let mut rows: Vec<ApiRow> = c
        .api
        .iter_mut()
        .map(|(name, agg)| {
            let mut errors: Vec<ErrorCount> =
                agg.errors.iter().map(|&(code, count)| ErrorCount { code, count }).collect();
            errors.sort_by_key(|e| e.code);
            ApiRow {
                name: defs.str_or(*name, "[unnamed API]").to_owned(),
                calls: agg.time.count(),
                errors: errors.iter().map(|e| e.count).sum(),
                errors_by_code: errors,
                time: time(agg.time.summary()),
            }
        })
        .collect();
    rows.sort_by(|a, b| b.time.total_ns.cmp(&a.time.total_ns).then_with(|| a.name.cmp(&b.name)));
    rows
}

/// The most used configuration; ties go to the smallest (grid, block, shared, registers).
fn typical(agg: &KernelAgg) -> LaunchConfig {
    let key = |k: &xpuprof_sdk::model::KernelInfo| (k.grid, k.block, k.shared_memory, k.registers);
    let (k, n) = agg
        .configs
        .iter()
        .max_by(|a, b| a.1.cmp(&b.1).then_with(|| key(&b.0).cmp(&key(&a.0))))
        .copied()
        .unwrap_or_default();
    LaunchConfig {
        grid: k.grid,
        block: k.block,
        shared_memory_bytes: k.shared_memory,
        registers_per_thread: k.registers,
        launches: n,
    }
}

fn kernel_rows(c: &mut Collector, labels: &IdMap<StrId, (String, String)>) -> Vec<KernelRow> {
    let all: u64 = c.kernels.values().map(|k| k.time.total()).sum();
    let by_site = c.cfg.by_launch_site;
    let user = c.cfg.user_code.clone();
    let defs = &c.defs;
    let mut rows: Vec<KernelRow> = c
        .kernels
        .iter_mut()
        .map(|((id, stack), agg)| {
            // The display text: the host demangled the runtime's (often `_Z...`) name.
            let name = defs.str_or(*id, "[unnamed kernel]").to_owned();
            (name, labels.get(id).cloned().unwrap_or_default(), stack, agg)
        })
        .map(|(name, (label, id), stack, agg)| KernelRow {
            short_name: kernel_name::short(&name),
            label,
            id,
            name,
            launch_site: by_site.then(|| defs.launch_stack_names(*stack, agg.api)),
            display_launch_site: by_site.then(|| Stack::read(defs, &user, *stack).user_first(defs, agg.api)),
            launches: agg.time.count(),
            gpu_time_pct: pct(agg.time.total(), all),
            typical: typical(agg),
            distinct_configs: agg.configs.len() as u64 + u64::from(agg.other_configs > 0),
            time: time(agg.time.summary()),
        })
        .collect();
    rows.sort_by(|a, b| {
        b.time
            .total_ns
            .cmp(&a.time.total_ns)
            .then_with(|| (&a.name, &a.launch_site).cmp(&(&b.name, &b.launch_site)))
    });
    rows
}

fn transfer_rows(c: &Collector) -> Vec<TransferRow> {
    let mut rows: Vec<TransferRow> = c
        .memory
        .transfers
        .iter()
        .map(|(&(kind, copy, device), t)| {
            let (device_index, name) = c.defs.device(device);
            let memcpy = kind == DeviceOpKind::Memcpy;
            TransferRow {
                op: if memcpy { "memcpy" } else { "memset" },
                direction: if memcpy { copy.short_name() } else { "-" },
                device_index,
                device: name,
                count: t.count,
                bytes: t.bytes,
                time_ns: t.time,
                gb_per_s: if t.time == 0 {
                    0.0
                } else {
                    (t.bytes as f64 / t.time as f64 * 1000.0).round() / 1000.0
                },
            }
        })
        .collect();
    rows.sort_by(|a, b| (a.op, a.device_index, a.direction).cmp(&(b.op, b.device_index, b.direction)));
    rows
}

fn memory(c: &Collector) -> Memory {
    let mut devices: Vec<DeviceMemoryRow> = c
        .memory
        .devices
        .iter()
        .map(|(id, m)| {
            let (device_index, device) = c.defs.device(*id);
            DeviceMemoryRow {
                device_index,
                device,
                allocations: m.allocations,
                allocated_bytes: m.allocated_bytes,
                frees: m.frees,
                freed_bytes: m.freed_bytes,
                runtime_allocations: m.runtime_allocations,
                runtime_allocated_bytes: m.runtime_allocated_bytes,
                runtime_frees: m.runtime_frees,
                runtime_freed_bytes: m.runtime_freed_bytes,
                peak_in_use_bytes: m.peak,
                in_use_at_exit_bytes: m.in_use,
            }
        })
        .collect();
    devices.sort_by(|a, b| (a.device_index, &a.device).cmp(&(b.device_index, &b.device)));
    let leaks = c
        .memory
        .leaks()
        .into_iter()
        .map(|l| {
            let stack = c.defs.launch_stack_names(l.stack, l.api);
            let display_stack = Stack::read(&c.defs, &c.cfg.user_code, l.stack).user_first(&c.defs, l.api);
            let (device_index, device) = c.defs.device(l.device);
            LeakRow {
                device_index,
                device,
                pid: l.pid,
                process: c.defs.process_name(l.pid),
                allocations: l.count,
                bytes: l.bytes,
                caching_allocator: allocators::caching_allocator(&stack),
                by_runtime: l.by_runtime,
                stack,
                display_stack,
            }
        })
        .collect();
    Memory {
        devices,
        without_api_call: runtime_memory_rows(c),
        leaks,
        unmatched_frees: c.memory.unmatched_frees,
        leak_matching: "fifo-by-size",
    }
}

fn runtime_memory_rows(c: &Collector) -> Vec<RuntimeMemoryRow> {
    let mut rows: Vec<RuntimeMemoryRow> = c
        .memory
        .without_api_call
        .iter()
        .map(|(&(device, kind, name), &(records, bytes))| {
            let (device_index, device) = c.defs.device(device);
            RuntimeMemoryRow {
                device_index,
                device,
                kind: own_record::op_kind_name(kind),
                name: c.defs.str_or(name, "[unnamed]").to_owned(),
                records,
                bytes,
            }
        })
        .collect();
    rows.sort_by(|a, b| {
        (a.device_index, &a.device, a.kind, &a.name).cmp(&(b.device_index, &b.device, b.kind, &b.name))
    });
    rows
}

fn cpu_before(c: &Collector, s: Option<SampleRef>) -> Option<CpuBefore> {
    s.map(|s| {
        let stack = Stack::read(&c.defs, &c.cfg.user_code, s.stack);
        CpuBefore {
            pid: s.pid,
            tid: s.tid,
            time_ns: s.time,
            stack: stack.names_own_collapsed(),
            display_stack: stack.cpu_view(),
        }
    })
}

fn device_row(
    c: &Collector,
    id: DeviceId,
    t: &DeviceTimeline,
    windows: &[WindowRow],
    session_ns: u64,
) -> DeviceRow {
    let (device_index, device) = c.defs.device(id);
    DeviceRow {
        device_index,
        device,
        kernels: t.kernels,
        kernel_busy_ns: t.busy,
        busy_intervals: t.pieces,
        session_ns,
        busy_pct: pct(t.busy, session_ns),
        idle_gap_threshold_ns: c.cfg.idle_gap_threshold_ns,
        idle_gaps: t.gaps_over,
        idle_gap_total_ns: t.gap_total,
        largest_gaps: t
            .top
            .iter()
            .map(|g| GapRow {
                start_ns: g.start,
                end_ns: g.end,
                duration_ns: g.duration(),
                cpu_before: cpu_before(c, g.cpu_before.user),
                xpuprof_samples_before: g.cpu_before.profiler,
            })
            .collect(),
        late_ops: t.late,
        windows: windows
            .iter()
            .zip(&t.window_busy)
            .map(|(w, &busy)| WindowBusyRow {
                start_ns: w.start_ns,
                end_ns: w.end_ns,
                busy_ns: busy,
                busy_pct: pct(busy, w.duration_ns),
            })
            .collect(),
    }
}

/// Finishes every device's timeline (they are consumed) and makes its row, by device index.
fn device_rows(c: &mut Collector, windows: &[WindowRow], session_ns: u64) -> Vec<(DeviceId, DeviceRow)> {
    let spans: Vec<(u64, u64)> = windows.iter().map(|w| (w.start_ns, w.end_ns)).collect();
    let threshold = c.cfg.idle_gap_threshold_ns;
    let finished: Vec<(DeviceId, DeviceTimeline)> = std::mem::take(&mut c.timelines)
        .into_iter()
        .map(|(id, t)| (id, t.finish(&spans, threshold, &c.cpu.index)))
        .collect();
    let mut rows: Vec<(DeviceId, DeviceRow)> =
        finished.iter().map(|(id, t)| (*id, device_row(c, *id, t, windows, session_ns))).collect();
    rows.sort_by(|a, b| (a.1.device_index, &a.1.device).cmp(&(b.1.device_index, &b.1.device)));
    rows
}

/// The per-rank rows, kernels named as the kernel table names them.
fn rank_rows(c: &Collector, labels: &IdMap<StrId, (String, String)>) -> Vec<crate::ranks::RankRow> {
    let kernel = |id: StrId| match labels.get(&id) {
        Some((label, _)) => label.clone(),
        None => c.defs.str_or(id, "[unnamed kernel]").to_owned(),
    };
    c.defs.ranks().rows(|id| c.defs.str(id).to_owned(), kernel)
}

fn thread_rows(c: &Collector) -> Vec<ThreadRow> {
    let mut rows: Vec<ThreadRow> = c
        .threads
        .iter()
        .map(|(&(pid, tid), t)| ThreadRow {
            pid,
            process: c.defs.process_name(pid),
            tid,
            name: c.defs.thread_name(pid, tid).to_owned(),
            launches: t.launch_api_calls.max(t.launch_sites),
            launch_sites: t.launch_sites,
            launch_api_calls: t.launch_api_calls,
            launch_api_ns: t.launch_api_ns,
            sync_api_calls: t.sync_api_calls,
            sync_api_ns: t.sync_api_ns,
            sync_ops: t.sync_ops,
            sync_op_ns: t.sync_op_ns,
            api_calls: t.api_calls,
            api_ns: t.api_ns,
        })
        .collect();
    rows.sort_by_key(|r| (r.pid, r.tid));
    rows
}

fn cpu_profile(c: &Collector, p: &CpuAggProfile) -> CpuProfile {
    let hot = p.hot_functions(&c.defs);
    CpuProfile {
        samples: p.samples,
        weight_ns: p.weight,
        hot_functions: hot
            .into_iter()
            .take(MAX_HOT_FUNCTIONS)
            .map(|h| HotFunctionRow {
                self_pct: pct(h.self_ns, p.weight),
                function: h.name,
                self_ns: h.self_ns,
                total_ns: h.total_ns,
                self_samples: h.self_samples,
            })
            .collect(),
    }
}

fn counter_rows(c: &Collector) -> Vec<CounterRow> {
    let mut rows: Vec<CounterRow> = c
        .counters
        .iter()
        .map(|(&(name, device), a)| {
            let (device_index, device) =
                if device.is_none() { (-1, String::new()) } else { c.defs.device(device) };
            CounterRow {
                name: c.defs.str_or(name, "[unnamed counter]").to_owned(),
                device_index,
                device,
                count: a.count,
                min: a.min,
                max: a.max,
                mean: a.sum / a.count as f64,
                last: a.last,
            }
        })
        .collect();
    rows.sort_by(|a, b| (&a.name, a.device_index).cmp(&(&b.name, b.device_index)));
    rows
}

#[cfg(test)]
mod opener_tests {
    use super::*;

    #[test]
    fn openers_are_named_in_kebab_case() {
        assert_eq!(opener_name(WindowOpener::Start), "start");
        assert_eq!(opener_name(WindowOpener::Other), "other");
        assert_eq!(opener_name(WindowOpener::Trigger), "trigger");
    }
}
