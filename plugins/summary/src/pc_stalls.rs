//! Device PC samples per kernel: where in each sampled kernel its warps were (the hot source
//! lines) and why they were not issuing (the top stall reasons), from the session's
//! [`DeviceSample`] records. Weighted by samples, apart from the device-time tables.

use std::collections::HashMap;

use serde::Serialize;
use xpuprof_sdk::model::{DeviceSample, Record, StrId};
use xpuprof_toolbox::kernel_name;

use crate::assemble::pct;
use crate::defs::Defs;

/// Stall reasons and lines shown per kernel.
pub const TOP: usize = 3;

#[derive(Debug, Default)]
struct KernelPc {
    samples: u64,
    with_line: u64,
    stalls: HashMap<StrId, u64>,
    lines: HashMap<(StrId, u32), u64>,
}

/// The samples of the session, per kernel.
#[derive(Debug, Default)]
pub struct PcStallsAgg {
    kernels: HashMap<StrId, KernelPc>,
}

impl PcStallsAgg {
    /// Adds a record (only device samples count).
    pub fn add(&mut self, r: &Record) {
        if let Record::DeviceSample(s) = r {
            self.sample(s);
        }
    }

    fn sample(&mut self, s: &DeviceSample) {
        let k = self.kernels.entry(s.kernel).or_default();
        k.samples += s.count;
        *k.stalls.entry(s.stall).or_default() += s.count;
        if s.line != 0 {
            k.with_line += s.count;
            *k.lines.entry((s.file, s.line)).or_default() += s.count;
        }
    }
}

/// A stall reason or a source line with its samples.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PcShare {
    /// The stall reason (`long_scoreboard`), or the line (`file.cu:212`).
    pub name: String,
    /// Samples.
    pub samples: u64,
    /// Share of the kernel's samples, 0-100.
    pub pct: f64,
}

/// One sampled kernel.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PcKernelRow {
    /// The kernel's short name.
    pub kernel: String,
    /// Its full (demangled) name.
    pub name: String,
    /// Samples in the kernel.
    pub samples: u64,
    /// Share of all samples, 0-100.
    pub samples_pct: f64,
    /// Share of its samples with a source line (0 where its code carries no line table), 0-100.
    pub with_line_pct: f64,
    /// Its top stall reasons.
    pub stalls: Vec<PcShare>,
    /// Its hot source lines.
    pub lines: Vec<PcShare>,
}

fn top<K>(m: &HashMap<K, u64>, of: u64, name: impl Fn(&K) -> String) -> Vec<PcShare> {
    let mut v: Vec<PcShare> =
        m.iter().map(|(k, &n)| PcShare { name: name(k), samples: n, pct: pct(n, of) }).collect();
    v.sort_by(|a, b| b.samples.cmp(&a.samples).then_with(|| a.name.cmp(&b.name)));
    v.truncate(TOP);
    v
}

/// The sampled kernels, most samples first (empty when the session has no samples).
pub fn rows(agg: &PcStallsAgg, defs: &Defs) -> Vec<PcKernelRow> {
    let all: u64 = agg.kernels.values().map(|k| k.samples).sum();
    let mut rows: Vec<PcKernelRow> = agg
        .kernels
        .iter()
        .map(|(&id, k)| {
            let name = defs.str_or(id, "[unknown kernel]").to_owned();
            PcKernelRow {
                kernel: kernel_name::short(&name),
                samples: k.samples,
                samples_pct: pct(k.samples, all),
                with_line_pct: pct(k.with_line, k.samples),
                stalls: top(&k.stalls, k.samples, |s| defs.str_or(*s, "unknown").to_owned()),
                lines: top(&k.lines, k.samples, |(f, l)| {
                    let file = defs.str_or(*f, "?");
                    format!("{}:{l}", file.rsplit('/').next().unwrap_or(file))
                }),
                name,
            }
        })
        .collect();
    rows.sort_by(|a, b| b.samples.cmp(&a.samples).then_with(|| a.name.cmp(&b.name)));
    rows
}

/// The text section: per kernel its samples, top stall reasons and hot lines.
pub fn render(rows: &[PcKernelRow], max: usize, out: &mut String) {
    use crate::fmt::Table;
    if rows.is_empty() {
        return;
    }
    crate::text::section(
        out,
        "GPU PC samples by kernel (stall reasons, source lines)",
        max.min(rows.len()),
        rows.len(),
    );
    let mut t = Table::new(&["Kernel", "Samples", "%", "<Top stall reasons", "<Hot lines"]);
    let shares =
        |v: &[PcShare]| v.iter().map(|s| format!("{} {:.0}%", s.name, s.pct)).collect::<Vec<_>>().join(", ");
    for r in rows.iter().take(max) {
        let lines = if r.lines.is_empty() { "(no line table)".to_owned() } else { shares(&r.lines) };
        t.row(vec![
            r.kernel.clone(),
            r.samples.to_string(),
            format!("{:.1}", r.samples_pct),
            shares(&r.stalls),
            lines,
        ]);
    }
    t.render(out);
}

#[cfg(test)]
mod tests {
    use super::*;
    use xpuprof_sdk::model::StrDef;

    #[test]
    fn kernels_with_their_top_stalls_and_lines() {
        let mut defs = Defs::default();
        for (id, t) in
            [(1, "chase(unsigned int const*)"), (2, "/src/pc.cu"), (3, "long_scoreboard"), (4, "wait")]
        {
            defs.add(&Record::Str(StrDef::default().id(StrId(id)).text(t.into())));
        }
        let mut agg = PcStallsAgg::default();
        let s = DeviceSample::default().kernel(StrId(1)).file(StrId(2));
        agg.add(&Record::DeviceSample(s.clone().line(31).stall(StrId(3)).count(90)));
        agg.add(&Record::DeviceSample(s.clone().line(33).stall(StrId(4)).count(10)));
        let r = rows(&agg, &defs);
        assert_eq!(r.len(), 1);
        assert_eq!((r[0].samples, r[0].with_line_pct), (100, 100.0));
        assert_eq!(r[0].stalls[0], PcShare { name: "long_scoreboard".into(), samples: 90, pct: 90.0 });
        assert_eq!(r[0].lines[0].name, "pc.cu:31");
        let mut text = String::new();
        render(&r, 10, &mut text);
        assert!(text.contains("long_scoreboard 90%, wait 10%") && text.contains("pc.cu:31 90%"), "{text}");
    }
}
