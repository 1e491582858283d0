//! A backend decoder built on the kit's [`AgentDecoder`] is a [`StreamDecoder`] through this
//! trait: it says where its kit part is, what it does with a hello, each launch and each of its
//! own messages (the kit's [`Step`]s, taken apart), how a connection ends
//! and what is left at the session's end; feeding, ending every connection still open and
//! returning the counters ([`AgentCounts`] beside its own) are the same for every backend.
//!
//! ```no_run
//! # use xpuprof_sdk::Emitter;
//! # use xpuprof_toolbox::agent_host::{AgentConn, AgentDecoder, Conn, KitDecoder};
//! # use xpuprof_wire::Message;
//! # #[derive(Default)]
//! # struct MyConn { agent: AgentConn }
//! # impl Conn for MyConn {
//! #     fn agent(&self) -> &AgentConn { &self.agent }
//! #     fn agent_mut(&mut self) -> &mut AgentConn { &mut self.agent }
//! # }
//! struct MyDecoder {
//!     kit: AgentDecoder<MyConn>,
//!     records: u64,
//! }
//!
//! impl KitDecoder for MyDecoder {
//!     type Conn = MyConn;
//!     type Own = u64;
//!
//!     fn kit(&mut self) -> &mut AgentDecoder<MyConn> {
//!         &mut self.kit
//!     }
//!     fn message(&mut self, _conn: u64, _m: Message<'_>, _out: &mut Emitter) {
//!         self.records += 1;
//!     }
//!     fn end_conn(&mut self, conn: u64, _out: &mut Emitter) {
//!         self.kit.conns.remove(&conn);
//!     }
//!     fn into_own(self) -> u64 {
//!         self.records
//!     }
//! }
//! // `MyDecoder` is now a `StreamDecoder` whose stats are `(AgentCounts, u64)`.
//! ```

use xpuprof_sdk::Emitter;

use xpuprof_wire::launches::Launch;
use xpuprof_wire::{Hello, Message};

use super::{AgentCounts, AgentDecoder, Conn, Step, StreamDecoder};

/// A decoder whose kit part is an [`AgentDecoder`]; every one is a [`StreamDecoder`] whose
/// counters are `(AgentCounts, Own)`.
pub trait KitDecoder: Send + 'static {
    /// Its per-connection state.
    type Conn: Conn;
    /// Its own counters, returned beside the kit's.
    type Own: Send + 'static;

    /// The kit's part.
    fn kit(&mut self) -> &mut AgentDecoder<Self::Conn>;

    /// Connection `conn`'s hello was accepted (its [`AgentConn`](super::AgentConn) is filled
    /// in, its process defined): nothing by default.
    fn hello(&mut self, _conn: u64, _hello: &Hello) {}

    /// One launch of thread `tid` of `pid`, in the order of its launch message (the thread and
    /// every new stack already defined: [`AgentDecoder::launch_site`] gives its site): nothing
    /// by default.
    fn launch(&mut self, _conn: u64, _pid: u32, _tid: u32, _launch: &Launch, _out: &mut Emitter) {}

    /// A message of connection `conn` that the kit does not read: the backend's own.
    fn message(&mut self, conn: u64, m: Message<'_>, out: &mut Emitter);

    /// A window of connection `conn` is closing (its closing edge arrived, after every record
    /// of the window): emits what the backend still holds of the window, so the window's
    /// outputs get it (nothing by default).
    fn window_closing(&mut self, _conn: u64, _out: &mut Emitter) {}

    /// Connection `conn` ended: emits what it still held and removes it from the kit's
    /// connections.
    fn end_conn(&mut self, conn: u64, out: &mut Emitter);

    /// Every connection ended: emits what belongs to the whole session (nothing by default).
    fn end_session(&mut self, _out: &mut Emitter) {}

    /// Its own counters.
    fn into_own(self) -> Self::Own;
}

/// What the kit left of a message of connection `conn`, each kind to its method of `d`: the
/// hello, each launch in order, the backend's own message.
fn step<D: KitDecoder>(d: &mut D, conn: u64, step: Step<'_>, out: &mut Emitter) {
    match step {
        Step::Hello(h) => d.hello(conn, &h),
        Step::Launches { pid, tid, launches } => {
            for l in &launches {
                d.launch(conn, pid, tid, l, out);
            }
        }
        Step::Message(m) => d.message(conn, m, out),
    }
}

impl<D: KitDecoder> StreamDecoder for D {
    type Stats = (AgentCounts, D::Own);

    fn feed(&mut self, conn: u64, buf: &[u8], out: &mut Emitter) -> usize {
        AgentDecoder::feed_with(self, conn, buf, out, D::kit, step::<D>, D::window_closing)
    }

    fn end(&mut self, conn: u64, out: &mut Emitter) {
        self.end_conn(conn, out);
    }

    fn finish(mut self, out: &mut Emitter) -> (AgentCounts, D::Own) {
        for conn in self.kit().open() {
            self.end_conn(conn, out);
        }
        self.end_session(out);
        let counts = std::mem::take(&mut self.kit().counts);
        (counts, self.into_own())
    }
}

#[cfg(test)]
mod tests {
    use xpuprof_sdk::Logger;
    use xpuprof_wire::{self as wire, Hello};

    use super::*;
    use crate::agent_host::AgentConn;

    /// Notes which connections ended, and when the session did.
    struct Ends {
        kit: AgentDecoder<AgentConn>,
        ended: Vec<u64>,
    }

    impl KitDecoder for Ends {
        type Conn = AgentConn;
        type Own = Vec<u64>;

        fn kit(&mut self) -> &mut AgentDecoder<AgentConn> {
            &mut self.kit
        }
        fn hello(&mut self, _conn: u64, _hello: &Hello) {
            self.kit.counts.processes += 1;
        }
        fn message(&mut self, _conn: u64, _m: Message<'_>, _out: &mut Emitter) {}
        fn end_conn(&mut self, conn: u64, _out: &mut Emitter) {
            self.kit.conns.remove(&conn);
            self.ended.push(conn);
        }
        fn end_session(&mut self, _out: &mut Emitter) {
            self.ended.push(0);
        }
        /// A closing window is noted as the connection's id plus 100.
        fn window_closing(&mut self, conn: u64, _out: &mut Emitter) {
            self.ended.push(100 + conn);
        }
        fn into_own(self) -> Vec<u64> {
            self.ended
        }
    }

    #[test]
    fn finish_ends_the_connections_still_open_then_the_session_and_returns_both_counters() {
        let mut d = Ends { kit: AgentDecoder::new(Logger::stderr(), "lost"), ended: Vec::new() };
        let mut out = Emitter::detached();
        for (conn, pid) in [(1, 4_000_011), (2, 4_000_012), (3, 4_000_013)] {
            let mut h = Hello::new(1, 0);
            h.pid = pid;
            let mut bytes = Vec::new();
            h.encode(&mut bytes);
            wire::put_message(&mut bytes, wire::MSG_LOST_BYTES, &[&2u64.to_le_bytes(), &20u64.to_le_bytes()]);
            assert_eq!(d.feed(conn, &bytes, &mut out), bytes.len());
        }
        d.end(2, &mut out);
        let (counts, ended) = d.finish(&mut out);
        assert_eq!((counts.processes, counts.lost_chunks), (3, 6));
        let (mut conns, session) = (ended[..3].to_vec(), ended[3]);
        conns.sort_unstable();
        assert_eq!(
            (conns, session),
            (vec![1, 2, 3], 0),
            "2 ended once, 1 and 3 at the finish, then the session"
        );
    }

    #[test]
    fn a_closing_window_edge_reaches_the_backend_before_the_kit_reads_it_and_an_opening_one_does_not() {
        use wire::control::{WindowEdge, CAUSE_HOST};
        let mut d = Ends { kit: AgentDecoder::new(Logger::stderr(), "lost"), ended: Vec::new() };
        let mut out = Emitter::detached();
        let mut bytes = Vec::new();
        Hello::new(1, 0).encode(&mut bytes);
        for open in [true, false, true] {
            WindowEdge { open, cause: CAUSE_HOST, time: 10, marker: String::new() }.encode(&mut bytes);
        }
        d.feed(7, &bytes, &mut out);
        assert_eq!(d.ended, vec![107], "one closing edge, one call");
    }
}
