//! Capture windows on the stream, both ways.
//!
//! - Agent to host, [`crate::MSG_WINDOW`]: `open u8` (1 a window opened, 0 it closed),
//!   `cause u8` (`CAUSE_*`), `pad u16`, `time u64` (session clock, ns), then the marker's text
//!   (the NVTX message that opened it; empty otherwise). Sent when the agent starts or stops
//!   collecting, so the outputs know which windows they cover.
//! - Host to agent, on the same socket in the other direction: commands framed like messages
//!   (`len u32`, `type u8`, three zero bytes, payload), with their own numbers:
//!   [`CMD_CAPTURE`] `on u8` opens (1) or closes (0) a window; [`CMD_DETACH`] (no payload) ends
//!   the session: the agent flushes, says goodbye, closes the connection and stays loaded,
//!   dormant, for a later attach. An agent that predates commands never reads them.

use crate::{begin_message, end_message, put_message, Reader, MSG_WINDOW};

/// The host asked (`set_capture`, a trigger, `--delay`/`--duration`).
pub const CAUSE_HOST: u8 = 1;
/// `cuProfilerStart`/`cuProfilerStop` (`cudaProfilerStart`, `torch.cuda.profiler`).
pub const CAUSE_PROFILER_API: u8 = 2;
/// An NVTX range with the configured message.
pub const CAUSE_NVTX: u8 = 3;
/// The agent attached to a running process (late start) or detached at the session's end.
pub const CAUSE_ATTACH: u8 = 4;
/// The process is exiting.
pub const CAUSE_EXIT: u8 = 5;
/// The process started under xpuprof with collection on (the window every run has unless it
/// starts paused).
pub const CAUSE_START: u8 = 6;

/// Host command: open (1) or close (0) a capture window.
pub const CMD_CAPTURE: u8 = 1;
/// Host command: end the session (flush, goodbye, close; the agent stays loaded and dormant).
pub const CMD_DETACH: u8 = 2;

/// A window edge, as [`crate::MSG_WINDOW`] carries it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WindowEdge {
    /// True when the window opened.
    pub open: bool,
    /// What opened or closed it (`CAUSE_*`).
    pub cause: u8,
    /// When, in the session clock.
    pub time: u64,
    /// The marker's text, if a marker did it.
    pub marker: String,
}

impl WindowEdge {
    /// Appends the message.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let at = begin_message(out, MSG_WINDOW);
        out.extend_from_slice(&[u8::from(self.open), self.cause, 0, 0]);
        out.extend_from_slice(&self.time.to_le_bytes());
        out.extend_from_slice(self.marker.as_bytes());
        end_message(out, at);
    }

    /// Reads a payload; `None` when it is too short.
    pub fn decode(payload: &[u8]) -> Option<Self> {
        let mut r = Reader::new(payload);
        let (open, cause, _, _) = (r.u8(), r.u8(), r.u8(), r.u8());
        let time = r.u64();
        let marker = String::from_utf8_lossy(r.bytes(r.remaining())).into_owned();
        (!r.short).then_some(Self { open: open != 0, cause, time, marker })
    }
}

/// A host command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// Open (`true`) or close a window.
    Capture(bool),
    /// End the session.
    Detach,
    /// A command this agent does not know (skipped).
    Unknown(u8),
}

impl Command {
    /// Appends the command.
    pub fn encode(self, out: &mut Vec<u8>) {
        match self {
            Command::Capture(on) => put_message(out, CMD_CAPTURE, &[&[u8::from(on)]]),
            Command::Detach => put_message(out, CMD_DETACH, &[]),
            Command::Unknown(ty) => put_message(out, ty, &[]),
        }
    }

    /// The commands complete at the front of `buf`, and the bytes they took.
    pub fn split(buf: &[u8]) -> (Vec<Command>, usize) {
        let (msgs, used) = crate::split_messages(buf);
        let cmds = msgs
            .iter()
            .map(|m| match m.ty {
                CMD_CAPTURE => Command::Capture(m.payload.first().is_some_and(|&b| b != 0)),
                CMD_DETACH => Command::Detach,
                ty => Command::Unknown(ty),
            })
            .collect();
        (cmds, used)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_edges_and_commands_round_trip() {
        let e = WindowEdge { open: true, cause: CAUSE_NVTX, time: 42, marker: "step 5".into() };
        let mut b = Vec::new();
        e.encode(&mut b);
        let (msgs, used) = crate::split_messages(&b);
        assert_eq!((msgs[0].ty, used), (MSG_WINDOW, b.len()));
        assert_eq!(WindowEdge::decode(msgs[0].payload), Some(e));
        assert_eq!(WindowEdge::decode(&[1, 2]), None);
        let mut c = Vec::new();
        for cmd in [Command::Capture(true), Command::Detach, Command::Capture(false), Command::Unknown(99)] {
            cmd.encode(&mut c);
        }
        let (cmds, used) = Command::split(&c[..c.len() - 1]);
        assert_eq!(cmds, [Command::Capture(true), Command::Detach, Command::Capture(false)]);
        assert_eq!(Command::split(&c[used..]).0, [Command::Unknown(99)], "the incomplete last one waits");
    }
}
