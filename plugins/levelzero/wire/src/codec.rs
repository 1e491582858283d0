//! Encoding and decoding of [`Msg`] on `xpuprof-wire`'s framing.

use super::{Msg, Op, FIRST};
use xpuprof_wire::{begin_message, end_message, Reader};

const VERSION: u8 = FIRST;
// FIRST + 1 was a stack (version 2): stacks travel in the kit's launch messages since version 3.
const STR: u8 = FIRST + 2;
const DEVICE: u8 = FIRST + 3;
const QUEUE: u8 = FIRST + 4;
const API: u8 = FIRST + 5;
const OP: u8 = FIRST + 6;
const CLOCK: u8 = FIRST + 7;
const HOST_CLOCK: u8 = FIRST + 8;
const LOSS: u8 = FIRST + 9;

/// Appends messages to a buffer.
#[derive(Debug, Default)]
pub struct Writer {
    /// The encoded bytes.
    pub buf: Vec<u8>,
}

impl Writer {
    fn u8(&mut self, v: u8) {
        self.buf.push(v);
    }
    fn u32(&mut self, v: u32) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    fn str(&mut self, s: &str) {
        self.u32(s.len() as u32);
        self.buf.extend_from_slice(s.as_bytes());
    }

    /// Appends `m`.
    pub fn put(&mut self, m: &Msg) {
        let at = begin_message(&mut self.buf, ty(m));
        match m {
            Msg::Version(v) => self.u32(*v),
            Msg::Str { id, text } => {
                self.u32(*id);
                self.str(text);
            }
            Msg::Device { handle, parent, index, sub, tick_hz, valid_bits, compute_units, uuid, name } => {
                self.u64(*handle);
                self.u64(*parent);
                self.u32(*index);
                self.u32(sub.unwrap_or(u32::MAX));
                self.u64(*tick_hz);
                self.u32(*valid_bits);
                self.u32(*compute_units);
                self.buf.extend_from_slice(uuid);
                self.str(name);
            }
            Msg::Queue { handle, device, kind } => {
                self.u64(*handle);
                self.u64(*device);
                self.u8(*kind);
            }
            Msg::Api { tid, name, kind, start, end, correlation, result } => {
                self.u32(*tid);
                self.u32(*name);
                self.u8(*kind);
                self.u64(*start);
                self.u64(*end);
                self.u64(*correlation);
                self.u32(*result);
            }
            Msg::Op(o) => self.op(o),
            Msg::Clock { device, ticks, raw } => {
                self.u64(*device);
                self.u64(*ticks);
                self.u64(*raw);
            }
            Msg::HostClock { raw, mono } => {
                self.u64(*raw);
                self.u64(*mono);
            }
            Msg::Loss { cause, count } => {
                self.u8(*cause);
                self.u64(*count);
            }
        }
        end_message(&mut self.buf, at);
    }

    fn op(&mut self, o: &Op) {
        self.u8(o.kind);
        self.u8(o.copy);
        self.u32(o.name);
        for v in [o.correlation, o.recorded, o.list, o.device, o.queue, o.start, o.end, o.bytes] {
            self.u64(v);
        }
        o.groups.iter().chain(&o.group_size).for_each(|v| self.u32(*v));
    }
}

fn ty(m: &Msg) -> u8 {
    match m {
        Msg::Version(_) => VERSION,
        Msg::Str { .. } => STR,
        Msg::Device { .. } => DEVICE,
        Msg::Queue { .. } => QUEUE,
        Msg::Api { .. } => API,
        Msg::Op(_) => OP,
        Msg::Clock { .. } => CLOCK,
        Msg::HostClock { .. } => HOST_CLOCK,
        Msg::Loss { .. } => LOSS,
    }
}

fn str(r: &mut Reader<'_>) -> String {
    let n = r.u32() as usize;
    String::from_utf8_lossy(r.bytes(n)).into_owned()
}

fn op(r: &mut Reader<'_>) -> Op {
    let (kind, copy, name) = (r.u8(), r.u8(), r.u32());
    let mut v = [0u64; 8];
    v.iter_mut().for_each(|x| *x = r.u64());
    let mut g = [0u32; 6];
    g.iter_mut().for_each(|x| *x = r.u32());
    Op {
        kind,
        copy,
        name,
        correlation: v[0],
        recorded: v[1],
        list: v[2],
        device: v[3],
        queue: v[4],
        start: v[5],
        end: v[6],
        bytes: v[7],
        groups: [g[0], g[1], g[2]],
        group_size: [g[3], g[4], g[5]],
    }
}

/// Decodes a payload of message type `ty`; `None` for types that are not Level Zero messages
/// or payloads that are too short.
pub fn decode(ty: u8, payload: &[u8]) -> Option<Msg> {
    let mut r = Reader::new(payload);
    let m = match ty {
        VERSION => Msg::Version(r.u32()),
        STR => Msg::Str { id: r.u32(), text: str(&mut r) },
        DEVICE => {
            let (handle, parent, index, sub) = (r.u64(), r.u64(), r.u32(), r.u32());
            let (tick_hz, valid_bits, compute_units) = (r.u64(), r.u32(), r.u32());
            let uuid = r.bytes(16).try_into().unwrap_or([0; 16]);
            let sub = (sub != u32::MAX).then_some(sub);
            Msg::Device {
                handle,
                parent,
                index,
                sub,
                tick_hz,
                valid_bits,
                compute_units,
                uuid,
                name: str(&mut r),
            }
        }
        QUEUE => Msg::Queue { handle: r.u64(), device: r.u64(), kind: r.u8() },
        API => Msg::Api {
            tid: r.u32(),
            name: r.u32(),
            kind: r.u8(),
            start: r.u64(),
            end: r.u64(),
            correlation: r.u64(),
            result: r.u32(),
        },
        OP => Msg::Op(op(&mut r)),
        CLOCK => Msg::Clock { device: r.u64(), ticks: r.u64(), raw: r.u64() },
        HOST_CLOCK => Msg::HostClock { raw: r.u64(), mono: r.u64() },
        LOSS => Msg::Loss { cause: r.u8(), count: r.u64() },
        _ => return None,
    };
    (!r.short).then_some(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_message_round_trips() {
        let msgs = vec![
            Msg::Version(1),
            Msg::Str { id: 4, text: "k".into() },
            Msg::Device {
                handle: 1,
                parent: 0,
                index: 0,
                sub: Some(1),
                tick_hz: 5,
                valid_bits: 32,
                compute_units: 7,
                uuid: [3; 16],
                name: "gpu".into(),
            },
            Msg::Queue { handle: 5, device: 1, kind: 1 },
            Msg::Api { tid: 1, name: 2, kind: 1, start: 3, end: 4, correlation: 5, result: 0 },
            Msg::Op(Op { kind: 1, copy: 2, start: 10, end: 20, groups: [1, 2, 3], ..Default::default() }),
            Msg::Clock { device: 1, ticks: 2, raw: 3 },
            Msg::HostClock { raw: 1, mono: 2 },
            Msg::Loss { cause: 1, count: 2 },
        ];
        let mut w = Writer::default();
        msgs.iter().for_each(|m| w.put(m));
        w.buf.extend_from_slice(&[1, 2]); // a partial next message stays unconsumed
        let (parts, used) = xpuprof_wire::split_messages(&w.buf);
        assert_eq!(used, w.buf.len() - 2);
        let back: Vec<Msg> = parts.iter().filter_map(|m| decode(m.ty, m.payload)).collect();
        assert_eq!(back, msgs);
        assert!(decode(xpuprof_wire::MSG_BYE, &[]).is_none(), "the crate's common messages are not ours");
    }
}
