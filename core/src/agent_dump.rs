//! `xpuprof decode-agent-dump FILE`: an in-target agent's dump file (what an agent on the kit
//! writes to `XPUPROF_<B>_DUMP`'s folder, or `dump_env`'s for a C agent: its wire stream as
//! sent) printed as the `dump` sink's JSON lines, one per line, for the agent's author.
//!
//! The kit's part of the stream is decoded as a source decodes it (the toolbox's
//! `AgentDecoder`): the hello (refused when its protocol is not read), the process, the module
//! map, every launch stack as frames (module and offset) and a stack definition, and each launch
//! as an `ApiCall` (entry to exit) and, with agent stacks, its `LaunchSite`. Every other message
//! (the backend's own: vendor records, clock pairs, drops) is a line naming its type and size,
//! with the fields of the kit-defined ones it can read: what it means is the backend decoder's
//! business. The stream does not name its correlation backend: ids are shown under
//! `backend::FIRST_THIRD_PARTY`.

use std::io::Write;
use std::path::Path;

use xpuprof_sdk::codec;
use xpuprof_sdk::hash::IdMap;
use xpuprof_sdk::model::{backend, ApiCall, Correlation, Record};
use xpuprof_sdk::{Emitter, Logger};
use xpuprof_toolbox::agent_host::{AgentConn, AgentCounts, AgentDecoder, KitDecoder, StreamDecoder};
use xpuprof_toolbox::json_lines;
use xpuprof_wire::launches::Launch;
use xpuprof_wire::{self as wire, Hello, Message, Reader};

/// What went wrong reading or writing a dump.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AgentDumpError {
    /// The file could not be read.
    #[error("failed to read agent dump {path}: {source}")]
    Read {
        /// The dump file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The output could not be written.
    #[error("failed to write the decoded lines: {0}")]
    Write(#[from] std::io::Error),
}

/// What the decoding found, for the closing line.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct DumpCounts {
    /// Lines written.
    pub lines: u64,
    /// The kit's counters (processes, refused streams, launch sites...).
    pub kit: AgentCounts,
    /// Bytes at the end that do not make a whole message (a dump cut short).
    pub trailing_bytes: usize,
}

/// What is printed, in stream order: encoded records, or a message the kit does not read.
enum Part {
    Records(Vec<u8>),
    Message(String),
}

struct DumpDecoder {
    kit: AgentDecoder<AgentConn>,
    api_names: IdMap<(u32, u32), String>,
    parts: Vec<Part>,
}

impl KitDecoder for DumpDecoder {
    type Conn = AgentConn;
    type Own = Vec<Part>;

    fn kit(&mut self) -> &mut AgentDecoder<AgentConn> {
        &mut self.kit
    }

    fn hello(&mut self, _conn: u64, _hello: &Hello) {
        self.kit.counts.processes += 1;
    }

    fn launch(&mut self, conn: u64, pid: u32, tid: u32, l: &Launch, out: &mut Emitter) {
        let text = self
            .api_names
            .get(&(u32::from(l.domain), l.api_id))
            .cloned()
            .unwrap_or_else(|| format!("api {} of domain {}", l.api_id, l.domain));
        let api = self.kit.strs.string(out, &text);
        let correlation = Correlation { backend: backend::FIRST_THIRD_PARTY, id: u64::from(l.correlation) };
        let call = ApiCall::default()
            .pid(pid)
            .tid(tid)
            .start(l.time)
            .end(l.end.max(l.time))
            .name(api)
            .correlation(Some(correlation))
            .result(i64::from(l.result as i32));
        out.emit(&Record::ApiCall(call));
        if let Some(site) = self.kit.launch_site(conn, tid, l, correlation, api) {
            out.emit(&Record::LaunchSite(site));
        }
    }

    fn message(&mut self, _conn: u64, m: Message<'_>, out: &mut Emitter) {
        if m.ty == wire::MSG_API_NAMES {
            for (domain, id, name) in wire::names::parse_api_names(m.payload) {
                self.api_names.insert((domain, id), name);
            }
        }
        self.parts.push(Part::Records(out.take_buffer()));
        self.parts.push(Part::Message(message_line(m.ty, m.payload)));
    }

    fn end_conn(&mut self, conn: u64, _out: &mut Emitter) {
        self.kit.conns.remove(&conn);
    }

    fn into_own(self) -> Vec<Part> {
        self.parts
    }
}

/// A message the kit does not read, as one JSON line: its type, size and the fields of the
/// common ones.
fn message_line(ty: u8, payload: &[u8]) -> String {
    let mut r = Reader::new(payload);
    let (name, fields) = match ty {
        wire::MSG_RECORDS => ("records", format!(",\"count\":{}", r.u32())),
        wire::MSG_DROPPED => ("dropped", format!(",\"count\":{},\"time\":{}", r.u64(), r.u64())),
        wire::MSG_CLOCK => ("clock", format!(",\"vendor\":{},\"monotonic\":{}", r.u64(), r.u64())),
        wire::MSG_LOST_LAUNCHES => ("lost launches", format!(",\"count\":{}", r.u64())),
        wire::MSG_API_NAMES => ("api names", format!(",\"count\":{}", r.u32())),
        wire::MSG_BACKEND_LEGACY => ("backend", String::new()),
        64..=127 => ("vendor", String::new()),
        t if t >= wire::MSG_BACKEND_FIRST => ("backend-private", String::new()),
        _ => ("unknown", String::new()),
    };
    format!("{{\"message\":\"{name}\",\"type\":{ty},\"bytes\":{}{fields}}}", payload.len())
}

/// `xpuprof decode-agent-dump`: decodes the dump at `path` into `output` (stdout when `None`).
pub fn run(path: &Path, output: Option<&Path>) -> Result<DumpCounts, AgentDumpError> {
    match output {
        Some(o) => {
            let mut w = std::io::BufWriter::new(std::fs::File::create(o)?);
            let c = decode(path, &mut w)?;
            w.flush()?;
            Ok(c)
        }
        None => {
            let mut w = std::io::BufWriter::new(std::io::stdout().lock());
            let c = decode(path, &mut w)?;
            w.flush()?;
            Ok(c)
        }
    }
}

/// Decodes the agent dump at `path` and writes its JSON lines to `out`.
pub fn decode(path: &Path, out: &mut dyn Write) -> Result<DumpCounts, AgentDumpError> {
    let bytes = std::fs::read(path)
        .map_err(|source| AgentDumpError::Read { path: path.display().to_string(), source })?;
    decode_bytes(&bytes, out)
}

/// Decodes the dump `bytes` and writes its JSON lines to `out`.
pub fn decode_bytes(bytes: &[u8], out: &mut dyn Write) -> Result<DumpCounts, AgentDumpError> {
    let mut d = DumpDecoder {
        kit: AgentDecoder::new(Logger::stderr(), "agent messages dropped"),
        api_names: IdMap::default(),
        parts: Vec::new(),
    };
    let mut emitter = Emitter::detached();
    let used = d.feed(1, bytes, &mut emitter);
    let (kit, mut parts) = d.finish(&mut emitter);
    parts.push(Part::Records(emitter.take_buffer()));
    let mut counts = DumpCounts { lines: 0, kit, trailing_bytes: bytes.len() - used };
    for p in parts {
        match p {
            Part::Records(b) => {
                for r in codec::Decoder::new(&b).flatten() {
                    writeln!(out, "{}", json_lines::record_line(&r))?;
                    counts.lines += 1;
                }
            }
            Part::Message(line) => {
                writeln!(out, "{line}")?;
                counts.lines += 1;
            }
        }
    }
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A protocol-2 stream: hello with agent stacks, a module map, API names, a 300-frame stack
    /// and a launch on it, a vendor message, a bye.
    fn stream(protocol: u32) -> Vec<u8> {
        let mut b = Vec::new();
        let mut h = wire::Hello::new(7, wire::FLAG_AGENT_STACKS);
        (h.pid, h.protocol, h.command) = (4_100_001, protocol, "./app".into());
        h.encode(&mut b);
        let mut names = wire::names::Entries::default();
        names.api_name(1, 5, b"acmeLaunch");
        names.put_api_names(&mut b);
        let at = wire::begin_message(&mut b, wire::MSG_LAUNCHES);
        b.extend_from_slice(&[9, 0, 0, 0, 0, 0, 0, 0]);
        wire::launches::put_stack(&mut b, 0x99, &(1..=300u64).map(|i| 0x1000 + i).collect::<Vec<_>>());
        let mut e = [0u8; wire::LAUNCH_ENTRY_BYTES];
        e[0] = wire::ENTRY_LAUNCH;
        e[1] = 1;
        e[4..8].copy_from_slice(&5u32.to_le_bytes());
        e[8..12].copy_from_slice(&3u32.to_le_bytes());
        e[16..24].copy_from_slice(&100u64.to_le_bytes());
        e[24..32].copy_from_slice(&0x99u64.to_le_bytes());
        e[32..40].copy_from_slice(&150u64.to_le_bytes());
        b.extend_from_slice(&e);
        wire::end_message(&mut b, at);
        wire::put_clock(&mut b, 5, 6);
        wire::put_message(&mut b, wire::MSG_BACKEND_FIRST, &[b"mine"]);
        wire::put_message(&mut b, wire::MSG_BYE, &[&1u64.to_le_bytes(), &1u64.to_le_bytes()]);
        b
    }

    #[test]
    fn a_dump_becomes_json_lines_of_records_and_messages_in_stream_order() {
        let mut out = Vec::new();
        let mut bytes = stream(wire::PROTOCOL);
        bytes.extend_from_slice(&[1, 2, 3]);
        let c = decode_bytes(&bytes, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!((c.kit.processes, c.kit.launch_sites, c.trailing_bytes), (1, 1, 3), "{text}");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(c.lines as usize, lines.len());
        let at = |what: &str| {
            lines.iter().position(|l| l.contains(what)).unwrap_or_else(|| panic!("{what}: {text}"))
        };
        assert!(at("\"record\":\"Process\"") < at("\"record\":\"Stack\""));
        assert!(at("\"record\":\"Stack\"") < at("\"record\":\"ApiCall\""));
        assert!(at("\"record\":\"ApiCall\"") < at("\"record\":\"LaunchSite\""));
        assert!(at("\"message\":\"api names\"") < at("\"record\":\"ApiCall\""));
        assert!(
            at("\"record\":\"LaunchSite\"")
                < at("\"message\":\"clock\",\"type\":6,\"bytes\":16,\"vendor\":5,\"monotonic\":6")
        );
        assert!(at("\"text\":\"acmeLaunch\"") < at("\"record\":\"ApiCall\""));
        assert!(text.contains("{\"message\":\"backend-private\",\"type\":128,\"bytes\":4}"), "{text}");
        let stack = lines[at("\"record\":\"Stack\"")];
        assert_eq!(stack.matches(',').count(), 300 + 1, "300 frames: {stack}");
    }

    /// Every committed agent stream (`plugins/<backend>/tests/fixtures/<case>/stream.bin`),
    /// written by agents on real machines.
    fn fixture_streams() -> Vec<std::path::PathBuf> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins");
        let mut out = Vec::new();
        for backend in std::fs::read_dir(root).unwrap().flatten() {
            let fixtures = backend.path().join("tests/fixtures");
            for case in std::fs::read_dir(fixtures).into_iter().flatten().flatten() {
                let f = case.path().join("stream.bin");
                if f.is_file() {
                    out.push(f);
                }
            }
        }
        out
    }

    #[test]
    fn real_agent_dumps_decode_with_their_launch_stacks() {
        let streams = fixture_streams();
        assert!(!streams.is_empty(), "no committed agent stream under plugins/*/tests/fixtures");
        for f in streams {
            let mut out = Vec::new();
            let c = decode(&f, &mut out).unwrap();
            let text = String::from_utf8(out).unwrap();
            let (sites, stacks) = (
                text.matches("{\"record\":\"LaunchSite\"").count(),
                text.matches("{\"record\":\"Stack\"").count(),
            );
            assert_eq!((c.kit.refused, c.trailing_bytes), (0, 0), "{}", f.display());
            assert!(c.kit.processes >= 1 && sites >= 1 && stacks >= 1, "{}: {c:?}", f.display());
            assert!(
                text.contains("\"message\":\"records\""),
                "{}: the vendor records are listed",
                f.display()
            );
        }
    }

    #[test]
    fn a_stream_of_an_unread_protocol_is_refused_and_printed_as_such() {
        let mut out = Vec::new();
        let c = decode_bytes(&stream(wire::PROTOCOL + 1), &mut out).unwrap();
        assert_eq!((c.kit.refused, c.kit.processes), (1, 0));
        assert!(!String::from_utf8(out).unwrap().contains("\"record\":\"ApiCall\""));
    }
}
