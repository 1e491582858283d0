//! Encoding and decoding of [`Msg`].

use crate::{Msg, Op};

const HELLO: u8 = 1;
const MODULES: u8 = 2;
const STACK: u8 = 3;
const STR: u8 = 4;
const DEVICE: u8 = 5;
const QUEUE: u8 = 6;
const API: u8 = 7;
const OP: u8 = 8;
const CLOCK: u8 = 9;
const HOST_CLOCK: u8 = 10;
const LOSS: u8 = 11;
const ERROR: u8 = 12;
const BYE: u8 = 13;

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
        let at = self.buf.len();
        self.buf.extend_from_slice(&[0, 0, 0, 0, ty(m), 0, 0, 0]);
        match m {
            Msg::Hello { protocol, pid, ppid, command } => {
                self.u32(*protocol);
                self.u32(*pid);
                self.u32(*ppid);
                self.str(command);
            }
            Msg::Modules(maps) => {
                self.u32(maps.len() as u32);
                for (s, e, o, p) in maps {
                    self.u64(*s);
                    self.u64(*e);
                    self.u64(*o);
                    self.str(p);
                }
            }
            Msg::Stack { hash, frames } => {
                self.u64(*hash);
                self.u32(frames.len() as u32);
                frames.iter().for_each(|f| self.u64(*f));
            }
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
            Msg::Api { tid, name, kind, start, end, correlation, result, stack } => {
                self.u32(*tid);
                self.u32(*name);
                self.u8(*kind);
                self.u64(*start);
                self.u64(*end);
                self.u64(*correlation);
                self.u32(*result);
                self.u64(*stack);
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
            Msg::Error(text) => self.str(text),
            Msg::Bye => {}
        }
        let len = (self.buf.len() - at - 4) as u32;
        self.buf[at..at + 4].copy_from_slice(&len.to_le_bytes());
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
        Msg::Hello { .. } => HELLO,
        Msg::Modules(_) => MODULES,
        Msg::Stack { .. } => STACK,
        Msg::Str { .. } => STR,
        Msg::Device { .. } => DEVICE,
        Msg::Queue { .. } => QUEUE,
        Msg::Api { .. } => API,
        Msg::Op(_) => OP,
        Msg::Clock { .. } => CLOCK,
        Msg::HostClock { .. } => HOST_CLOCK,
        Msg::Loss { .. } => LOSS,
        Msg::Error(_) => ERROR,
        Msg::Bye => BYE,
    }
}

/// Little-endian reader over a payload; reads past the end give 0 and set `short`.
#[derive(Debug)]
pub struct Reader<'a> {
    buf: &'a [u8],
    at: usize,
    /// A read went past the end.
    pub short: bool,
}

impl<'a> Reader<'a> {
    /// Reads `buf` from the start.
    pub fn new(buf: &'a [u8]) -> Self {
        Self { buf, at: 0, short: false }
    }
    fn bytes(&mut self, n: usize) -> &'a [u8] {
        if self.buf.len() - self.at < n {
            self.short = true;
            self.at = self.buf.len();
            return &[];
        }
        let b = &self.buf[self.at..self.at + n];
        self.at += n;
        b
    }
    fn u8(&mut self) -> u8 {
        self.bytes(1).first().copied().unwrap_or(0)
    }
    fn u32(&mut self) -> u32 {
        self.bytes(4).try_into().map(u32::from_le_bytes).unwrap_or(0)
    }
    fn u64(&mut self) -> u64 {
        self.bytes(8).try_into().map(u64::from_le_bytes).unwrap_or(0)
    }
    fn str(&mut self) -> String {
        let n = self.u32() as usize;
        String::from_utf8_lossy(self.bytes(n)).into_owned()
    }
    /// A count of items of at least `min` bytes each, bounded by what the payload can hold.
    fn count(&mut self, min: usize) -> usize {
        (self.u32() as usize).min((self.buf.len() - self.at) / min.max(1))
    }

    fn op(&mut self) -> Op {
        let (kind, copy, name) = (self.u8(), self.u8(), self.u32());
        let mut v = [0u64; 8];
        v.iter_mut().for_each(|x| *x = self.u64());
        let mut g = [0u32; 6];
        g.iter_mut().for_each(|x| *x = self.u32());
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

    /// Decodes a payload of message type `ty`; `None` for unknown types or short payloads.
    pub fn msg(ty: u8, payload: &'a [u8]) -> Option<Msg> {
        let mut r = Reader::new(payload);
        let m = match ty {
            HELLO => Msg::Hello { protocol: r.u32(), pid: r.u32(), ppid: r.u32(), command: r.str() },
            MODULES => {
                let n = r.count(28);
                Msg::Modules((0..n).map(|_| (r.u64(), r.u64(), r.u64(), r.str())).collect())
            }
            STACK => {
                let hash = r.u64();
                let n = r.count(8);
                Msg::Stack { hash, frames: (0..n).map(|_| r.u64()).collect() }
            }
            STR => Msg::Str { id: r.u32(), text: r.str() },
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
                    name: r.str(),
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
                stack: r.u64(),
            },
            OP => Msg::Op(r.op()),
            CLOCK => Msg::Clock { device: r.u64(), ticks: r.u64(), raw: r.u64() },
            HOST_CLOCK => Msg::HostClock { raw: r.u64(), mono: r.u64() },
            LOSS => Msg::Loss { cause: r.u8(), count: r.u64() },
            ERROR => Msg::Error(r.str()),
            BYE => Msg::Bye,
            _ => return None,
        };
        (!r.short).then_some(m)
    }
}

/// Splits the complete messages off the front of `buf`: `(type, payload)` pairs and the bytes
/// consumed.
pub fn split(buf: &[u8]) -> (Vec<(u8, &[u8])>, usize) {
    let mut out = Vec::new();
    let mut at = 0;
    while buf.len() - at >= 8 {
        let len = u32::from_le_bytes([buf[at], buf[at + 1], buf[at + 2], buf[at + 3]]) as usize;
        if len < 4 || buf.len() - at - 4 < len {
            break;
        }
        out.push((buf[at + 4], &buf[at + 8..at + 4 + len]));
        at += 4 + len;
    }
    (out, at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_message_round_trips() {
        let msgs = vec![
            Msg::Hello { protocol: 1, pid: 2, ppid: 3, command: "./app".into() },
            Msg::Modules(vec![(1, 2, 3, "/bin/x".into())]),
            Msg::Stack { hash: 9, frames: vec![1, 2, 3] },
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
            Msg::Api { tid: 1, name: 2, kind: 1, start: 3, end: 4, correlation: 5, result: 0, stack: 6 },
            Msg::Op(Op { kind: 1, copy: 2, start: 10, end: 20, groups: [1, 2, 3], ..Default::default() }),
            Msg::Clock { device: 1, ticks: 2, raw: 3 },
            Msg::HostClock { raw: 1, mono: 2 },
            Msg::Loss { cause: 1, count: 2 },
            Msg::Error("no".into()),
            Msg::Bye,
        ];
        let mut w = Writer::default();
        msgs.iter().for_each(|m| w.put(m));
        w.buf.extend_from_slice(&[1, 2]); // a partial next message stays unconsumed
        let (parts, used) = split(&w.buf);
        assert_eq!(used, w.buf.len() - 2);
        let back: Vec<Msg> = parts.iter().filter_map(|(t, p)| Reader::msg(*t, p)).collect();
        assert_eq!(back, msgs);
    }
}
