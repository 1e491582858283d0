//! Device PC samples per kernel: where in each sampled kernel its warps were (the hot source
//! lines, and the hot instructions with their disassembly where the backend recorded it) and why
//! they were not issuing (the top stall reasons), from the session's [`DeviceSample`] records.
//! Weighted by samples, apart from the device-time tables. A line that is code inlined into the
//! kernel reads `inner.py:263 in kernel.py:41` (its outermost call site).

use std::collections::HashMap;

use serde::Serialize;
use xpuprof_sdk::model::{DeviceSample, Record, StrId};
use xpuprof_toolbox::kernel_name;

use crate::assemble::pct;
use crate::defs::Defs;

/// Stall reasons and lines shown per kernel.
pub const TOP: usize = 3;

/// A source line and, where it is inlined code, its outermost call site.
type Place = (StrId, u32, StrId, u32);

#[derive(Debug, Default)]
struct KernelPc {
    samples: u64,
    with_line: u64,
    stalls: HashMap<StrId, u64>,
    lines: HashMap<Place, u64>,
    /// Per instruction offset: its samples, text, place and samples per stall reason.
    pcs: HashMap<u64, PcAgg>,
}

#[derive(Debug, Default)]
struct PcAgg {
    samples: u64,
    instruction: StrId,
    place: Place,
    stalls: HashMap<StrId, u64>,
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
        let place = (s.file, s.line, s.call_file, s.call_line);
        if s.line != 0 {
            k.with_line += s.count;
            *k.lines.entry(place).or_default() += s.count;
        }
        let pc = k.pcs.entry(s.pc_offset).or_default();
        pc.samples += s.count;
        pc.place = place;
        if s.instruction != StrId::NONE {
            pc.instruction = s.instruction;
        }
        *pc.stalls.entry(s.stall).or_default() += s.count;
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
    /// Its hot instructions.
    pub instructions: Vec<PcInstruction>,
}

/// One of a kernel's hot instructions.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PcInstruction {
    /// Offset from the kernel's start (`0x01b0`).
    pub pc: String,
    /// Samples.
    pub samples: u64,
    /// Share of the kernel's samples, 0-100.
    pub pct: f64,
    /// Its top stall reason.
    pub stall: String,
    /// Its source line (empty where the code has no line table).
    pub line: String,
    /// Its disassembly, empty where the backend recorded none.
    pub instruction: String,
}

/// `file.cu:212`, or `inner.py:263 in kernel.py:41` for inlined code, or empty.
fn place(defs: &Defs, (file, line, call_file, call_line): &Place) -> String {
    let base = |id: StrId| {
        let f = defs.str_or(id, "?");
        f.rsplit('/').next().unwrap_or(f).to_owned()
    };
    match (*line, *call_line) {
        (0, _) => String::new(),
        (l, 0) => format!("{}:{l}", base(*file)),
        (l, c) => format!("{}:{l} in {}:{c}", base(*file), base(*call_file)),
    }
}

fn hot_instructions(k: &KernelPc, defs: &Defs) -> Vec<PcInstruction> {
    let mut v: Vec<(&u64, &PcAgg)> = k.pcs.iter().collect();
    v.sort_by(|a, b| b.1.samples.cmp(&a.1.samples).then(a.0.cmp(b.0)));
    v.into_iter()
        .take(TOP)
        .map(|(&offset, p)| {
            let stall = p.stalls.iter().max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0))).map(|(s, _)| *s);
            PcInstruction {
                pc: format!("{offset:#06x}"),
                samples: p.samples,
                pct: pct(p.samples, k.samples),
                stall: stall.map_or("unknown", |s| defs.str_or(s, "unknown")).to_owned(),
                line: place(defs, &p.place),
                instruction: defs.str_or(p.instruction, "").to_owned(),
            }
        })
        .collect()
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
                lines: top(&k.lines, k.samples, |p| place(defs, p)),
                instructions: hot_instructions(k, defs),
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
    render_instructions(rows, max, out);
}

/// The hot instructions of the kernels shown, with their disassembly, or a note saying none was
/// recorded.
fn render_instructions(rows: &[PcKernelRow], max: usize, out: &mut String) {
    use crate::fmt::Table;
    let shown = &rows[..max.min(rows.len())];
    if !shown.iter().flat_map(|r| &r.instructions).any(|i| !i.instruction.is_empty()) {
        out.push_str(
            "  (no instruction text: the backend's disassembler was not available while recording, or it was turned off)\n",
        );
        return;
    }
    out.push_str("\n  Hot instructions\n");
    let mut t = Table::new(&["Kernel", "<PC", "%", "<Stall", "<Line", "<Instruction"]);
    for r in shown {
        for i in &r.instructions {
            t.row(vec![
                r.kernel.clone(),
                i.pc.clone(),
                format!("{:.0}", i.pct),
                i.stall.clone(),
                i.line.clone(),
                i.instruction.clone(),
            ]);
        }
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
        agg.add(&Record::DeviceSample(s.clone().line(31).stall(StrId(3)).count(90).pc_offset(0x1b0)));
        agg.add(&Record::DeviceSample(s.clone().line(33).stall(StrId(4)).count(10).pc_offset(0x40)));
        let r = rows(&agg, &defs);
        assert_eq!(r.len(), 1);
        assert_eq!((r[0].samples, r[0].with_line_pct), (100, 100.0));
        assert_eq!(r[0].stalls[0], PcShare { name: "long_scoreboard".into(), samples: 90, pct: 90.0 });
        assert_eq!(r[0].lines[0].name, "pc.cu:31");
        let mut text = String::new();
        render(&r, 10, &mut text);
        assert!(text.contains("long_scoreboard 90%, wait 10%") && text.contains("pc.cu:31 90%"), "{text}");
        assert_eq!(r[0].instructions[0].pc, "0x01b0");
        assert!(text.contains("(no instruction text:"), "{text}");
    }

    #[test]
    fn hot_instructions_with_their_text_and_inlined_lines() {
        let mut defs = Defs::default();
        for (id, t) in [
            (1, "triton_poi_fused"),
            (2, "/lib/standard.py"),
            (3, "long_scoreboard"),
            (4, "LDG.E R2, desc[UR4][R2.64]"),
            (5, "/src/model.py"),
        ] {
            defs.add(&Record::Str(StrDef::default().id(StrId(id)).text(t.into())));
        }
        let mut agg = PcStallsAgg::default();
        let s = DeviceSample::default()
            .kernel(StrId(1))
            .file(StrId(2))
            .line(263)
            .call_file(StrId(5))
            .call_line(41);
        agg.add(&Record::DeviceSample(s.stall(StrId(3)).count(7).pc_offset(0x90).instruction(StrId(4))));
        let r = rows(&agg, &defs);
        assert_eq!(r[0].lines[0].name, "standard.py:263 in model.py:41");
        let i = &r[0].instructions[0];
        assert_eq!(
            (i.pc.as_str(), i.stall.as_str(), i.instruction.as_str()),
            ("0x0090", "long_scoreboard", "LDG.E R2, desc[UR4][R2.64]")
        );
        let mut text = String::new();
        render(&r, 10, &mut text);
        assert!(text.contains("Hot instructions") && text.contains("LDG.E R2, desc[UR4][R2.64]"), "{text}");
    }
}
