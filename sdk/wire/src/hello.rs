//! The first message of every stream, and the protocol version check.

use crate::{begin_message, end_message, Reader, MSG_HELLO, OLDEST_PROTOCOL, PROTOCOL};

/// Who is talking: the payload of [`MSG_HELLO`](crate::MSG_HELLO).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hello {
    /// Process id of the traced process.
    pub pid: u32,
    /// The vendor tracing library's version (0: the agent could not load it).
    pub runtime_version: u32,
    /// Wire protocol version the agent writes.
    pub protocol: u32,
    /// `FLAG_*` bits.
    pub flags: u32,
    /// The process's command line.
    pub command: String,
}

/// The agent writes a protocol this host does not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProtocolError {
    /// Another protocol version.
    #[error(
        "the agent in process {pid} writes wire protocol {agent}, this xpuprof reads protocols {oldest} to {host}: \
         its stream is ignored; use the agent library installed with this xpuprof \
         (an agent from another build is on the injection path)"
    )]
    Version {
        /// The traced process.
        pid: u32,
        /// The agent's version.
        agent: u32,
        /// This host's version ([`PROTOCOL`]).
        host: u32,
        /// The oldest version this host reads ([`OLDEST_PROTOCOL`]).
        oldest: u32,
    },
}

impl Hello {
    /// A hello for this process with this build's [`PROTOCOL`].
    pub fn new(runtime_version: u32, flags: u32) -> Self {
        let cmd = std::fs::read("/proc/self/cmdline").unwrap_or_default();
        let cmd: Vec<u8> = cmd.iter().map(|&c| if c == 0 { b' ' } else { c }).collect();
        Self {
            pid: std::process::id(),
            runtime_version,
            protocol: PROTOCOL,
            flags,
            command: String::from_utf8_lossy(cmd.trim_ascii_end()).into_owned(),
        }
    }

    /// Appends the message.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let at = begin_message(out, MSG_HELLO);
        for v in [self.pid, self.runtime_version, self.protocol, self.flags] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(self.command.as_bytes());
        end_message(out, at);
    }

    /// Reads a hello payload. The fields are read whatever the protocol, so a mismatch can
    /// still name the process; call [`check`](Self::check) before trusting anything else.
    pub fn decode(payload: &[u8]) -> Self {
        let mut r = Reader::new(payload);
        let (pid, runtime_version, protocol, flags) = (r.u32(), r.u32(), r.u32(), r.u32());
        let command = String::from_utf8_lossy(r.bytes(r.remaining())).into_owned();
        Self { pid, runtime_version, protocol, flags, command }
    }

    /// Refuses a stream written in a protocol version this host does not read (newer than
    /// [`PROTOCOL`] or older than [`OLDEST_PROTOCOL`]), naming the versions.
    pub fn check(&self) -> Result<(), ProtocolError> {
        if (OLDEST_PROTOCOL..=PROTOCOL).contains(&self.protocol) {
            Ok(())
        } else {
            Err(ProtocolError::Version {
                pid: self.pid,
                agent: self.protocol,
                host: PROTOCOL,
                oldest: OLDEST_PROTOCOL,
            })
        }
    }

    /// Whether `flag` (a `FLAG_*` bit) is set.
    pub fn has(&self, flag: u32) -> bool {
        self.flags & flag != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::split_messages;

    #[test]
    fn round_trips_and_refuses_another_version() {
        let h =
            Hello { pid: 42, runtime_version: 130000, protocol: PROTOCOL, flags: 3, command: "a b".into() };
        let mut b = Vec::new();
        h.encode(&mut b);
        let (msgs, _) = split_messages(&b);
        let back = Hello::decode(msgs[0].payload);
        assert_eq!(back, h);
        assert!(back.check().is_ok());
        let old = Hello { protocol: OLDEST_PROTOCOL, ..h.clone() };
        assert!(old.check().is_ok(), "an agent of an older build is still read");
        let newer = Hello { protocol: PROTOCOL + 1, ..h };
        let msg = newer.check().unwrap_err().to_string();
        assert!(msg.contains(&format!("protocol {}", PROTOCOL + 1)), "{msg}");
        assert!(msg.contains(&format!("reads protocols {OLDEST_PROTOCOL} to {PROTOCOL}")), "{msg}");
        assert!(msg.contains("process 42"), "{msg}");
    }
}
