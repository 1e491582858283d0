//! The queue between the threads that produce messages (application threads via the launch
//! buffers, CUPTI's buffer-completion thread) and the agent's sender thread, which writes them
//! to the host socket and/or the dump file. Application threads never write to the socket.

use std::collections::VecDeque;
use std::io::Write;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use crate::buffers::Buffer;

/// One unit of output.
#[derive(Debug)]
pub enum Chunk {
    /// Encoded messages.
    Bytes(Vec<u8>),
    /// An activity message: its header (with the record sizes) and CUPTI's buffer holding the
    /// records; the buffer goes back to the pool once written.
    Activity(Vec<u8>, Buffer),
}

#[derive(Debug, Default)]
struct Queue {
    chunks: VecDeque<Chunk>,
    closed: bool,
    /// Chunks taken by the sender but not yet written.
    in_flight: usize,
}

/// Output sinks of the sender thread.
#[derive(Debug)]
pub struct Outputs {
    /// Host socket.
    pub socket: Option<UnixStream>,
    /// Dump file.
    pub dump: Option<std::fs::File>,
}

/// The message queue.
#[derive(Debug, Default)]
pub struct Channel {
    q: Mutex<Queue>,
    ready: Condvar,
    idle: Condvar,
    /// Set when the host went away: producers stop producing.
    pub broken: AtomicBool,
    /// Bytes written.
    pub written: AtomicU64,
}

impl Channel {
    /// Queues a chunk (dropped when the channel is closed or broken).
    pub fn push(&self, c: Chunk) {
        if self.broken.load(Ordering::Relaxed) {
            return;
        }
        let Ok(mut q) = self.q.lock() else { return };
        if q.closed {
            return;
        }
        q.chunks.push_back(c);
        drop(q);
        self.ready.notify_one();
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

    /// The sender thread's loop. `tick` runs about every 100 ms (periodic launch drain).
    pub fn run(&self, mut out: Outputs, pool: &crate::buffers::Pool, tick: impl Fn()) {
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
                q.in_flight = b.len();
                b
            };
            for c in batch {
                match c {
                    Chunk::Bytes(b) => self.write(&mut out, &[&b]),
                    Chunk::Activity(h, buf) => {
                        self.write(&mut out, &[&h, buf.valid_bytes()]);
                        pool.put(buf);
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
                    crate::say("failed to write the dump file; dumping stopped");
                    break;
                }
            }
        }
        if let Some(s) = out.socket.as_mut() {
            for p in parts {
                if let Err(e) = s.write_all(p) {
                    out.socket = None;
                    crate::say(&format!("lost the connection to the xpuprof host ({e}); tracing stopped, the program continues"));
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
