//! PC sampling on the host: the agent's stall-reason tables, cubins and sample fetches
//! ([`xpuprof_cupti_wire::pc_sampling`]) become [`DeviceSample`] records, each sampled
//! instruction with its source file and line read from its cubin's line table ([`lines`]).
//!
//! CUPTI reports every stall reason twice: all the samples of the reason and the subset whose
//! warp was not issued (`…_not_issued`); a sample is counted once, under the first. The table
//! also names two counters that are no reason (`smsp__pcsamp_sample_count`,
//! `smsp__pcsamp_samples_data_dropped`): never counted as one. Reason names
//! lose CUPTI's `smsp__pcsamp_warps_issue_stalled_` prefix (`long_scoreboard`, `wait`,
//! `selected`). What could not be attributed is counted and reported as losses: samples the
//! hardware dropped, samples in kernels whose cubin was never seen, fetches cut short by a full
//! hardware buffer, calls CUPTI refused.
//!
//! Where the CUDA toolkit's disassembler is found, each sampled cubin the host holds is
//! disassembled once ([`sass`]) and every sample carries its instruction's SASS text, and the
//! outermost call site where its line is inlined code; both go into the records, so the
//! archive keeps them.

mod lines;
mod sass;

use std::collections::HashMap;

use xpuprof_cupti_wire::pc_sampling as msg;
use xpuprof_sdk::model::*;
use xpuprof_sdk::Emitter;
use xpuprof_toolbox::intern::Interner;

pub use lines::{LineError, LineTable};
pub use sass::{Disassembler, Instruction, Listing};

/// CUPTI's prefix of stall-reason names.
const REASON_PREFIX: &str = "smsp__pcsamp_warps_issue_stalled_";
/// CUPTI's suffix of the not-issued subsets.
const NOT_ISSUED: &str = "_not_issued";

/// Loss: samples the GPU dropped (its buffer was full).
pub const LOSS_DROPPED_SAMPLES: &str = "cupti pc samples dropped by the hardware";
/// Loss: samples of kernels whose cubin the agent never sent (loaded while no window was open).
pub const LOSS_NO_CUBIN: &str = "cupti pc samples of kernels whose cubin was not seen";
/// Loss: fetches that found CUPTI's hardware buffer full.
pub const LOSS_HW_FULL: &str = "cupti pc sampling hardware buffer full";
/// Loss: PC sampling calls CUPTI refused (a context without samples).
pub const LOSS_REFUSED: &str = "cupti pc sampling calls refused";

/// What one cubin gives: its line table and instructions, or why it has none.
#[derive(Debug)]
enum Code {
    Lines(LineTable, Sass),
    NoLines,
    Unreadable,
}

/// A cubin's SASS: not disassembled yet (its image kept until its first sample), read, or none.
#[derive(Debug)]
enum Sass {
    Pending(Vec<u8>),
    Read(Listing),
    None,
}

/// Whether samples get their SASS text.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub enum SassSetting {
    /// Not asked for (`pc_sampling_sass = false`), or a decoder without a session.
    #[default]
    Off,
    /// Asked for, but no nvdisasm was found (said once, at the end).
    NotFound,
    /// With this disassembler.
    With(Disassembler),
}

/// Counters, reported at the end of the session.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct PcStats {
    /// Samples emitted.
    pub samples: u64,
    /// Of them, with a source line.
    pub with_line: u64,
    /// Of them, of kernels whose cubin had no line table.
    pub without_line_table: u64,
    /// Samples of kernels whose cubin was never seen.
    pub no_cubin: u64,
    /// Samples the hardware dropped.
    pub dropped: u64,
    /// Samples in kernels CUPTI gives no PCs for (its own, the driver's).
    pub non_user: u64,
    /// Fetches that found the hardware buffer full.
    pub hardware_full: u64,
    /// Calls CUPTI refused.
    pub refused: u64,
    /// Cubins whose line table could not be read.
    pub unreadable: u64,
    /// Malformed messages.
    pub malformed: u64,
    /// Of the samples, with their instruction's SASS text.
    pub with_sass: u64,
    /// Cubins disassembled.
    pub disassembled: u64,
    /// Cubins the disassembler failed on.
    pub disassembly_failed: u64,
}

/// A context's stall reasons: index → (interned short name, counted: not a not-issued subset).
#[derive(Debug, Default)]
struct Reasons(HashMap<u32, (StrId, bool)>);

/// The PC sampling state of a session's decoder.
#[derive(Debug, Default)]
pub struct PcSamples {
    /// Cubins by CUPTI's CRC (the same code in every process has the same CRC).
    code: HashMap<u64, Code>,
    /// Per (connection, context).
    reasons: HashMap<(u64, u32), Reasons>,
    /// The previous fetch's time per (connection, context): the start of the next span.
    last: HashMap<(u64, u32), u64>,
    /// Refusals said already (each once).
    said: std::collections::HashSet<String>,
    /// Counters.
    pub stats: PcStats,
    /// Whether and how instructions are disassembled.
    pub sass: SassSetting,
}

/// How often CUPTI's worker decodes the hardware buffer (its default) and the agent fetches.
const DECODE_NS: u64 = 100_000_000;
/// The oldest a fetch's samples can be: decoded at most [`DECODE_NS`] after they were taken,
/// fetched at most one fetch period (the same) after that, with as much again of slack.
const TAKEN_WITHIN_NS: u64 = 3 * DECODE_NS;

/// The span a fetch's samples were taken in: since the previous fetch that sent samples (less
/// one decoding period: samples decoded just after it come with this one), and never more than
/// [`TAKEN_WITHIN_NS`] before the fetch (the agent sends no fetch without samples, so the
/// previous one may be long before). The spans order the fetches; the outputs lay a kernel's
/// samples over its launches in that order.
fn taken_since(previous: u64, time: u64) -> u64 {
    previous.saturating_sub(DECODE_NS).max(time.saturating_sub(TAKEN_WITHIN_NS)).min(time)
}

/// The nvdisasm to disassemble sampled cubins with: `configured` (`[source.cupti] nvdisasm`),
/// else the first found in the CUDA toolkit's usual places ([`Disassembler::find`]).
pub fn nvdisasm(configured: Option<&str>) -> Option<std::path::PathBuf> {
    match configured {
        Some(p) => Some(p.into()),
        None => Disassembler::find().map(|d| d.path().to_owned()),
    }
}

/// The reason's name without CUPTI's prefix.
pub fn short_reason(name: &str) -> &str {
    name.strip_prefix(REASON_PREFIX).unwrap_or(name)
}

impl PcSamples {
    /// Handles a PC sampling message of connection `conn` (process `pid`); false when `ty` is
    /// not one. `device` maps CUPTI's device id to the session's; `warn` says a problem once.
    #[allow(clippy::too_many_arguments)]
    pub fn message(
        &mut self,
        conn: u64,
        pid: u32,
        ty: u8,
        payload: &[u8],
        strs: &mut Interner,
        device: impl Fn(u32) -> DeviceId,
        warn: &mut dyn FnMut(String),
        out: &mut Emitter,
    ) -> bool {
        match ty {
            msg::MSG_PC_STALL_REASONS => match msg::StallReasons::read(payload) {
                Some(r) => self.stall_reasons(conn, r, strs, out),
                None => self.stats.malformed += 1,
            },
            msg::MSG_PC_CUBIN => match msg::Cubin::read(payload) {
                Some(c) => self.cubin(c, warn),
                None => self.stats.malformed += 1,
            },
            msg::MSG_PC_SAMPLES => match msg::read_samples(payload) {
                Ok((h, pcs)) => self.samples(conn, pid, (&h, &pcs), strs, device(h.device), warn, out),
                Err(e) => {
                    self.stats.malformed += 1;
                    warn(format!("process {pid}: {e}"));
                }
            },
            msg::MSG_PC_STATUS => {
                let (context, status, text) = msg::read_status(payload);
                self.stats.refused += 1;
                if self.said.insert(text.clone()) {
                    warn(format!(
                        "process {pid}: PC sampling refused on CUDA context {context} (CUPTI status {status}): {text}; that context has no PC samples"
                    ));
                }
            }
            _ => return false,
        }
        true
    }

    fn stall_reasons(&mut self, conn: u64, r: msg::StallReasons, strs: &mut Interner, out: &mut Emitter) {
        let mut table = Reasons::default();
        for (index, name) in &r.reasons {
            // Counters beside the reasons (`smsp__pcsamp_sample_count`,
            // `smsp__pcsamp_samples_data_dropped`) are no stall reason.
            let counted = name.starts_with(REASON_PREFIX) && !name.ends_with(NOT_ISSUED);
            let id = strs.string(out, short_reason(name));
            table.0.insert(*index, (id, counted));
        }
        self.reasons.insert((conn, r.context), table);
    }

    fn cubin(&mut self, c: msg::Cubin<'_>, warn: &mut dyn FnMut(String)) {
        if self.code.contains_key(&c.crc) {
            return;
        }
        let code = match c.image {
            None => Code::NoLines,
            Some(image) => match LineTable::read(image) {
                Ok(t) => {
                    let sass = match self.sass {
                        SassSetting::With(_) => Sass::Pending(image.to_vec()),
                        _ => Sass::None,
                    };
                    Code::Lines(t, sass)
                }
                Err(LineError::NoTable) => Code::NoLines,
                Err(e) => {
                    self.stats.unreadable += 1;
                    warn(format!("failed to read the line table of cubin {:#018x} (module {}): {e}; its samples have no source lines", c.crc, c.module));
                    Code::Unreadable
                }
            },
        };
        self.code.insert(c.crc, code);
    }

    #[allow(clippy::too_many_arguments)]
    fn samples(
        &mut self,
        conn: u64,
        pid: u32,
        (h, pcs): (&msg::FetchHeader, &[msg::SampledPc<'_>]),
        strs: &mut Interner,
        device: DeviceId,
        warn: &mut dyn FnMut(String),
        out: &mut Emitter,
    ) {
        let previous = self.last.insert((conn, h.context), h.time).unwrap_or(0).min(h.time);
        let start = taken_since(previous, h.time);
        self.stats.dropped += h.dropped;
        self.stats.non_user += h.non_user;
        self.stats.hardware_full += u64::from(h.flags & msg::SAMPLES_HW_FULL != 0);
        for pc in pcs {
            let kernel_text = String::from_utf8_lossy(pc.function);
            let kernel = strs.string(out, &kernel_text);
            let (instruction, call_file, call_line) =
                match self.instruction(pc.crc, &kernel_text, pc.pc_offset, warn) {
                    Some(i) => {
                        let text = strs.string(out, &i.text);
                        match &i.call_site {
                            Some((f, l)) => (text, strs.string(out, f), *l),
                            None => (text, StrId::NONE, 0),
                        }
                    }
                    None => (StrId::NONE, StrId::NONE, 0),
                };
            let (file, line, seen, has_table) = match self.code.get(&pc.crc) {
                Some(Code::Lines(t, _)) => match t.lookup(&kernel_text, pc.pc_offset) {
                    Some((f, l)) => (Some(f.to_owned()), l, true, true),
                    None => (None, 0, true, true),
                },
                Some(_) => (None, 0, true, false),
                None => (None, 0, false, false),
            };
            let file = match file {
                Some(f) => strs.string(out, &f),
                None => StrId::NONE,
            };
            for &(index, count) in &pc.reasons {
                let (stall, counted) = self
                    .reasons
                    .get(&(conn, h.context))
                    .and_then(|r| r.0.get(&index))
                    .copied()
                    .unwrap_or((StrId::NONE, true));
                if !counted || count == 0 {
                    continue;
                }
                let count = u64::from(count);
                self.stats.samples += count;
                self.stats.with_line += if line != 0 { count } else { 0 };
                self.stats.no_cubin += if seen { 0 } else { count };
                self.stats.without_line_table += if seen && !has_table { count } else { 0 };
                self.stats.with_sass += if instruction != StrId::NONE { count } else { 0 };
                out.emit(&Record::DeviceSample(
                    DeviceSample::default()
                        .pid(pid)
                        .device(device)
                        .start(start)
                        .end(h.time)
                        .kernel(kernel)
                        .correlation(
                            (pc.correlation != 0).then_some(Correlation {
                                backend: backend::CUDA,
                                id: u64::from(pc.correlation),
                            }),
                        )
                        .code(pc.crc)
                        .pc_offset(pc.pc_offset)
                        .stall(stall)
                        .count(count)
                        .file(file)
                        .line(line)
                        .instruction(instruction)
                        .call_file(call_file)
                        .call_line(call_line),
                ));
            }
        }
    }

    /// The instruction of `kernel` at `offset` in cubin `crc`, the cubin disassembled at its
    /// first sample (a failure is said once per cubin, and its samples go without text).
    fn instruction(
        &mut self,
        crc: u64,
        kernel: &str,
        offset: u64,
        warn: &mut dyn FnMut(String),
    ) -> Option<Instruction> {
        let SassSetting::With(tool) = &self.sass else { return None };
        let Some(Code::Lines(_, sass)) = self.code.get_mut(&crc) else { return None };
        if let Sass::Pending(image) = sass {
            *sass = match tool.disassemble(image) {
                Ok(listing) => {
                    self.stats.disassembled += 1;
                    Sass::Read(listing)
                }
                Err(e) => {
                    self.stats.disassembly_failed += 1;
                    warn(format!(
                        "failed to disassemble cubin {crc:#018x}: {e}; its samples have no SASS text"
                    ));
                    Sass::None
                }
            };
        }
        match sass {
            Sass::Read(listing) => listing.get(kernel, offset).cloned(),
            _ => None,
        }
    }

    /// The session's losses as records and one line for the log (`None` when nothing was
    /// sampled).
    pub fn finish(&mut self, strs: &mut Interner, out: &mut Emitter) -> Option<String> {
        let s = self.stats.clone();
        let time = xpuprof_sdk::clock::now_ns();
        for (cause, count) in [
            (LOSS_DROPPED_SAMPLES, s.dropped),
            (LOSS_NO_CUBIN, s.no_cubin),
            (LOSS_HW_FULL, s.hardware_full),
            (LOSS_REFUSED, s.refused),
        ] {
            if count > 0 {
                let cause = strs.string(out, cause);
                out.emit(&Record::Loss(Loss::default().time(time).cause(cause).count(count)));
            }
        }
        self.report()
    }

    /// The end-of-run line: samples, how many have a line and SASS text, and what was lost
    /// (`None` when nothing was sampled).
    pub fn report(&self) -> Option<String> {
        let s = &self.stats;
        let sass = match &self.sass {
            SassSetting::Off => "SASS text off".to_owned(),
            SassSetting::NotFound => {
                "no SASS text: nvdisasm was not found in $CUDA_HOME/bin, $CUDA_PATH/bin, \
                /usr/local/cuda/bin or PATH (install the CUDA toolkit there, or set [source.cupti] nvdisasm)"
                    .to_owned()
            }
            SassSetting::With(t) => format!(
                "{} with their SASS text ({} cubin(s) disassembled by {}, {} failed)",
                s.with_sass,
                s.disassembled,
                t.path().display(),
                s.disassembly_failed
            ),
        };
        (s.samples > 0 || s.refused > 0).then(|| {
            format!(
                "PC samples: {} ({} with a source line, {} of kernels without a line table, {} of kernels whose cubin was not seen; {sass}); {} dropped by the GPU, {} in CUDA's own kernels, hardware buffer full {} time(s)",
                s.samples, s.with_line, s.without_line_table, s.no_cubin, s.dropped, s.non_user, s.hardware_full
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fetch_span_starts_a_decoding_period_before_the_previous_fetch_and_at_most_300_ms_back() {
        const MS: u64 = 1_000_000;
        assert_eq!(taken_since(1000 * MS, 1100 * MS), 900 * MS);
        // The previous fetch with samples long before (fetches without samples are not sent).
        assert_eq!(taken_since(1000 * MS, 5000 * MS), 4700 * MS);
        // The first fetch.
        assert_eq!(taken_since(0, 5000 * MS), 4700 * MS);
        assert_eq!(taken_since(0, 10 * MS), 0);
    }
}
