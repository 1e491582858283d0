//! Reading one agent's stream on the host: a [`StreamReader`] takes the bytes of one connection
//! (or of one dump file) as they arrive and hands back its messages, typed, in order. It checks
//! that the stream starts with a hello in a protocol this crate reads, reads launch messages in
//! that protocol, and hands every message it has no type for (an agent's own, numbers 128–255,
//! and the vendor messages of xpuprof's own backends) back as bytes. `agent-stream.md` (in an
//! installation, `PREFIX/share/xpuprof/agent-stream.md`) lays out every byte.
//!
//! ```
//! use xpuprof_wire::stream::{AgentMessage, StreamReader};
//! # let mut bytes = Vec::new();
//! # xpuprof_wire::Hello::new(1, xpuprof_wire::FLAG_AGENT_STACKS).encode(&mut bytes);
//! let mut reader = StreamReader::new();
//! reader.push(&bytes); // what one read of the connection returned
//! while let Some(message) = reader.next_message() {
//!     match message? {
//!         AgentMessage::Hello(hello) => println!("process {}", hello.pid),
//!         AgentMessage::Own { ty, payload } => println!("my message {ty}: {} bytes", payload.len()),
//!         _ => {}
//!     }
//! }
//! # Ok::<(), xpuprof_wire::stream::StreamError>(())
//! ```

use crate::launches::{self, Entry};
use crate::maps::{self, Mapping};
use crate::{Hello, ProtocolError, Reader, HEADER_BYTES, MSG_BACKEND_FIRST};

/// One message of an agent's stream.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AgentMessage<'a> {
    /// The first message: the process, its runtime's version, the protocol and the `FLAG_*`s.
    Hello(Hello),
    /// The process's executable mappings, sorted by address; each one replaces the last.
    Modules(Vec<Mapping>),
    /// Launch stacks and launch entries of one thread, in the order the agent wrote them (a
    /// stack entry before the first launch that names it).
    Launches {
        /// The thread's id (the kernel's `gettid`).
        tid: u32,
        /// Its entries.
        entries: Vec<Entry>,
    },
    /// A paired reading of the vendor's clock and `CLOCK_MONOTONIC`.
    Clock {
        /// The vendor clock.
        vendor: u64,
        /// `CLOCK_MONOTONIC`, nanoseconds.
        monotonic: u64,
    },
    /// Records the vendor library dropped.
    Dropped {
        /// How many.
        count: u64,
        /// When it said so.
        time: u64,
    },
    /// Launch entries the agent dropped (its buffers were full).
    LostLaunches(u64),
    /// Output the agent's channel dropped (the host was gone or too slow).
    LostBytes {
        /// Messages (chunks) dropped.
        chunks: u64,
        /// Bytes dropped.
        bytes: u64,
    },
    /// Why the agent could not trace the process.
    Error(String),
    /// The agent flushed everything and is done: its totals.
    Bye {
        /// Launch entries it sent.
        launches: u64,
        /// Distinct stacks it sent.
        stacks: u64,
    },
    /// A message in the agent's own range ([`MSG_BACKEND_FIRST`] to 255): its number and
    /// payload, as the agent wrote them.
    Own {
        /// Its number.
        ty: u8,
        /// Its payload.
        payload: &'a [u8],
    },
    /// Any other message (vendor records, strings, API names, Python frames, capture windows,
    /// the vendor messages of xpuprof's own backends, numbers of later protocols): its number
    /// and payload.
    Other {
        /// Its number.
        ty: u8,
        /// Its payload.
        payload: &'a [u8],
    },
}

/// A stream that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StreamError {
    /// The first message is not a hello: not an agent's stream, or one that lost its start.
    #[error(
        "the stream starts with message type {ty}, not a hello (1): not an agent's stream, or one \
         that lost its beginning"
    )]
    NoHello {
        /// The first message's number.
        ty: u8,
    },
    /// A message's length field is below the 4 bytes of its type: the framing is broken.
    #[error("message at byte {at} of the stream says it has {len} bytes, fewer than its 4-byte type: the framing is broken")]
    BadLength {
        /// Its offset in the stream.
        at: u64,
        /// Its length field.
        len: u32,
    },
    /// The hello's protocol is not one this crate reads.
    #[error(transparent)]
    Protocol(#[from] ProtocolError),
}

/// The messages of one agent stream, from its bytes as they arrive. After an error it returns
/// nothing more: the rest of the stream cannot be trusted.
#[derive(Debug, Default)]
pub struct StreamReader {
    buf: Vec<u8>,
    at: usize,
    consumed: u64,
    hello: Option<Hello>,
    failed: bool,
}

impl StreamReader {
    /// A reader at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends the next bytes of the stream.
    pub fn push(&mut self, bytes: &[u8]) {
        if self.at > 0 {
            self.buf.drain(..self.at);
            self.consumed += self.at as u64;
            self.at = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// The stream's hello, once read.
    pub fn hello(&self) -> Option<&Hello> {
        self.hello.as_ref()
    }

    /// Bytes received that do not make a whole message yet (at the stream's end: a message cut
    /// short).
    pub fn pending(&self) -> usize {
        self.buf.len() - self.at
    }

    /// The next whole message, `None` until more bytes come (or after an error).
    pub fn next_message(&mut self) -> Option<Result<AgentMessage<'_>, StreamError>> {
        if self.failed || self.buf.len() - self.at < HEADER_BYTES {
            return None;
        }
        let b = &self.buf[self.at..];
        let len = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        if len < 4 {
            self.failed = true;
            return Some(Err(StreamError::BadLength { at: self.consumed + self.at as u64, len }));
        }
        let end = 4 + len as usize;
        if b.len() < end {
            return None;
        }
        let ty = b[4];
        let start = self.at + HEADER_BYTES;
        self.at += end;
        let payload = &self.buf[start..self.at];
        let Some(hello) = &self.hello else {
            if ty != crate::MSG_HELLO {
                self.failed = true;
                return Some(Err(StreamError::NoHello { ty }));
            }
            let hello = Hello::decode(payload);
            if let Err(e) = hello.check() {
                self.failed = true;
                return Some(Err(e.into()));
            }
            self.hello = Some(hello.clone());
            return Some(Ok(AgentMessage::Hello(hello)));
        };
        Some(Ok(typed(ty, payload, hello.protocol)))
    }
}

/// Message `ty` with `payload`, in a stream of protocol `protocol`.
fn typed(ty: u8, payload: &[u8], protocol: u32) -> AgentMessage<'_> {
    let mut r = Reader::new(payload);
    match ty {
        crate::MSG_HELLO => AgentMessage::Hello(Hello::decode(payload)),
        crate::MSG_MODULES => AgentMessage::Modules(maps::decode_modules(payload)),
        crate::MSG_LAUNCHES => {
            let (tid, entries) = launches::parse(payload, protocol);
            AgentMessage::Launches { tid, entries }
        }
        crate::MSG_CLOCK => AgentMessage::Clock { vendor: r.u64(), monotonic: r.u64() },
        crate::MSG_DROPPED => AgentMessage::Dropped { count: r.u64(), time: r.u64() },
        crate::MSG_LOST_LAUNCHES => AgentMessage::LostLaunches(r.u64()),
        crate::MSG_LOST_BYTES => AgentMessage::LostBytes { chunks: r.u64(), bytes: r.u64() },
        crate::MSG_ERROR => AgentMessage::Error(String::from_utf8_lossy(payload).into_owned()),
        crate::MSG_BYE => AgentMessage::Bye { launches: r.u64(), stacks: r.u64() },
        ty if ty >= MSG_BACKEND_FIRST => AgentMessage::Own { ty, payload },
        ty => AgentMessage::Other { ty, payload },
    }
}

/// Where return address `ra` of a launch stack points: the mapping among `maps` (a
/// [`AgentMessage::Modules`] list, sorted) holding the call instruction, `ra - 1`, and that
/// instruction's file offset in the mapped file, which is what a symbolizer looks up. Stacks
/// carry raw return addresses (the instruction after each call); every frame, the innermost
/// too, is a return address. `None` for an address no mapping holds (JIT code, a broken chain).
pub fn call_site(maps: &[Mapping], ra: u64) -> Option<(&Mapping, u64)> {
    let addr = ra.checked_sub(1)?;
    let i = maps.partition_point(|m| m.start <= addr);
    let m = maps.get(i.checked_sub(1)?)?;
    m.contains(addr).then(|| (m, m.file_offset(addr)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::launches::Launch;
    use crate::{put_message, MSG_BYE, MSG_LAUNCHES, PROTOCOL};

    fn hello(protocol: u32) -> Vec<u8> {
        let mut b = Vec::new();
        Hello { pid: 7, runtime_version: 3, protocol, flags: 2, command: "app".into() }.encode(&mut b);
        b
    }

    fn launches(stack_hash: u64) -> Vec<u8> {
        let mut p = vec![9, 0, 0, 0, 0, 0, 0, 0];
        launches::put_stack(&mut p, stack_hash, &[0x1010, 0x2020]);
        let l = Launch {
            domain: 1,
            api_id: 1,
            correlation: 5,
            time: 100,
            stack: stack_hash,
            end: 150,
            ..Default::default()
        };
        let mut e = [0u8; crate::LAUNCH_ENTRY_BYTES];
        e[0] = crate::ENTRY_LAUNCH;
        e[1] = l.domain;
        e[4..8].copy_from_slice(&l.api_id.to_le_bytes());
        e[8..12].copy_from_slice(&l.correlation.to_le_bytes());
        e[16..24].copy_from_slice(&l.time.to_le_bytes());
        e[24..32].copy_from_slice(&l.stack.to_le_bytes());
        e[32..40].copy_from_slice(&l.end.to_le_bytes());
        p.extend_from_slice(&e);
        let mut b = Vec::new();
        put_message(&mut b, MSG_LAUNCHES, &[&p]);
        b
    }

    #[test]
    fn reads_a_stream_fed_one_byte_at_a_time() {
        let mut bytes = hello(PROTOCOL);
        bytes.extend(launches(0xab));
        put_message(&mut bytes, 0x80, &[b"own"]);
        put_message(&mut bytes, MSG_BYE, &[&1u64.to_le_bytes(), &1u64.to_le_bytes()]);
        let mut r = StreamReader::new();
        let mut seen = Vec::new();
        for b in &bytes {
            r.push(std::slice::from_ref(b));
            while let Some(m) = r.next_message() {
                seen.push(format!("{:?}", m.unwrap()));
            }
        }
        assert_eq!(seen.len(), 4, "{seen:?}");
        assert!(seen[0].starts_with("Hello(Hello { pid: 7"), "{}", seen[0]);
        assert!(seen[1].contains("tid: 9") && seen[1].contains("frames: [4112, 8224]"), "{}", seen[1]);
        assert!(seen[1].contains("correlation: 5"), "{}", seen[1]);
        assert_eq!(seen[2], "Own { ty: 128, payload: [111, 119, 110] }");
        assert_eq!(seen[3], "Bye { launches: 1, stacks: 1 }");
        assert_eq!((r.pending(), r.hello().map(|h| h.pid)), (0, Some(7)));
    }

    #[test]
    fn refuses_a_stream_without_a_hello_or_of_another_protocol() {
        let mut r = StreamReader::new();
        r.push(&launches(1));
        assert_eq!(r.next_message(), Some(Err(StreamError::NoHello { ty: MSG_LAUNCHES })));
        assert_eq!(r.next_message(), None, "nothing after an error");
        let mut r = StreamReader::new();
        r.push(&hello(PROTOCOL + 1));
        let e = r.next_message().unwrap().unwrap_err().to_string();
        assert!(e.contains(&format!("writes wire protocol {}", PROTOCOL + 1)), "{e}");
        let mut r = StreamReader::new();
        r.push(&[2, 0, 0, 0, 1, 0, 0, 0]);
        assert!(matches!(r.next_message(), Some(Err(StreamError::BadLength { at: 0, len: 2 }))));
    }

    #[test]
    fn call_sites_are_one_byte_before_the_return_address() {
        let maps = vec![
            Mapping { start: 0x1000, end: 0x2000, offset: 0x5000, exec: true, path: "/a".into() },
            Mapping { start: 0x3000, end: 0x4000, offset: 0, exec: true, path: "/b".into() },
        ];
        assert_eq!(call_site(&maps, 0x1010).map(|(m, o)| (m.path.as_str(), o)), Some(("/a", 0x500f)));
        assert_eq!(call_site(&maps, 0x3000), None, "its call is at 0x2fff, outside both");
        assert_eq!(call_site(&maps, 0x3001).map(|(m, o)| (m.path.as_str(), o)), Some(("/b", 0)));
        assert_eq!(call_site(&maps, 0), None);
    }
}
