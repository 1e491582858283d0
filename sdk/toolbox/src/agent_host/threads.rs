//! The accept, per-connection reader and decoder threads of an [`super::AgentHost`].

use std::io::Read;
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use xpuprof_sdk::hash::IdMap;
use xpuprof_sdk::{Emitter, Logger};

use super::control::Control;
use super::StreamDecoder;

/// How often the accept thread looks for new connections and for `stop`.
const ACCEPT_POLL: Duration = Duration::from_millis(20);
/// How long the decoder waits for data before it flushes what it emitted.
const IDLE_FLUSH: Duration = Duration::from_millis(100);
/// The most one read takes from a connection.
const READ_BYTES: usize = 1 << 20;

/// What reader threads tell the decoder thread.
pub(super) enum Event {
    Data(u64, Vec<u8>),
    End(u64),
    Shutdown,
}

/// Accepts connections until `stop`, one reader thread each (connection ids from 1); returns
/// the readers.
pub(super) fn accept_loop(
    label: &str,
    listener: UnixListener,
    stop: Arc<AtomicBool>,
    tx: Sender<Event>,
    control: Arc<Control>,
) -> Vec<JoinHandle<()>> {
    let mut readers = Vec::new();
    let mut next = 1u64;
    loop {
        if let Ok((s, _)) = listener.accept() {
            let (id, tx) = (next, tx.clone());
            next += 1;
            control.accepted(id, &s);
            let spawned = std::thread::Builder::new()
                .name(format!("{label}-conn-{id}"))
                .spawn(move || read_loop(id, s, tx));
            readers.extend(spawned.ok());
            continue;
        }
        if stop.load(Ordering::SeqCst) {
            break;
        }
        std::thread::sleep(ACCEPT_POLL);
    }
    readers
}

/// Forwards what connection `id` sends until it closes.
fn read_loop(id: u64, mut s: UnixStream, tx: Sender<Event>) {
    let _ = s.set_nonblocking(false);
    let mut buf = vec![0u8; READ_BYTES];
    while let Ok(n @ 1..) = s.read(&mut buf) {
        if tx.send(Event::Data(id, buf[..n].to_vec())).is_err() {
            return;
        }
    }
    let _ = tx.send(Event::End(id));
}

/// Feeds every connection's bytes to `d` in order until shutdown; returns its counters.
pub(super) fn decode_loop<D: StreamDecoder>(
    rx: Receiver<Event>,
    mut d: D,
    mut out: Emitter,
    log: Logger,
    processes: &str,
) -> D::Stats {
    let mut pending: IdMap<u64, Vec<u8>> = IdMap::default();
    loop {
        match rx.recv_timeout(IDLE_FLUSH) {
            Ok(Event::Data(id, bytes)) => {
                let buf = pending.entry(id).or_default();
                buf.extend_from_slice(&bytes);
                let used = d.feed(id, buf, &mut out);
                buf.drain(..used);
                // Under a steady stream the idle flush below never runs: records still reach
                // the host within FLUSH_INTERVAL.
                out.flush_if_due();
            }
            Ok(Event::End(id)) => {
                if pending.remove(&id).is_some_and(|b| !b.is_empty()) {
                    log.warn(&format!("a {processes} process's stream ended in the middle of a message"));
                }
                d.end(id, &mut out);
                out.flush();
            }
            Ok(Event::Shutdown) | Err(RecvTimeoutError::Disconnected) => break,
            Err(RecvTimeoutError::Timeout) => out.flush(),
        }
    }
    let stats = d.finish(&mut out);
    out.flush();
    stats
}
