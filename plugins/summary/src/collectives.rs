//! The "Collectives" section: each collective of a job matched across its ranks (by
//! communicator and sequence number, [`xpuprof_toolbox::collectives`]), per kind its count,
//! bytes, time, bandwidth (bytes over the time of the collectives that stated their bytes) and
//! wait (from the first rank's arrival to the last's: a rank arrives when its
//! collective starts on its device), the rank that was last most often and the one that made
//! the others wait longest, with the CPU stack it was in just before arriving; the collectives
//! with the longest waits; and each rank's step time where steps are known (a range every rank
//! repeats: a training loop's step annotation; else capture windows, one per step).
//!
//! "Just before arriving" is the heaviest stack among the rank's CPU samples (on- and off-CPU,
//! by weight, any thread: a framework may launch its collectives from another thread than the
//! one that made it late) from its previous collective's end to this one's start, the heaviest
//! with a Python frame first when one of the [`CANDIDATES`] heaviest has one (a worker thread's
//! native wait is not the line a user looks for), as they came before the collective (samples are kept for [`SAMPLES_FOR_NS`], at most [`SAMPLES_KEPT`] per process);
//! without samples there, the collective's launch stack stands for it, and the table says
//! which it shows.

use std::collections::VecDeque;

use serde::Serialize;
use xpuprof_sdk::hash::IdMap;
use xpuprof_sdk::model::*;
use xpuprof_toolbox::collectives::{self as coll, CollectiveKey, Communicator, Numbering};
use xpuprof_toolbox::python_frame::PyFrameName;

use crate::defs::Defs;

/// How long a process's CPU samples are kept for the collectives that follow them.
const SAMPLES_FOR_NS: u64 = 10_000_000_000;
/// CPU samples kept per process at most.
const SAMPLES_KEPT: usize = 65_536;
/// How far back a process's first collective looks for its stack.
const FIRST_LOOKBACK_NS: u64 = 1_000_000_000;
/// Stacks kept per arrival, heaviest first, for the report to choose among.
const CANDIDATES: usize = 4;
/// The key capture windows (a marker-driven window per step: a profiler-API start/stop pair,
/// an annotation range) are kept under among the ranges, for steps where no range repeats.
const WINDOWS: StrId = StrId(u32::MAX);
/// Slowest collectives listed.
const SLOWEST: usize = 5;

#[derive(Debug, Clone, Copy)]
struct Arrival {
    pid: u32,
    start: u64,
    end: u64,
    bytes: u64,
    /// The heaviest sampled stacks before it, heaviest first ([`StackId::NONE`] past the last).
    sampled: [StackId; CANDIDATES],
    /// The collective's launch stack.
    launch: StackId,
}

#[derive(Debug)]
struct Instance {
    op: CollectiveOp,
    arrivals: Vec<Arrival>,
}

/// What the section aggregates as records stream in.
#[derive(Debug, Default)]
pub struct CollectivesAgg {
    numbering: Numbering,
    instances: IdMap<CollectiveKey, Instance>,
    samples: IdMap<u32, VecDeque<(u64, u64, StackId)>>,
    last_end: IdMap<u32, u64>,
    /// Per (process, range name): how its ranges went.
    ranges: IdMap<(u32, StrId), Ranges>,
}

impl CollectivesAgg {
    /// Notes one record.
    pub fn add(&mut self, r: &Record) {
        match r {
            Record::CpuSample(s) => {
                let q = self.samples.entry(s.pid).or_default();
                q.push_back((s.time, s.weight, s.stack));
                while q.len() > SAMPLES_KEPT || q.front().is_some_and(|f| f.0 + SAMPLES_FOR_NS < s.time) {
                    q.pop_front();
                }
            }
            Record::DeviceOp(op) if op.collective != CollectiveOp::None => self.collective(op),
            Record::Range(a) => self.ranges.entry((a.pid, a.name)).or_default().add(a.start, a.end),
            // A source announces a window with `end` 0 and sends it again when it closes.
            Record::Window(w) if w.end != 0 && w.pid != 0 => {
                self.ranges.entry((w.pid, WINDOWS)).or_default().add(w.start, w.end)
            }
            _ => {}
        }
    }

    fn collective(&mut self, op: &DeviceOp) {
        let Some(key) = self.numbering.key(op) else { return };
        let from = self.last_end.get(&op.pid).copied().unwrap_or(op.start.saturating_sub(FIRST_LOOKBACK_NS));
        self.last_end.insert(op.pid, op.end);
        let sampled =
            self.samples.get(&op.pid).map_or([StackId::NONE; CANDIDATES], |q| heaviest(q, from, op.start));
        let launch = op.launch.map_or(StackId::NONE, |l| l.stack);
        let a = Arrival { pid: op.pid, start: op.start, end: op.end, bytes: op.bytes, sampled, launch };
        let i =
            self.instances.entry(key).or_insert_with(|| Instance { op: op.collective, arrivals: Vec::new() });
        i.arrivals.push(a);
    }
}

/// The ranges of one name in one process.
#[derive(Debug, Default, Clone, Copy)]
struct Ranges {
    count: u64,
    total: u64,
    longest: u64,
    first_start: u64,
    last_end: u64,
}

impl Ranges {
    fn add(&mut self, start: u64, end: u64) {
        let d = end.saturating_sub(start);
        self.first_start = if self.count == 0 { start } else { self.first_start.min(start) };
        (self.count, self.total, self.longest, self.last_end) =
            (self.count + 1, self.total + d, self.longest.max(d), self.last_end.max(end));
    }
}

/// The stacks with the most sample weight in `(from, to]`, heaviest first.
fn heaviest(q: &VecDeque<(u64, u64, StackId)>, from: u64, to: u64) -> [StackId; CANDIDATES] {
    let mut by: Vec<(StackId, u64)> = Vec::new();
    // Samples come in about time order: those after `from` are the few since the previous
    // collective.
    let after = q.partition_point(|x| x.0 <= from);
    for &(_, w, s) in q.range(after..).filter(|(t, _, s)| *t > from && *t <= to && !s.is_none()) {
        match by.iter_mut().find(|(id, _)| *id == s) {
            Some(e) => e.1 += w,
            None => by.push((s, w)),
        }
    }
    by.sort_by_key(|&(s, w)| (std::cmp::Reverse(w), s.0));
    let mut out = [StackId::NONE; CANDIDATES];
    for (o, (s, _)) in out.iter_mut().zip(by) {
        *o = s;
    }
    out
}

/// The stack an arrival shows, and whether it was sampled: the heaviest sampled one with a
/// Python frame, else the heaviest sampled, else the launch stack.
fn shown(a: &Arrival, defs: &Defs, python: &mut IdMap<StackId, bool>) -> (StackId, bool) {
    let mut has_python = |s: StackId| {
        *python
            .entry(s)
            .or_insert_with(|| defs.stack_names(s).iter().any(|n| PyFrameName::parse(n).is_some()))
    };
    let sampled = a.sampled.iter().copied().filter(|s| !s.is_none());
    if let Some(s) = sampled.clone().find(|s| has_python(*s)).or_else(|| sampled.clone().next()) {
        return (s, true);
    }
    (a.launch, false)
}

/// The section in `summary.json`.
#[derive(Debug, Clone, Serialize)]
pub struct CollectivesReport {
    /// Ranks (processes) that ran collectives.
    pub ranks: usize,
    /// Collectives seen (one per communicator and sequence number).
    pub collectives: u64,
    /// Those every rank of their communicator ran.
    pub matched: u64,
    /// Per kind, by wait.
    pub kinds: Vec<KindRow>,
    /// The collectives with the longest waits.
    pub slowest: Vec<SlowRow>,
    /// The annotation range taken for steps (`""`: none), and each rank's step times.
    pub step_range: String,
    /// Whether waits, last ranks and stacks count only collectives within the steps (from the
    /// first step's start to the last one's end of the last rank to arrive): set where steps
    /// are known, so the set-up's collectives (a rank started late) do not hide a straggler.
    pub waits_in_steps: bool,
    /// Per rank, its steps.
    pub steps: Vec<StepRow>,
}

/// One collective kind.
#[derive(Debug, Clone, Serialize)]
pub struct KindRow {
    /// `allreduce`, `allgather`...
    pub kind: String,
    /// Collectives.
    pub count: u64,
    /// Those every rank of their communicator ran.
    pub matched: u64,
    /// Bytes, as the backend states them per collective (0: not stated).
    pub bytes: u64,
    /// `bytes` over the time of the collectives that stated them, in 10^9 bytes per second
    /// (the algorithm bandwidth; 0 when none stated bytes).
    pub gb_per_s: f64,
    /// From the last rank's arrival to the last end, summed.
    pub time_ns: u64,
    /// From the first rank's arrival to the last's, summed (matched collectives).
    pub wait_ns: u64,
    /// The rank that was last most often, and how often.
    pub last_most_often: String,
    /// How often it was last.
    pub last_count: u64,
    /// The rank whose late arrivals made the others wait longest.
    pub most_wait_on: String,
    /// That wait, ns.
    pub most_wait_ns: u64,
    /// Its stack just before arriving at the collectives it was last for (the one with most
    /// wait), innermost first.
    pub stack: Vec<String>,
    /// The innermost Python line of that stack (`function (file:line)`), `""` when none.
    pub python_line: String,
    /// Where the stack comes from: `CPU samples` or `launch stack`.
    pub stack_from: String,
}

/// One collective with a long wait.
#[derive(Debug, Clone, Serialize)]
pub struct SlowRow {
    /// `allreduce #412 on communicator 1`.
    pub collective: String,
    /// From the first rank's arrival to the last's.
    pub wait_ns: u64,
    /// The rank that arrived last.
    pub last: String,
}

/// One rank's steps.
#[derive(Debug, Clone, Serialize)]
pub struct StepRow {
    /// The rank.
    pub rank: String,
    /// Steps.
    pub steps: u64,
    /// Mean step time.
    pub mean_ns: u64,
    /// Longest step.
    pub max_ns: u64,
}

#[derive(Default)]
struct KindAgg {
    count: u64,
    matched: u64,
    bytes: u64,
    time: u64,
    /// Time of the collectives that stated their bytes.
    bytes_time: u64,
    wait: u64,
    last: IdMap<u32, u64>,
    wait_on: IdMap<u32, u64>,
    stacks: IdMap<(u32, StackId, bool), u64>,
}

/// The section, or `None` when the session has no collective.
pub fn report(agg: &CollectivesAgg, defs: &Defs) -> Option<CollectivesReport> {
    if agg.instances.is_empty() {
        return None;
    }
    let rank = |pid: u32| defs.process_name(pid).unwrap_or_else(|| format!("pid {pid}"));
    let mut members: IdMap<Communicator, Vec<u32>> = IdMap::default();
    for (k, i) in &agg.instances {
        let m = members.entry(k.communicator).or_default();
        for a in &i.arrivals {
            if !m.contains(&a.pid) {
                m.push(a.pid);
            }
        }
    }
    let mut ranks: Vec<u32> = members.values().flatten().copied().collect();
    ranks.sort_unstable();
    ranks.dedup();
    let (step, steps) = steps(agg, &ranks, &rank);
    let in_steps = |pid: u32, t: u64| {
        step.is_none_or(|name| {
            agg.ranges.get(&(pid, name)).is_some_and(|r| r.first_start <= t && t <= r.last_end)
        })
    };
    let mut kinds: IdMap<CollectiveOp, KindAgg> = IdMap::default();
    let mut slow: Vec<(u64, CollectiveKey, CollectiveOp, u32)> = Vec::new();
    let mut matched_all = 0;
    let mut python = IdMap::default();
    for (k, i) in &agg.instances {
        let e = kinds.entry(i.op).or_default();
        e.count += 1;
        let bytes = i.arrivals.iter().map(|a| a.bytes).max().unwrap_or(0);
        e.bytes += bytes;
        let last = i.arrivals.iter().max_by_key(|a| (a.start, a.pid)).copied();
        let first = i.arrivals.iter().map(|a| a.start).min().unwrap_or(0);
        let end = i.arrivals.iter().map(|a| a.end).max().unwrap_or(0);
        let Some(last) = last else { continue };
        let time = end.saturating_sub(last.start);
        e.time += time;
        if bytes > 0 {
            e.bytes_time += time;
        }
        let mut pids: Vec<u32> = i.arrivals.iter().map(|a| a.pid).collect();
        pids.sort_unstable();
        pids.dedup();
        let everyone = members.get(&k.communicator).map_or(0, Vec::len);
        if pids.len() != i.arrivals.len() || pids.len() != everyone {
            continue;
        }
        e.matched += 1;
        matched_all += 1;
        if everyone < 2 || !in_steps(last.pid, last.start) {
            continue;
        }
        let wait = last.start - first;
        e.wait += wait;
        *e.last.entry(last.pid).or_default() += 1;
        *e.wait_on.entry(last.pid).or_default() += wait;
        let (stack, sampled) = shown(&last, defs, &mut python);
        *e.stacks.entry((last.pid, stack, sampled)).or_default() += wait;
        slow.push((wait, *k, i.op, last.pid));
    }
    let mut rows: Vec<KindRow> = kinds.into_iter().map(|(op, e)| kind_row(op, e, defs, &rank)).collect();
    rows.sort_by(|a, b| b.wait_ns.cmp(&a.wait_ns).then(a.kind.cmp(&b.kind)));
    slow.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let slowest = slow
        .iter()
        .take(SLOWEST)
        .map(|(w, k, op, pid)| SlowRow { collective: coll::label(*op, k), wait_ns: *w, last: rank(*pid) })
        .collect();
    Some(CollectivesReport {
        ranks: ranks.len(),
        collectives: agg.instances.len() as u64,
        matched: matched_all,
        kinds: rows,
        slowest,
        step_range: match step {
            Some(WINDOWS) => "capture windows".to_owned(),
            Some(n) => defs.str(n).to_owned(),
            None => String::new(),
        },
        waits_in_steps: step.is_some(),
        steps,
    })
}

fn kind_row(op: CollectiveOp, e: KindAgg, defs: &Defs, rank: &dyn Fn(u32) -> String) -> KindRow {
    let top = |m: &IdMap<u32, u64>| {
        m.iter().max_by_key(|(p, n)| (**n, std::cmp::Reverse(**p))).map(|(p, n)| (*p, *n))
    };
    let last = top(&e.last);
    let wait_on = top(&e.wait_on);
    let stack = wait_on.and_then(|(pid, _)| {
        e.stacks
            .iter()
            .filter(|((p, _, _), _)| *p == pid)
            .max_by_key(|((_, s, _), w)| (**w, std::cmp::Reverse(s.0)))
            .map(|((_, s, sampled), _)| (*s, *sampled))
    });
    let names = stack.map_or(Vec::new(), |(s, _)| defs.stack_names(s));
    let python_line = names.iter().find(|n| PyFrameName::parse(n).is_some()).cloned().unwrap_or_default();
    KindRow {
        kind: coll::op_name(op).to_owned(),
        count: e.count,
        matched: e.matched,
        bytes: e.bytes,
        gb_per_s: if e.bytes_time == 0 {
            0.0
        } else {
            (e.bytes as f64 / e.bytes_time as f64 * 1000.0).round() / 1000.0
        },
        time_ns: e.time,
        wait_ns: e.wait,
        last_most_often: last.map_or(String::new(), |(p, _)| rank(p)),
        last_count: last.map_or(0, |(_, n)| n),
        most_wait_on: wait_on.map_or(String::new(), |(p, _)| rank(p)),
        most_wait_ns: wait_on.map_or(0, |(_, w)| w),
        stack: names,
        python_line,
        stack_from: match stack {
            Some((_, true)) => "CPU samples".to_owned(),
            Some((_, false)) => "launch stack".to_owned(),
            None => String::new(),
        },
    }
}

/// The range name taken for steps: of the names every rank in `pids` has at least twice and
/// whose ranges cover at least half the time from their first start to their last end (steps
/// tile a loop; a library's range around each of its calls, a communication library's around
/// each collective, covers a sliver), the one with the most time (a training loop's step range
/// holds the rest), else the capture windows when every rank has two or more; and each rank's
/// steps.
fn steps(agg: &CollectivesAgg, pids: &[u32], rank: &dyn Fn(u32) -> String) -> (Option<StrId>, Vec<StepRow>) {
    let mut totals: IdMap<StrId, (usize, u64)> = IdMap::default();
    for ((pid, name), r) in &agg.ranges {
        let span = r.last_end.saturating_sub(r.first_start);
        if r.count >= 2 && pids.contains(pid) && r.total.saturating_mul(2) >= span {
            let e = totals.entry(*name).or_default();
            (e.0, e.1) = (e.0 + 1, e.1 + r.total);
        }
    }
    // Ranges first; capture windows where no range repeats on every rank.
    let Some((name, _)) = totals
        .into_iter()
        .filter(|(_, (ranks, _))| *ranks == pids.len())
        .max_by_key(|(id, (_, total))| (*id != WINDOWS, *total, std::cmp::Reverse(id.0)))
    else {
        return (None, Vec::new());
    };
    let rows = pids
        .iter()
        .filter_map(|pid| agg.ranges.get(&(*pid, name)).map(|r| (pid, r)))
        .map(|(pid, r)| StepRow {
            rank: rank(*pid),
            steps: r.count,
            mean_ns: r.total / r.count,
            max_ns: r.longest,
        })
        .collect();
    (Some(name), rows)
}

/// A Python line for the table: its function and file name (`straggle (train.py:29)`); the JSON
/// keeps the whole path.
fn short_line(line: &str) -> String {
    match PyFrameName::parse(line) {
        Some(f) => format!("{} ({}:{})", f.function, f.file.rsplit('/').next().unwrap_or(f.file), f.line),
        None => line.to_owned(),
    }
}

/// The section in `summary.txt`.
pub fn render(r: &Option<CollectivesReport>, rows: usize, out: &mut String) {
    use crate::fmt::{bytes, ns, stack, Table};
    use crate::text::section;
    let Some(r) = r else { return };
    let title = format!(
        "Collectives ({} of {} matched across {} ranks by communicator and sequence number; wait: from the \
         first rank's arrival to the last's{})",
        r.matched,
        r.collectives,
        r.ranks,
        if r.waits_in_steps {
            format!(", within the steps (range \"{}\")", r.step_range)
        } else {
            String::new()
        }
    );
    section(out, &title, r.kinds.len(), r.kinds.len());
    let mut t = Table::new(&[
        "<Kind",
        "Count",
        "Matched",
        "Bytes",
        "Time",
        "GB/s",
        "Wait",
        "<Last most often",
        "<Most wait on",
        "<Its CPU stack before arriving",
    ]);
    for k in &r.kinds {
        let from = if k.stack_from.is_empty() { String::new() } else { format!(" [{}]", k.stack_from) };
        t.row(vec![
            k.kind.clone(),
            k.count.to_string(),
            k.matched.to_string(),
            if k.bytes == 0 { "-".to_owned() } else { bytes(k.bytes) },
            ns(k.time_ns),
            if k.gb_per_s == 0.0 { "-".to_owned() } else { format!("{:.2}", k.gb_per_s) },
            ns(k.wait_ns),
            if k.last_count == 0 {
                "-".to_owned()
            } else {
                format!("{} ({}x)", k.last_most_often, k.last_count)
            },
            if k.most_wait_ns == 0 {
                "-".to_owned()
            } else {
                format!("{} ({})", k.most_wait_on, ns(k.most_wait_ns))
            },
            // The Python line when the stack has one: what the user changes.
            match k.python_line.as_str() {
                "" if k.stack.is_empty() => "-".to_owned(),
                "" => format!("{}{from}", stack(&k.stack, 3)),
                line => format!("{}{from}", short_line(line)),
            },
        ]);
    }
    t.render(out);
    if !r.slowest.is_empty() {
        section(out, "Longest waits at collectives", r.slowest.len(), r.slowest.len());
        let mut t = Table::new(&["<Collective", "Wait", "<Last to arrive"]);
        for s in r.slowest.iter().take(rows) {
            t.row(vec![s.collective.clone(), ns(s.wait_ns), s.last.clone()]);
        }
        t.render(out);
    }
    if !r.steps.is_empty() {
        section(
            out,
            &format!("Step time per rank (range \"{}\")", r.step_range),
            r.steps.len(),
            r.steps.len(),
        );
        let mut t = Table::new(&["<Rank", "Steps", "Mean", "Max"]);
        for s in &r.steps {
            t.row(vec![s.rank.clone(), s.steps.to_string(), ns(s.mean_ns), ns(s.max_ns)]);
        }
        t.render(out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(pid: u32, start: u64, end: u64) -> Record {
        let launch = LaunchRef::default().stack(StackId(9));
        Record::DeviceOp(
            DeviceOp::default()
                .pid(pid)
                .stream(StreamId(pid))
                .start(start)
                .end(end)
                .collective(CollectiveOp::AllGather)
                .launch(Some(launch)),
        )
    }

    #[test]
    fn without_samples_or_ranges_the_launch_stack_and_capture_windows_stand_in() {
        let mut defs = Defs::default();
        let mut agg = CollectivesAgg::default();
        let name = Record::Str(StrDef::new(StrId(1), "rank 1 (h, 20)"));
        let frame = Record::Frame(FrameDef::default().id(FrameId(1)).name(StrId(2)));
        let line = Record::Str(StrDef::new(StrId(2), "gather (model.py:7)"));
        let stack = Record::Stack(StackDef::new(StackId(9), vec![FrameId(1)]));
        let proc1 = Record::Process(ProcessDef::default().pid(20).rank(Some(1)).name(StrId(1)));
        for r in [&name, &line, &frame, &stack, &proc1] {
            defs.add(r);
        }
        // Three all-gathers; rank 1 (pid 20) is 5 µs late at each; two windows per rank.
        for k in 0..3u64 {
            let t = k * 1_000_000;
            agg.add(&op(10, t, t + 100_000));
            agg.add(&op(20, t + 5_000, t + 100_000));
        }
        for pid in [10, 20] {
            for (s, e) in [(0, 1_500_000), (1_600_000, 3_000_000)] {
                agg.add(&Record::Window(CaptureWindow::default().pid(pid).start(s).end(e)));
            }
        }
        let r = report(&agg, &defs).unwrap();
        assert_eq!((r.collectives, r.matched, r.ranks), (3, 3, 2));
        let k = &r.kinds[0];
        assert_eq!((k.kind.as_str(), k.wait_ns, k.last_count), ("allgather", 15_000, 3));
        assert_eq!(k.most_wait_on, "rank 1 (h, 20)");
        assert_eq!((k.python_line.as_str(), k.stack_from.as_str()), ("gather (model.py:7)", "launch stack"));
        assert_eq!((r.step_range.as_str(), r.steps.len(), r.steps[0].steps), ("capture windows", 2, 2));
        assert_eq!(k.gb_per_s, 0.0, "no bytes stated");
        let mut text = String::new();
        render(&Some(r), 10, &mut text);
        assert!(text.contains("Collectives (3 of 3 matched across 2 ranks"), "{text}");
    }

    #[test]
    fn a_range_around_each_collective_is_not_taken_for_steps() {
        let mut defs = Defs::default();
        let mut agg = CollectivesAgg::default();
        for r in [
            Record::Str(StrDef::new(StrId(3), "ncclAllReduce")),
            Record::Str(StrDef::new(StrId(4), "train step")),
            Record::Process(ProcessDef::default().pid(10).rank(Some(0))),
            Record::Process(ProcessDef::default().pid(20).rank(Some(1))),
        ] {
            defs.add(&r);
        }
        // Each rank: a 100 µs library range around each of three collectives 1 ms apart.
        for k in 0..3u64 {
            let t = k * 1_000_000;
            for pid in [10, 20] {
                agg.add(&op(pid, t, t + 100_000));
                let call = Annotation::default().pid(pid).start(t).end(t + 100_000).name(StrId(3));
                agg.add(&Record::Range(call));
            }
        }
        let r = report(&agg, &defs).unwrap();
        assert_eq!((r.step_range.as_str(), r.steps.len()), ("", 0), "{r:?}");
        // A step range that tiles the loop is taken.
        for pid in [10, 20] {
            for k in 0..3u64 {
                let step = Annotation::default().pid(pid).start(k * 1_000_000).end(k * 1_000_000 + 990_000);
                agg.add(&Record::Range(step.name(StrId(4))));
            }
        }
        let r = report(&agg, &defs).unwrap();
        assert_eq!((r.step_range.as_str(), r.steps.len(), r.steps[0].steps), ("train step", 2, 3), "{r:?}");
    }

    #[test]
    fn bandwidth_is_the_bytes_over_the_time_of_the_collectives_that_stated_them() {
        let mut agg = CollectivesAgg::default();
        let with = |start: u64, bytes: u64| match op(10, start, start + 1_000_000) {
            Record::DeviceOp(o) => Record::DeviceOp(o.bytes(bytes)),
            r => r,
        };
        // Two all-gathers of 16 MiB in 1 ms each, one without bytes (not counted in the rate).
        agg.add(&with(0, 16 << 20));
        agg.add(&with(2_000_000, 16 << 20));
        agg.add(&with(4_000_000, 0));
        let r = report(&agg, &Defs::default()).unwrap();
        let k = &r.kinds[0];
        assert_eq!((k.count, k.bytes, k.time_ns), (3, 32 << 20, 3_000_000));
        assert_eq!(k.gb_per_s, 16.777);
        let mut text = String::new();
        render(&Some(r), 10, &mut text);
        assert!(text.contains("16.78"), "{text}");
    }
}
