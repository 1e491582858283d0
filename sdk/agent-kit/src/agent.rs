//! What every agent holds beside its vendor's state: the channel to the host, the launch
//! registry with the module ranges the host knows and the clock of launch entries, the code of
//! the profiler itself (left off launch stacks), the sender thread, and the stream's opening
//! and last words. An agent keeps one [`AgentCore`] and adds its vendor's handles.
//!
//! ```ignore
//! let core = AgentCore::new("mygpu agent", config.common.buffer_bytes, own_code);
//! core.hello(&wire::Hello::new(version, flags), &[]);
//! core.start_sender("xpuprof-mygpu-send", outputs, || agent().map_or((), |a| a.core.drain_launches()))?;
//! // ... launch callbacks: core.launches.enter(&core.sites(&config.common), ...) ...
//! core.finish(Duration::from_secs(10)); // at exit
//! ```

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::channel::{Channel, Chunk, Outputs};
use crate::launches::{Registry, Sites};
use crate::modules::Known;
use crate::opts::{Common, StackMode};
use crate::timestamps::Clock;
use crate::wire;

/// The parts every agent shares.
#[derive(Debug)]
pub struct AgentCore {
    /// Output queue.
    pub channel: Arc<Channel>,
    /// Launch buffers (and the Python frames merged into their stacks).
    pub launches: Registry,
    /// Module ranges known to the host.
    pub known: Known,
    /// Converts launch-entry timestamps to the session clock.
    pub clock: Clock,
    /// Code of the profiler itself (the vendor's tracing library, the agent): leading
    /// launch-stack frames inside it are instrumentation and are left out.
    pub own_code: Vec<(u64, u64)>,
    /// Records the vendor library dropped ([`AgentCore::send_dropped`]).
    pub dropped: AtomicU64,
    sender: Mutex<Option<JoinHandle<()>>>,
}

impl AgentCore {
    /// The parts of agent `name` (used in messages) whose record buffers are `buffer_bytes`,
    /// leaving `own_code` off launch stacks.
    pub fn new(name: &'static str, buffer_bytes: usize, own_code: Vec<(u64, u64)>) -> Self {
        Self {
            channel: Arc::new(Channel::new(name, buffer_bytes)),
            launches: Registry::default(),
            known: Known::default(),
            clock: Clock::new(true),
            own_code,
            dropped: AtomicU64::new(0),
            sender: Mutex::new(None),
        }
    }

    /// The launch-site path's view of the settings every agent takes: launch entries are
    /// recorded unless launch stacks are off.
    pub fn sites<'a>(&'a self, common: &Common) -> Sites<'a> {
        self.sites_recording(common, common.stacks != StackMode::Off)
    }

    /// [`AgentCore::sites`] of an agent that records launch entries when `record_entries` says
    /// so, whatever the stacks (the CUPTI agent also records them to time API calls from its
    /// callbacks).
    pub fn sites_recording<'a>(&'a self, common: &Common, record_entries: bool) -> Sites<'a> {
        Sites {
            record_entries,
            stacks: common.stacks.agent_walks(),
            max_depth: common.max_depth,
            own_code: &self.own_code,
            known: &self.known,
        }
    }

    /// Queues the stream's opening: `hello`, the backend's own opening messages (`first`, already
    /// framed), then the module map.
    pub fn hello(&self, hello: &wire::Hello, first: &[u8]) {
        let mut b = Vec::new();
        hello.encode(&mut b);
        b.extend_from_slice(first);
        b.extend_from_slice(&self.known.refresh());
        self.channel.push(Chunk::Bytes(b));
    }

    /// Runs the sender thread `thread` on `outputs`; `tick` runs about every 100 ms (the
    /// periodic launch drain). [`AgentCore::finish`] joins it.
    pub fn start_sender(
        &self,
        thread: &str,
        outputs: Outputs,
        tick: impl Fn() + Send + 'static,
    ) -> Result<(), String> {
        let channel = self.channel.clone();
        let h = std::thread::Builder::new()
            .name(thread.into())
            .spawn(move || channel.run(outputs, tick))
            .map_err(|e| format!("failed to start the sender thread: {e}"))?;
        if let Ok(mut s) = self.sender.lock() {
            *s = Some(h);
        }
        Ok(())
    }

    /// Queues every thread's pending launch sites (and a fresh module map first when a stack
    /// used an address outside the known modules).
    pub fn drain_launches(&self) {
        self.launches.drain_to(&self.channel, &self.known, &self.clock);
    }

    /// Counts `n` records the vendor library dropped and queues the drop report.
    pub fn send_dropped(&self, n: u64) {
        self.dropped.fetch_add(n, Ordering::Relaxed);
        let mut m = Vec::new();
        wire::put_dropped(&mut m, n, xpuprof_sdk::clock::now_ns());
        self.channel.push(Chunk::Bytes(m));
    }

    /// Says on the host why this process is not traced when nothing was sent yet: a hello
    /// naming no runtime, then `msg` as the agent's error; waits up to `timeout` for the sender.
    pub fn refuse(&self, msg: &str, timeout: Duration) {
        let mut b = Vec::new();
        wire::Hello::new(0, 0).encode(&mut b);
        wire::put_message(&mut b, wire::MSG_ERROR, &[msg.as_bytes()]);
        self.channel.push(Chunk::Bytes(b));
        self.channel.close();
        self.channel.wait_idle(timeout);
    }

    /// The last words: the pending launch sites, the Python capture counts, the channel's losses
    /// and the goodbye with the totals; waits up to `timeout` for the sender and joins it.
    /// Returns the launch entries and distinct stacks sent.
    pub fn finish(&self, timeout: Duration) -> (u64, u64) {
        self.drain_launches();
        let mut m = Vec::new();
        self.launches.python.put_counts(&mut m);
        if !m.is_empty() {
            self.channel.push(Chunk::Bytes(m));
        }
        let (launches, stacks) = self.launches.totals();
        let sender = self.sender.lock().ok().and_then(|mut s| s.take());
        self.channel.goodbye(launches, stacks, sender, timeout);
        (launches, stacks)
    }

    /// The summary line of a verbose agent at exit.
    pub fn summary(&self, (launches, stacks): (u64, u64), library: &str) -> String {
        format!(
            "{launches} launch sites, {stacks} distinct stacks, {} bytes sent, {} records dropped by {library}",
            self.channel.written.load(Ordering::Relaxed),
            self.dropped.load(Ordering::Relaxed)
        )
    }
}
