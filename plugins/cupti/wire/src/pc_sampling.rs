//! The PC sampling messages of the CUPTI agent (`pc_sampling = 1`), backend-private numbers
//! ([`xpuprof_wire::MSG_BACKEND_FIRST`] and up). All integers little-endian.
//!
//! - [`MSG_PC_STALL_REASONS`]: `context u32, device u32, count u32, pad u32`, then per reason
//!   `index u32, len u32, name bytes`: the stall reasons CUPTI samples on the context's device,
//!   sent when sampling is configured for the context (before any of its samples).
//! - [`MSG_PC_CUBIN`]: `crc u64, module u32, flags u32`, then the cubin (an ELF image) when
//!   [`CUBIN_HAS_LINES`] is set: a module was loaded; the agent sends each CRC once, the whole
//!   cubin only when it carries a line table (the host resolves lines; the target parses no
//!   DWARF), else only the CRC, so the host knows the cubin was seen.
//! - [`MSG_PC_SAMPLES`]: `time u64, context u32, device u32, range u64, total u64, dropped u64,
//!   non_user u64, flags u32`, the message's function table `functions u32` then per function
//!   `len u32, name bytes`, then `count u32` and `count` PCs: `crc u64, pc_offset u64,
//!   function_index u32, correlation u32, function u32` (its index in the table), `reasons u32`,
//!   then `reasons × (stall index u32, samples u32)`. `total`, `dropped` (by the hardware) and `non_user` (in
//!   kernels CUPTI gives no PCs for) count samples of this fetch; flag [`SAMPLES_HW_FULL`]: the
//!   hardware buffer filled up and samples were lost.
//! - [`MSG_PC_STATUS`]: `context u32, status u32`, then UTF-8 text: a PC sampling call CUPTI
//!   refused on a context (its CUPTI result code and text): the host shows it, counted.

use std::collections::HashMap;

use xpuprof_wire::{begin_message, end_message, put_message, Reader, MSG_BACKEND_FIRST};

/// The stall-reason table of a context's device.
pub const MSG_PC_STALL_REASONS: u8 = MSG_BACKEND_FIRST + 0x10;
/// A loaded module's cubin (or only its CRC).
pub const MSG_PC_CUBIN: u8 = MSG_BACKEND_FIRST + 0x11;
/// PC samples of one fetch.
pub const MSG_PC_SAMPLES: u8 = MSG_BACKEND_FIRST + 0x12;
/// A PC sampling call CUPTI refused.
pub const MSG_PC_STATUS: u8 = MSG_BACKEND_FIRST + 0x13;

/// [`MSG_PC_CUBIN`] flag: the cubin follows (it has a line table).
pub const CUBIN_HAS_LINES: u32 = 1;
/// [`MSG_PC_SAMPLES`] flag: the hardware buffer was full.
pub const SAMPLES_HW_FULL: u32 = 1;

/// Appends a [`MSG_PC_STALL_REASONS`] message.
pub fn put_stall_reasons(out: &mut Vec<u8>, context: u32, device: u32, reasons: &[(u32, String)]) {
    let at = begin_message(out, MSG_PC_STALL_REASONS);
    for v in [context, device, reasons.len() as u32, 0] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    for (index, name) in reasons {
        out.extend_from_slice(&index.to_le_bytes());
        out.extend_from_slice(&(name.len() as u32).to_le_bytes());
        out.extend_from_slice(name.as_bytes());
    }
    end_message(out, at);
}

/// A [`MSG_PC_STALL_REASONS`] payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StallReasons {
    /// CUPTI's context id.
    pub context: u32,
    /// CUPTI's device id.
    pub device: u32,
    /// `(index, name)`.
    pub reasons: Vec<(u32, String)>,
}

impl StallReasons {
    /// Reads a payload; `None` when it is cut short.
    pub fn read(payload: &[u8]) -> Option<Self> {
        let mut r = Reader::new(payload);
        let (context, device, n) = (r.u32(), r.u32(), r.u32());
        r.u32();
        let mut reasons = Vec::with_capacity((n as usize).min(256));
        for _ in 0..n {
            let index = r.u32();
            let len = r.u32() as usize;
            let name = String::from_utf8_lossy(r.bytes(len)).into_owned();
            reasons.push((index, name));
        }
        (!r.short).then_some(Self { context, device, reasons })
    }
}

/// Appends a [`MSG_PC_CUBIN`] message; `cubin` is sent when given.
pub fn put_cubin(out: &mut Vec<u8>, crc: u64, module: u32, cubin: Option<&[u8]>) {
    let flags = if cubin.is_some() { CUBIN_HAS_LINES } else { 0 };
    put_message(
        out,
        MSG_PC_CUBIN,
        &[&crc.to_le_bytes(), &module.to_le_bytes(), &flags.to_le_bytes(), cubin.unwrap_or(&[])],
    );
}

/// A [`MSG_PC_CUBIN`] payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cubin<'a> {
    /// CUPTI's CRC of the cubin.
    pub crc: u64,
    /// CUPTI's module id.
    pub module: u32,
    /// The cubin, when it carries a line table.
    pub image: Option<&'a [u8]>,
}

impl<'a> Cubin<'a> {
    /// Reads a payload; `None` when it is cut short.
    pub fn read(payload: &'a [u8]) -> Option<Self> {
        let mut r = Reader::new(payload);
        let (crc, module, flags) = (r.u64(), r.u32(), r.u32());
        let rest = r.bytes(r.remaining());
        (!r.short).then_some(Self { crc, module, image: (flags & CUBIN_HAS_LINES != 0).then_some(rest) })
    }
}

/// The fixed part of a [`MSG_PC_SAMPLES`] payload.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FetchHeader {
    /// When the agent fetched them (session clock, ns).
    pub time: u64,
    /// CUPTI's context id.
    pub context: u32,
    /// CUPTI's device id.
    pub device: u32,
    /// CUPTI's range id.
    pub range: u64,
    /// Samples in all.
    pub total: u64,
    /// Samples the hardware dropped.
    pub dropped: u64,
    /// Samples in kernels CUPTI gives no PCs for.
    pub non_user: u64,
    /// `SAMPLES_*` flags.
    pub flags: u32,
}

/// One sampled PC of a [`MSG_PC_SAMPLES`] payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SampledPc<'a> {
    /// CUPTI's CRC of the cubin holding the function.
    pub crc: u64,
    /// The instruction's offset from the function's start.
    pub pc_offset: u64,
    /// The function's index in the cubin.
    pub function_index: u32,
    /// The launch's correlation id (0: CUPTI gave none).
    pub correlation: u32,
    /// The function's (mangled) name.
    pub function: &'a [u8],
    /// `(stall reason index, samples)`.
    pub reasons: Vec<(u32, u32)>,
}

/// Writes one [`MSG_PC_SAMPLES`] message: start it with [`SamplesWriter::new`], add PCs,
/// [`SamplesWriter::end`] it into the output. Function names go once per message in its table.
#[derive(Debug, Default)]
pub struct SamplesWriter {
    header: FetchHeader,
    names: Vec<u8>,
    ids: HashMap<Vec<u8>, u32>,
    pcs: Vec<u8>,
    count: u32,
}

impl SamplesWriter {
    /// A message with the fetch's counts.
    pub fn new(h: &FetchHeader) -> Self {
        Self { header: *h, ..Self::default() }
    }

    /// Adds a PC `(cubin crc, pc offset, function index, correlation)` of `function` with its
    /// `(stall reason index, samples)` pairs.
    pub fn pc(&mut self, pc: (u64, u64, u32, u32), function: &[u8], reasons: &[(u32, u32)]) {
        let next = self.ids.len() as u32;
        let id = *self.ids.entry(function.to_vec()).or_insert_with(|| {
            self.names.extend_from_slice(&(function.len() as u32).to_le_bytes());
            self.names.extend_from_slice(function);
            next
        });
        let (crc, offset, index, correlation) = pc;
        let out = &mut self.pcs;
        out.extend_from_slice(&crc.to_le_bytes());
        out.extend_from_slice(&offset.to_le_bytes());
        for v in [index, correlation, id, reasons.len() as u32] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        for (i, n) in reasons {
            out.extend_from_slice(&i.to_le_bytes());
            out.extend_from_slice(&n.to_le_bytes());
        }
        self.count += 1;
    }

    /// Appends the message to `out`.
    pub fn end(self, out: &mut Vec<u8>) {
        let h = &self.header;
        let at = begin_message(out, MSG_PC_SAMPLES);
        out.extend_from_slice(&h.time.to_le_bytes());
        out.extend_from_slice(&h.context.to_le_bytes());
        out.extend_from_slice(&h.device.to_le_bytes());
        for v in [h.range, h.total, h.dropped, h.non_user] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&h.flags.to_le_bytes());
        out.extend_from_slice(&(self.ids.len() as u32).to_le_bytes());
        out.extend_from_slice(&self.names);
        out.extend_from_slice(&self.count.to_le_bytes());
        out.extend_from_slice(&self.pcs);
        end_message(out, at);
    }
}

/// Reads a [`MSG_PC_SAMPLES`] payload: its header and PCs; `Err` saying where when the payload
/// is cut short or names a function its table lacks.
pub fn read_samples(payload: &[u8]) -> Result<(FetchHeader, Vec<SampledPc<'_>>), String> {
    let mut r = Reader::new(payload);
    let h = FetchHeader {
        time: r.u64(),
        context: r.u32(),
        device: r.u32(),
        range: r.u64(),
        total: r.u64(),
        dropped: r.u64(),
        non_user: r.u64(),
        flags: r.u32(),
    };
    let functions = r.u32();
    let mut names = Vec::with_capacity((functions as usize).min(1 << 12));
    for _ in 0..functions {
        let len = r.u32() as usize;
        names.push(r.bytes(len));
    }
    let n = r.u32();
    if r.short {
        return Err("PC samples message cut short in its function table".into());
    }
    let mut pcs = Vec::with_capacity((n as usize).min(1 << 16));
    for i in 0..n {
        let (crc, pc_offset, function_index, correlation) = (r.u64(), r.u64(), r.u32(), r.u32());
        let (id, reasons) = (r.u32(), r.u32());
        let reasons = (0..reasons.min(4096)).map(|_| (r.u32(), r.u32())).collect();
        if r.short {
            return Err(format!("PC samples message cut short at PC {i} of {n}"));
        }
        let Some(&function) = names.get(id as usize) else {
            return Err(format!("PC {i} of a PC samples message names function {id} of {functions}"));
        };
        pcs.push(SampledPc { crc, pc_offset, function_index, correlation, function, reasons });
    }
    Ok((h, pcs))
}

/// Appends a [`MSG_PC_STATUS`] message.
pub fn put_status(out: &mut Vec<u8>, context: u32, status: u32, text: &str) {
    put_message(out, MSG_PC_STATUS, &[&context.to_le_bytes(), &status.to_le_bytes(), text.as_bytes()]);
}

/// Reads a [`MSG_PC_STATUS`] payload: `(context, status, text)`.
pub fn read_status(payload: &[u8]) -> (u32, u32, String) {
    let mut r = Reader::new(payload);
    let (context, status) = (r.u32(), r.u32());
    let text = String::from_utf8_lossy(r.bytes(r.remaining())).into_owned();
    (context, status, text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn payload(msg: &[u8]) -> &[u8] {
        let len = u32::from_le_bytes(msg[..4].try_into().unwrap()) as usize;
        assert_eq!(len + 4, msg.len());
        &msg[8..]
    }

    #[test]
    fn every_message_reads_back() {
        let mut m = Vec::new();
        put_stall_reasons(&mut m, 1, 0, &[(3, "smsp__pcsamp_warps_issue_stalled_long_scoreboard".into())]);
        assert_eq!(m[4], MSG_PC_STALL_REASONS);
        let s = StallReasons::read(payload(&m)).unwrap();
        assert_eq!(s.reasons[0], (3, "smsp__pcsamp_warps_issue_stalled_long_scoreboard".into()));

        let mut m = Vec::new();
        put_cubin(&mut m, 0xabc, 7, Some(b"\x7fELF..."));
        let c = Cubin::read(payload(&m)).unwrap();
        assert_eq!((c.crc, c.module, c.image), (0xabc, 7, Some(&b"\x7fELF..."[..])));
        let mut m = Vec::new();
        put_cubin(&mut m, 1, 2, None);
        assert_eq!(Cubin::read(payload(&m)).unwrap().image, None);

        let mut m = Vec::new();
        let h = FetchHeader {
            time: 5,
            context: 1,
            device: 0,
            range: 2,
            total: 100,
            dropped: 3,
            non_user: 4,
            flags: 0,
        };
        let mut w = SamplesWriter::new(&h);
        w.pc((0xabc, 0x40, 1, 9), b"_Z5chasePj", &[(3, 7), (4, 1)]);
        w.pc((0xabc, 0x50, 1, 0), b"k", &[]);
        w.pc((0xabc, 0x60, 1, 0), b"_Z5chasePj", &[(3, 1)]);
        w.end(&mut m);
        assert_eq!(m.windows(10).filter(|x| x == b"_Z5chasePj").count(), 1, "each name once");
        let (h2, pcs) = read_samples(payload(&m)).unwrap();
        assert_eq!(h2, h);
        assert_eq!(pcs.len(), 3);
        assert_eq!(pcs[2].function, b"_Z5chasePj");
        assert_eq!(pcs[0].reasons, vec![(3, 7), (4, 1)]);
        assert_eq!((pcs[0].correlation, pcs[0].function), (9, &b"_Z5chasePj"[..]));
        assert!(read_samples(&payload(&m)[..payload(&m).len() - 3]).unwrap_err().contains("cut short"));

        let mut m = Vec::new();
        put_status(&mut m, 1, 17, "not supported");
        assert_eq!(read_status(payload(&m)), (1, 17, "not supported".into()));
    }
}
