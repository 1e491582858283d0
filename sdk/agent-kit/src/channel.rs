//! The queue between the threads that produce messages (application threads through the launch
//! buffers, the vendor library's buffer-completion thread) and the agent's sender thread, which
//! writes them to the host socket and/or the dump file. Application threads never write to the
//! socket, and never wait: when the host is gone or the queue holds more than its bound, a chunk
//! is dropped and counted, and the count reaches the host as [`wire::MSG_LOST_BYTES`] when the
//! agent finishes.

use std::collections::VecDeque;
use std::io::Write;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use crate::buffers::{Buffer, Pool};
use crate::wire;

/// One unit of output.
#[derive(Debug)]
pub enum Chunk {
    /// Encoded messages.
    Bytes(Vec<u8>),
    /// A record message: its header (with the record sizes) and the vendor's buffer holding the
    /// records; the buffer goes back to the channel's pool once written.
    Records(Vec<u8>, Buffer),
}

impl Chunk {
    fn len(&self) -> usize {
        match self {
            Chunk::Bytes(b) => b.len(),
            Chunk::Records(h, b) => h.len() + b.valid_bytes().len(),
        }
    }
}

#[derive(Debug, Default)]
struct Queue {
    chunks: VecDeque<Chunk>,
    /// Bytes in `chunks`.
    bytes: usize,
    closed: bool,
    /// Chunks taken by the sender but not yet written.
    in_flight: usize,
}

/// Where the sender thread writes.
#[derive(Debug)]
pub struct Outputs {
    /// Host socket.
    pub socket: Option<UnixStream>,
    /// Dump file.
    pub dump: Option<std::fs::File>,
}

impl Outputs {
    /// Connects to the host's Unix socket at `socket` and/or creates `<prefix>-<pid>.bin` in
    /// directory `dump_dir`. Errors say what failed and what it means for the program.
    pub fn connect(socket: Option<&str>, dump_dir: Option<&str>, prefix: &str) -> Result<Self, String> {
        let socket = match socket {
            Some(p) => Some(UnixStream::connect(p).map_err(|e| {
                format!("cannot reach the xpuprof host at {p} ({e}); tracing is off for this process, which runs unharmed")
            })?),
            None => None,
        };
        let dump = match dump_dir {
            Some(d) => {
                let path = std::path::Path::new(d).join(format!("{prefix}-{}.bin", std::process::id()));
                Some(
                    std::fs::File::create(&path)
                        .map_err(|e| format!("failed to create dump file {}: {e}", path.display()))?,
                )
            }
            None => None,
        };
        Ok(Self { socket, dump })
    }

    /// A second handle on the host connection, for reading the host's commands
    /// ([`crate::control`]); `None` without a socket.
    pub fn control(&self) -> Option<UnixStream> {
        self.socket.as_ref().and_then(|s| s.try_clone().ok())
    }
}

/// The message queue.
#[derive(Debug)]
pub struct Channel {
    name: &'static str,
    q: Mutex<Queue>,
    ready: Condvar,
    idle: Condvar,
    pool: Pool,
    max_queued: usize,
    /// Set when the host went away: producers stop producing.
    pub broken: AtomicBool,
    /// Bytes written.
    pub written: AtomicU64,
    lost_chunks: AtomicU64,
    lost_bytes: AtomicU64,
}

/// Default bound of the queue: output of a stalled host beyond this is dropped and counted.
pub const MAX_QUEUED_BYTES: usize = 1 << 30;

impl Channel {
    /// A channel for agent `name` (used in messages) whose record buffers are `buffer_bytes`.
    pub fn new(name: &'static str, buffer_bytes: usize) -> Self {
        Self::with_bound(name, buffer_bytes, MAX_QUEUED_BYTES)
    }

    /// A channel holding at most `max_queued` bytes not yet written.
    pub fn with_bound(name: &'static str, buffer_bytes: usize, max_queued: usize) -> Self {
        Self {
            name,
            q: Mutex::new(Queue::default()),
            ready: Condvar::new(),
            idle: Condvar::new(),
            pool: Pool::new(buffer_bytes),
            max_queued,
            broken: AtomicBool::new(false),
            written: AtomicU64::new(0),
            lost_chunks: AtomicU64::new(0),
            lost_bytes: AtomicU64::new(0),
        }
    }

    /// The pool of record buffers (for the vendor library's buffer requests).
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// Queues a chunk. Returns false when it was dropped (the channel is closed or broken, or
    /// full); dropped chunks are counted, their buffers go back to the pool.
    pub fn push(&self, c: Chunk) -> bool {
        let refused = if self.broken.load(Ordering::Relaxed) {
            Some(c)
        } else {
            match self.q.lock() {
                Ok(mut q) if !q.closed && q.bytes + c.len() <= self.max_queued.max(c.len()) => {
                    q.bytes += c.len();
                    q.chunks.push_back(c);
                    None
                }
                _ => Some(c),
            }
        };
        match refused {
            None => {
                self.ready.notify_one();
                true
            }
            Some(c) => {
                self.lost_chunks.fetch_add(1, Ordering::Relaxed);
                self.lost_bytes.fetch_add(c.len() as u64, Ordering::Relaxed);
                if let Chunk::Records(_, b) = c {
                    self.pool.put(b);
                }
                false
            }
        }
    }

    /// Chunks and bytes dropped so far.
    pub fn lost(&self) -> (u64, u64) {
        (self.lost_chunks.load(Ordering::Relaxed), self.lost_bytes.load(Ordering::Relaxed))
    }

    /// Appends a [`wire::MSG_LOST_BYTES`] message to `out` when anything was dropped.
    pub fn put_lost(&self, out: &mut Vec<u8>) {
        let (chunks, bytes) = self.lost();
        if chunks > 0 {
            wire::put_message(out, wire::MSG_LOST_BYTES, &[&chunks.to_le_bytes(), &bytes.to_le_bytes()]);
        }
    }

    /// Waits until everything queued so far is written (or `timeout` passes).
    pub fn wait_idle(&self, timeout: Duration) {
        let Ok(q) = self.q.lock() else { return };
        let _ = self.idle.wait_timeout_while(q, timeout, |q| !q.chunks.is_empty() || q.in_flight > 0);
    }

    /// No more chunks after this; the sender exits once the queue is empty.
    pub fn close(&self) {
        if let Ok(mut q) = self.q.lock() {
            q.closed = true;
        }
        self.ready.notify_all();
    }

    /// Opens the channel again after [`Channel::goodbye`], for the next session of an agent that
    /// stays loaded (a later attach): nothing queued, nothing lost so far, not broken. Run a new
    /// sender ([`Channel::run`]) with the new session's outputs.
    pub fn reopen(&self) {
        if let Ok(mut q) = self.q.lock() {
            q.closed = false;
            q.bytes = 0;
            for c in q.chunks.drain(..) {
                if let Chunk::Records(_, b) = c {
                    self.pool.put(b);
                }
            }
        }
        self.broken.store(false, Ordering::Relaxed);
        self.lost_chunks.store(0, Ordering::Relaxed);
        self.lost_bytes.store(0, Ordering::Relaxed);
    }

    /// Ends the stream: queues the losses so far and [`wire::MSG_BYE`] with the agent's totals
    /// (`launches`, `stacks`), closes the channel, waits up to `timeout` for the sender to write
    /// everything, and joins the sender thread.
    pub fn goodbye(
        &self,
        launches: u64,
        stacks: u64,
        sender: Option<std::thread::JoinHandle<()>>,
        timeout: Duration,
    ) {
        let mut m = Vec::new();
        self.put_lost(&mut m);
        wire::put_message(&mut m, wire::MSG_BYE, &[&launches.to_le_bytes(), &stacks.to_le_bytes()]);
        self.push(Chunk::Bytes(m));
        self.close();
        self.wait_idle(timeout);
        if let Some(h) = sender {
            let _ = h.join();
        }
    }

    /// The sender thread's loop. `tick` runs about every 100 ms (periodic launch drain).
    pub fn run(&self, mut out: Outputs, tick: impl Fn()) {
        loop {
            let batch: Vec<Chunk> = {
                let Ok(mut q) = self.q.lock() else { return };
                while q.chunks.is_empty() && !q.closed {
                    let (g, t) = match self.ready.wait_timeout(q, Duration::from_millis(100)) {
                        Ok(x) => x,
                        Err(_) => return,
                    };
                    q = g;
                    if t.timed_out() && !q.closed {
                        drop(q);
                        tick();
                        q = match self.q.lock() {
                            Ok(q) => q,
                            Err(_) => return,
                        };
                    }
                }
                if q.chunks.is_empty() && q.closed {
                    return;
                }
                let b: Vec<Chunk> = q.chunks.drain(..).collect();
                q.bytes = 0;
                q.in_flight = b.len();
                b
            };
            for c in batch {
                match c {
                    Chunk::Bytes(b) => self.write(&mut out, &[&b]),
                    Chunk::Records(h, buf) => {
                        self.write(&mut out, &[&h, buf.valid_bytes()]);
                        self.pool.put(buf);
                    }
                }
            }
            if let Ok(mut q) = self.q.lock() {
                q.in_flight = 0;
            }
            self.idle.notify_all();
        }
    }

    fn write(&self, out: &mut Outputs, parts: &[&[u8]]) {
        let n: usize = parts.iter().map(|p| p.len()).sum();
        if let Some(f) = out.dump.as_mut() {
            for p in parts {
                if f.write_all(p).is_err() {
                    out.dump = None;
                    crate::say(self.name, "failed to write the dump file; dumping stopped");
                    break;
                }
            }
        }
        if let Some(s) = out.socket.as_mut() {
            for p in parts {
                if let Err(e) = s.write_all(p) {
                    out.socket = None;
                    crate::say(
                        self.name,
                        &format!("lost the connection to the xpuprof host ({e}); tracing stopped, the program continues"),
                    );
                    if out.dump.is_none() {
                        self.broken.store(true, Ordering::Relaxed);
                    }
                    break;
                }
            }
        }
        self.written.fetch_add(n as u64, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_in_order_and_counts_what_a_full_queue_drops() {
        let dir = std::env::temp_dir().join(format!("xpuprof-kit-channel-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let ch = Channel::with_bound("test agent", 64, 10);
        assert!(ch.push(Chunk::Bytes(vec![1; 6])));
        assert!(!ch.push(Chunk::Bytes(vec![2; 6])), "over the bound: dropped");
        assert!(ch.push(Chunk::Bytes(vec![3; 4])));
        ch.close();
        assert!(!ch.push(Chunk::Bytes(vec![4])), "closed: dropped");
        let out = Outputs::connect(None, Some(dir.to_str().unwrap()), "t").unwrap();
        ch.run(out, || {});
        let bytes = std::fs::read(dir.join(format!("t-{}.bin", std::process::id()))).unwrap();
        assert_eq!(bytes, [vec![1; 6], vec![3; 4]].concat());
        assert_eq!(ch.lost(), (2, 7));
        let mut m = Vec::new();
        ch.put_lost(&mut m);
        let (msgs, _) = wire::split_messages(&m);
        assert_eq!(msgs[0].ty, wire::MSG_LOST_BYTES);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
