//! The record rules a source must follow, checked over everything it emitted in order: ids
//! defined before use and never redefined differently, clock domains defined and paired,
//! session-clock timestamps inside the session, host-only fields left alone.

use std::collections::{HashMap, HashSet};

use xpuprof_sdk::model::*;

use super::report::Report;

/// The id spaces of the model's definitions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Space {
    Str,
    Device,
    Stream,
    Module,
    Frame,
    Stack,
}

impl Space {
    fn name(self) -> &'static str {
        match self {
            Self::Str => "string",
            Self::Device => "device",
            Self::Stream => "stream",
            Self::Module => "module",
            Self::Frame => "frame",
            Self::Stack => "stack",
        }
    }

    fn record(self) -> &'static str {
        match self {
            Self::Str => "StrDef",
            Self::Device => "DeviceDef",
            Self::Stream => "StreamDef",
            Self::Module => "ModuleDef",
            Self::Frame => "FrameDef",
            Self::Stack => "StackDef",
        }
    }
}

/// The definition a record makes, and its content (to spot a different redefinition).
fn definition(r: &Record) -> Option<(Space, u32, String)> {
    Some(match r {
        Record::Str(d) => (Space::Str, d.id.0, format!("{:?}", d.text)),
        Record::Device(d) => (Space::Device, d.id.0, format!("{d:?}")),
        Record::Stream(d) => (Space::Stream, d.id.0, format!("{d:?}")),
        Record::Module(d) => (Space::Module, d.id.0, format!("{d:?}")),
        Record::Frame(d) => (Space::Frame, d.id.0, format!("{d:?}")),
        Record::Stack(d) => (Space::Stack, d.id.0, format!("{d:?}")),
        _ => return None,
    })
}

/// The ids a record refers to, with the field that holds each.
fn references(r: &Record) -> Vec<(Space, u32, &'static str)> {
    let s = |id: StrId, f| (Space::Str, id.0, f);
    let mut v = match r {
        Record::Process(p) => vec![s(p.command, "command")],
        Record::Thread(t) => vec![s(t.name, "name")],
        Record::Device(d) => vec![
            s(d.name, "name"),
            s(d.arch, "arch"),
            s(d.vendor_name, "vendor_name"),
            (Space::Device, d.parent.0, "parent"),
        ],
        Record::Stream(st) => {
            vec![
                (Space::Device, st.device.0, "device"),
                s(st.name, "name"),
                (Space::Stream, st.parent.0, "parent"),
            ]
        }
        Record::Module(m) => vec![s(m.path, "path")],
        Record::Frame(f) => {
            let mut v = vec![(Space::Module, f.module.0, "module"), s(f.name, "name"), s(f.file, "file")];
            v.extend(f.inlined.iter().map(|i| s(*i, "inlined")));
            v
        }
        Record::Stack(k) => k.frames.iter().map(|f| (Space::Frame, f.0, "frames")).collect(),
        Record::ClockDomain(c) => vec![s(c.name, "name")],
        Record::ApiCall(a) => vec![s(a.name, "name")],
        Record::DeviceOp(o) => {
            vec![
                (Space::Device, o.device.0, "device"),
                (Space::Stream, o.stream.0, "stream"),
                s(o.name, "name"),
            ]
        }
        Record::LaunchSite(l) => vec![s(l.api, "api"), (Space::Stack, l.stack.0, "stack")],
        Record::CpuSample(c) => vec![(Space::Stack, c.stack.0, "stack")],
        Record::Marker(a) | Record::Range(a) => vec![s(a.name, "name"), s(a.domain, "domain")],
        Record::Counter(c) => vec![(Space::Device, c.device.0, "device"), s(c.name, "name")],
        Record::Loss(l) => vec![s(l.cause, "cause")],
        Record::Overhead(o) => vec![s(o.name, "name"), (Space::Device, o.device.0, "device")],
        Record::DeviceSample(d) => vec![
            s(d.kernel, "kernel"),
            s(d.stall, "stall"),
            s(d.file, "file"),
            s(d.instruction, "instruction"),
            s(d.call_file, "call_file"),
            (Space::Device, d.device.0, "device"),
        ],
        _ => vec![],
    };
    v.retain(|(_, id, _)| *id != 0);
    v
}

/// The record's kind as the author wrote it.
fn kind(r: &Record) -> &'static str {
    Record::tags().iter().find(|(t, _)| *t == r.tag()).map_or("record", |(_, n)| n)
}

/// The record's timestamps and their clock domain.
fn times(r: &Record) -> Option<(ClockDomain, Vec<(&'static str, u64)>)> {
    Some(match r {
        Record::ApiCall(a) => (a.clock, vec![("start", a.start), ("end", a.end)]),
        Record::DeviceOp(o) => (o.clock, vec![("start", o.start), ("end", o.end)]),
        Record::LaunchSite(l) => (l.clock, vec![("time", l.time)]),
        Record::CpuSample(c) => (c.clock, vec![("time", c.time)]),
        Record::Marker(a) | Record::Range(a) => (a.clock, vec![("start", a.start), ("end", a.end)]),
        Record::Counter(c) => (c.clock, vec![("time", c.time)]),
        Record::Loss(l) => (l.clock, vec![("time", l.time)]),
        Record::Overhead(o) => (o.clock, vec![("start", o.start), ("end", o.end)]),
        Record::DeviceSample(d) => (d.clock, vec![("start", d.start), ("end", d.end)]),
        _ => return None,
    })
}

/// Checks a source's record stream as it arrives.
#[derive(Debug, Default)]
pub struct StreamRules {
    defined: HashMap<(Space, u32), String>,
    domains: HashSet<ClockDomain>,
    synced: HashSet<ClockDomain>,
    /// Records per non-session clock domain.
    domain_records: HashMap<ClockDomain, u64>,
    /// The session window the source's session-clock times must fall in.
    window: (u64, u64),
    records: u64,
    losses: u64,
}

/// Session-clock times may lie this far outside the checked window (records stamped just
/// before `start` returned, a clock read late in `stop`).
const SLACK_NS: u64 = 5_000_000_000;

impl StreamRules {
    /// Rules for a session that ran from `start` to `end` (session clock ns).
    pub fn new(start: u64, end: u64) -> Self {
        Self { window: (start.saturating_sub(SLACK_NS), end + SLACK_NS), ..Self::default() }
    }

    /// Checks one record, in emission order.
    pub fn record(&mut self, r: &Record, report: &mut Report) {
        self.records += 1;
        for (space, id, field) in references(r) {
            if !self.defined.contains_key(&(space, id)) {
                report.error(
                    "definitions come before their first use",
                    format!(
                        "{} uses {} {id} in `{field}` before any {} defined it; emit the definition first (on \
                         the same emitter or batch, or flush it before)",
                        kind(r),
                        space.name(),
                        space.record()
                    ),
                );
            }
        }
        if let Some((space, id, content)) = definition(r) {
            self.define(space, id, content, report);
        }
        self.clocks(r, report);
        if let Record::DeviceOp(o) = r {
            if o.launch.is_some() || o.recorded.is_some() {
                report.error(
                    "sources leave host-only fields alone",
                    "a DeviceOp sets `launch` or `recorded`, which the host's correlator fills; leave them \
                     None and give the op the launch's `correlation` (and its submission's `record`) instead",
                );
            }
        }
        if let Record::Loss(l) = r {
            self.losses += l.count;
        }
    }

    fn define(&mut self, space: Space, id: u32, content: String, report: &mut Report) {
        if id == 0 {
            report.error(
                "ids start at 1",
                format!("a {} defines id 0, which means \"none\"; number ids from 1", space.record()),
            );
            return;
        }
        match self.defined.get(&(space, id)) {
            Some(old) if *old != content => report.error(
                "an id is defined once",
                format!(
                    "{} {id} is defined twice with different contents ({old} then {content}); a source's ids \
                     name one thing for the whole session",
                    space.name()
                ),
            ),
            Some(_) => report.warn(
                "an id is defined once",
                format!(
                    "{} {id} is defined again with the same contents (harmless, but costs bytes)",
                    space.name()
                ),
            ),
            None => {
                self.defined.insert((space, id), content);
            }
        }
    }

    fn clocks(&mut self, r: &Record, report: &mut Report) {
        match r {
            Record::ClockDomain(d) => {
                if d.domain == ClockDomain::SESSION {
                    report.error(
                        "clock domains",
                        "a ClockDomainDef defines domain 0, the session clock itself; number your domains from 1",
                    );
                }
                self.domains.insert(d.domain);
            }
            Record::ClockSync(s) => {
                self.synced.insert(s.domain);
                self.in_session(r, "session_time", s.session_time, report);
            }
            _ => {}
        }
        let Some((domain, times)) = times(r) else { return };
        if domain != ClockDomain::SESSION {
            *self.domain_records.entry(domain).or_default() += 1;
            if !self.domains.contains(&domain) {
                report.warn(
                    "clock domains",
                    format!(
                        "{} names clock domain {} before a ClockDomainDef declared it; declare its tick rate \
                         (ticks_per_second) and width (valid_bits) first",
                        kind(r),
                        domain.0
                    ),
                );
            }
            return;
        }
        for (field, t) in times {
            self.in_session(r, field, t, report);
        }
    }

    fn in_session(&self, r: &Record, field: &str, t: u64, report: &mut Report) {
        let (lo, hi) = self.window;
        if t < lo || t > hi {
            report.error(
                "timestamps are session-clock nanoseconds",
                format!(
                    "{} has `{field}` = {t}, outside the session ({lo}..{hi} ns of CLOCK_MONOTONIC, with 5 s of \
                     slack); stamp records with CLOCK_MONOTONIC nanoseconds, or name your own clock in `clock` \
                     and pair it with ClockSync records",
                    kind(r)
                ),
            );
        }
    }

    /// Checks what can only be judged at the end of the stream.
    pub fn finish(&self, report: &mut Report) {
        let mut unpaired: Vec<_> =
            self.domain_records.iter().filter(|(d, _)| !self.synced.contains(d)).collect();
        unpaired.sort_by_key(|(d, _)| d.0);
        for (d, n) in unpaired {
            report.error(
                "clock domains are paired with the session clock",
                format!(
                    "{n} records are stamped in clock domain {}, which no ClockSync pairs with the session \
                     clock: the host cannot convert them and drops them as a loss; emit ClockSync records \
                     (a reading of your clock and of CLOCK_MONOTONIC at the same moment), at least at start \
                     and at stop",
                    d.0
                ),
            );
        }
        if self.records == 0 {
            report.warn("records", "the source emitted no records between start and stop");
        } else {
            report.pass(
                "records",
                format!(
                    "{} records, {} definitions, {} clock domains, {} items reported lost",
                    self.records,
                    self.defined.len(),
                    self.domains.len(),
                    self.losses
                ),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(records: &[Record]) -> Report {
        let mut rules = StreamRules::new(1_000_000_000_000, 1_000_100_000_000);
        let mut report = Report::default();
        for r in records {
            rules.record(r, &mut report);
        }
        rules.finish(&mut report);
        report
    }

    #[test]
    fn a_use_before_its_definition_names_the_record_the_field_and_the_fix() {
        let r = run(&[
            Record::ApiCall(
                ApiCall::default().start(1_000_000_000_000).end(1_000_000_000_000).name(StrId(3)),
            ),
            Record::Str(StrDef::new(StrId(3), "x")),
        ]);
        let e: Vec<_> = r.errors().collect();
        assert_eq!(e.len(), 1, "{r}");
        assert!(
            e[0].message.starts_with("ApiCall uses string 3 in `name` before any StrDef defined it"),
            "{r}"
        );
    }

    #[test]
    fn unpaired_clock_domains_and_foreign_timestamps_are_errors() {
        let r = run(&[
            Record::ClockDomain(ClockDomainDef::default().domain(ClockDomain(2)).ticks_per_second(100)),
            Record::CpuSample(CpuSample::default().clock(ClockDomain(2)).time(5)),
            Record::CpuSample(CpuSample::default().time(5)),
        ]);
        let rules: Vec<_> = r.errors().map(|f| f.rule).collect();
        assert_eq!(
            rules,
            ["timestamps are session-clock nanoseconds", "clock domains are paired with the session clock"],
            "{r}"
        );
    }

    #[test]
    fn a_different_redefinition_is_an_error_an_identical_one_a_warning() {
        let r = run(&[
            Record::Str(StrDef::new(StrId(1), "a")),
            Record::Str(StrDef::new(StrId(1), "a")),
            Record::Str(StrDef::new(StrId(1), "b")),
        ]);
        assert_eq!(r.errors().count(), 1, "{r}");
        assert_eq!(r.warnings().count(), 1, "{r}");
    }
}
