//! Launch sites, recorded on application threads at the entry of launch-class APIs (the agent's
//! API-entry callback calls [`Registry::enter`], its API-exit callback [`Registry::exit`]).
//!
//! Per launch the calling thread reads the clock, walks its stack into a fixed array, hashes
//! it, and writes a 40-byte entry (plus the stack itself the first time this thread sees it)
//! into a thread-local scratch buffer; no lock and no shared cache line is touched at entry. At
//! the outermost call's exit it fills in the exit time and result and moves the scratch into the
//! thread's shared buffer under that buffer's lock, once per launch. Shared buffers are drained
//! by the buffer-completion thread right before it queues device records, so a launch site
//! reaches the host before the device work it caused (except when a buffer completes while the
//! launch call is still returning; the host waits up to 2 s for a late launch site), and by the
//! sender thread every 100 ms.
//!
//! With [`Registry::python`] on, the launching thread's Python frames replace the eval-loop
//! frames of its native stack before the stack is hashed; their definitions go out at the front
//! of each drain, before any stack that uses them.

use std::cell::RefCell;
use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::annotations::Annotations;
use crate::detail;
use crate::python::PythonFrames;
use crate::reuse::{self, Buffers, ThreadCounts};
use crate::stack::{self, Bounds, Registers};
use crate::timestamps as stamp;
use crate::wire;

/// Stacks are already hashed: use the hash as is.
#[derive(Default)]
struct Identity(u64);

impl Hasher for Identity {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, _: &[u8]) {
        unreachable!("only u64 keys")
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

type StackSet = HashSet<u64, BuildHasherDefault<Identity>>;

/// A thread's launch buffer, shared with the drainers.
#[derive(Debug)]
struct Shared {
    tid: u32,
    bytes: Vec<u8>,
    /// Launch entries and distinct stacks this thread published.
    launches: u64,
    stacks: u64,
}

/// Per-thread state.
struct Local {
    shared: Arc<Mutex<Shared>>,
    seen: StackSet,
    bounds: Bounds,
    /// Launch-class calls active on this thread (an inner driver call inside a runtime call).
    depth: u32,
    /// The registry's epoch when the outermost active call entered.
    epoch: u32,
    /// The session whose host `seen` stacks were sent to ([`Registry::new_session`]).
    session: u32,
    last_stack: u64,
    /// Correlation id of the outermost active call.
    outer_id: u32,
    /// Entries of the active outermost call (its stack when new, its launch entry, entries of
    /// nested calls with their own correlation id), published at its exit.
    scratch: Vec<u8>,
    /// Where the outermost call's launch entry sits in `scratch`.
    outer_at: usize,
    /// The stack walk's buffers and the launch's stack, reused (not zeroed again).
    bufs: Buffers,
    launches: u64,
    stacks: u64,
    /// What reusing the previous launch's stack did on this thread ([`crate::reuse`]).
    reuse: Arc<ThreadCounts>,
    /// Timed entries ([`detail::TIMED`]).
    timing: Arc<detail::Timing>,
}

thread_local! {
    static LOCAL: RefCell<Option<Local>> = const { RefCell::new(None) };
}

impl Local {
    /// At the outermost call's exit: records its exit time and result in its entry and
    /// publishes the call's entries to the thread's shared buffer.
    fn publish(&mut self, result: u32, exit_time: u64) {
        let at = self.outer_at;
        if self.scratch.len() >= at + wire::LAUNCH_ENTRY_BYTES {
            self.scratch[at + 12..at + 16].copy_from_slice(&result.to_le_bytes());
            self.scratch[at + 32..at + 40].copy_from_slice(&exit_time.to_le_bytes());
        }
        if let Ok(mut sh) = self.shared.lock() {
            sh.bytes.extend_from_slice(&self.scratch);
            sh.launches = self.launches;
            sh.stacks = self.stacks;
        }
        self.scratch.clear();
    }

    /// Closes an outermost call left open across a pause ([`Registry::new_epoch`]): its exit
    /// was not seen, so its exit time is its entry time and its result reads as success.
    fn settle_if_stale(&mut self, epoch: u32) {
        if self.depth == 0 || self.epoch == epoch {
            return;
        }
        self.depth = 0;
        if self.scratch.is_empty() {
            return;
        }
        let at = self.outer_at;
        let entered =
            self.scratch.get(at + 16..at + 24).and_then(|b| b.try_into().ok()).map_or(0, u64::from_le_bytes);
        self.publish(0, entered);
    }
}

/// Every thread's buffer.
#[derive(Debug, Default)]
pub struct Registry {
    threads: Mutex<Vec<Arc<Mutex<Shared>>>>,
    /// Totals of threads that ended and were drained: launch entries, distinct stacks.
    retired: (AtomicU64, AtomicU64),
    /// Python frames in the stacks (off until the agent turns them on).
    pub python: PythonFrames,
    /// Annotation frames the agent pushes on its threads ([`crate::annotations`]).
    pub annotations: Annotations,
    /// Bumped when the agent pauses its callbacks ([`Registry::new_epoch`]).
    epoch: AtomicU32,
    /// Bumped when the agent connects to a new host ([`Registry::new_session`]).
    session: AtomicU32,
}

/// The most frames a stack keeps, whatever the agent's `max_depth` asks.
const MAX_FRAMES: usize = wire::MAX_STACK_FRAMES;

/// What the launch-site path needs from the agent's settings.
#[derive(Debug, Clone, Copy)]
pub struct Sites<'a> {
    /// Launch entries are recorded at all (agent stacks, or API calls from callbacks).
    pub record_entries: bool,
    /// The agent walks the stack.
    pub stacks: bool,
    /// Most frames per stack.
    pub max_depth: usize,
    /// Code of the profiler itself: leading frames inside it are left out.
    pub own_code: &'a [(u64, u64)],
    /// Module ranges known to the host.
    pub known: &'a crate::modules::Known,
}

impl Registry {
    fn local(&self) -> Local {
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::syscall(libc::SYS_gettid) } as u32;
        let shared = Arc::new(Mutex::new(Shared {
            tid,
            bytes: Vec::with_capacity(64 * 1024),
            launches: 0,
            stacks: 0,
        }));
        if let Ok(mut t) = self.threads.lock() {
            t.push(shared.clone());
        }
        Local {
            shared,
            seen: StackSet::default(),
            bounds: stack::thread_bounds(),
            depth: 0,
            epoch: 0,
            session: self.session.load(Ordering::Relaxed),
            last_stack: 0,
            outer_id: 0,
            scratch: Vec::with_capacity(1024),
            outer_at: 0,
            bufs: Buffers::new(),
            launches: 0,
            stacks: 0,
            reuse: ThreadCounts::register(),
            timing: detail::Timing::register(),
        }
    }

    /// API entry. `regs` are the registers in the agent's callback ([`stack::registers`]).
    /// Returns, for the outermost launch-class call on the thread (the one that gets a stack),
    /// the registers where the application's side of its stack starts (the first frame outside
    /// `sites.own_code`), for [`crate::trampoline::call`]; `None` for a nested call.
    pub fn enter(
        &self,
        sites: &Sites<'_>,
        domain: u8,
        cbid: u32,
        correlation: u32,
        regs: Registers,
    ) -> Option<Registers> {
        if !sites.record_entries {
            return self.enter_untracked(sites, regs);
        }
        let time = stamp::raw();
        let epoch = self.epoch.load(Ordering::Relaxed);
        LOCAL.with(|cell| {
            let mut cell = cell.borrow_mut();
            let l = cell.get_or_insert_with(|| self.local());
            l.settle_if_stale(epoch);
            let session = self.session.load(Ordering::Relaxed);
            if l.session != session {
                // A new host knows none of this thread's stacks.
                l.seen.clear();
                l.session = session;
            }
            let nested = l.depth > 0;
            l.depth += 1;
            if nested && correlation == l.outer_id {
                // The driver call inside a runtime call shares its correlation id: the outer
                // launch site already stands for it.
                return None;
            }
            let mut key = if nested { l.last_stack } else { 0 };
            let mut start = None;
            let mut frames_n = 0;
            let flags = detail::level();
            let level = flags & !detail::TIMED;
            let stacked = !nested && sites.stacks && level > detail::ENTRIES;
            if stacked {
                let depth = sites.max_depth.min(MAX_FRAMES);
                let mode = reuse::mode();
                let python = (level == detail::FULL).then_some(&self.python);
                let timed = flags & detail::TIMED != 0;
                let (n, first) =
                    l.bufs.capture(mode, regs, l.bounds, sites.own_code, python, depth, &l.reuse, timed);
                start = first;
                let n = self.annotations.decorate(&mut l.bufs.merged[..depth], n);
                let frames = &l.bufs.merged[..n];
                frames_n = n;
                key = stack::hash(frames);
                if l.seen.len() > 1 << 16 {
                    l.seen.clear();
                }
                if l.seen.insert(key) {
                    sites.known.check(frames);
                    wire::launches::put_stack(&mut l.scratch, key, frames);
                    l.stacks += 1;
                }
                l.last_stack = key;
            }
            if !nested {
                l.outer_id = correlation;
                l.outer_at = l.scratch.len();
                l.epoch = epoch;
            }
            put_launch(&mut l.scratch, domain, cbid, correlation, time, key, nested);
            l.launches += 1;
            if nested {
                return None;
            }
            if flags & detail::TIMED != 0 {
                let walked = if stacked { l.bufs.walked.wrapping_sub(time) } else { 0 };
                let merged = if stacked { l.bufs.merged_at.wrapping_sub(l.bufs.walked) } else { 0 };
                let engine = stacked && crate::python::on_engine_thread();
                l.timing.add(stamp::raw().wrapping_sub(time), walked, merged, frames_n as u64, engine);
            }
            Some(start.unwrap_or_else(|| caller_side(regs, l.bounds, sites.own_code)))
        })
    }

    /// API entry when the agent records no launch sites (the eBPF source does): only the
    /// nesting depth is tracked, so the trampoline fires once per outermost call, with the
    /// caller-side start of the stack.
    fn enter_untracked(&self, sites: &Sites<'_>, regs: Registers) -> Option<Registers> {
        LOCAL.with(|cell| {
            let mut cell = cell.borrow_mut();
            let l = cell.get_or_insert_with(|| self.local());
            let epoch = self.epoch.load(Ordering::Relaxed);
            l.settle_if_stale(epoch);
            l.depth += 1;
            if l.depth == 1 {
                l.epoch = epoch;
            }
            (l.depth == 1).then(|| caller_side(regs, l.bounds, sites.own_code))
        })
    }

    /// The calling thread's Python frames now (innermost first; none where Python frames are
    /// off or the thread runs no Python), for [`Annotations::enter_compile`]: no native walk, so
    /// it is safe wherever the thread is (inside a marker callback). Allocates.
    pub fn python_stack(&self) -> Vec<u64> {
        match self.python.interpreter() {
            Some(py) => py.with_capture(|frames| frames.iter().map(|&(id, _)| id).collect()),
            None => Vec::new(),
        }
    }

    /// API exit: closes the nesting level; at the outermost call's exit, records its exit time
    /// and result in its entry and publishes the call's entries to the thread's shared buffer.
    pub fn exit(&self, result: u32) {
        LOCAL.with(|cell| {
            let mut cell = cell.borrow_mut();
            let Some(l) = cell.as_mut() else { return };
            l.depth = l.depth.saturating_sub(1);
            if l.depth > 0 || l.scratch.is_empty() {
                return;
            }
            let time = stamp::raw();
            l.publish(result, time);
        });
    }

    /// API exit of a call whose entry this thread did not see: the callbacks were turned on
    /// while the call was inside the driver (a window opening, an attach), yet the call's
    /// device work is recorded. Records the call now, from the exit callback's registers (the
    /// call has not returned, so the application's frames are those of its entry), its entry
    /// time being when the exit callback came, and returns true; false when an entry is open (or the
    /// call is the runtime call around a driver call already recorded under the same
    /// correlation id): then the ordinary [`Registry::exit`] applies.
    pub fn exit_unentered(
        &self,
        sites: &Sites<'_>,
        domain: u8,
        cbid: u32,
        correlation: u32,
        regs: Registers,
        result: u32,
    ) -> bool {
        if !sites.record_entries {
            return false;
        }
        let unentered = LOCAL.with(|cell| match cell.borrow().as_ref() {
            Some(l) => l.depth == 0 && l.outer_id != correlation,
            None => true,
        });
        if unentered {
            self.enter(sites, domain, cbid, correlation, regs);
            self.exit(result);
        }
        unentered
    }

    /// Starts a new epoch: called when the agent turns its callbacks off, after which an API
    /// call that entered before may never see its exit callback. A thread whose outermost call
    /// entered in an earlier epoch and is still open at its next entry publishes that call
    /// (with its entry time as its exit time) and starts afresh, instead of counting every
    /// later call as nested in it.
    pub fn new_epoch(&self) {
        self.epoch.fetch_add(1, Ordering::Relaxed);
    }

    /// Starts a session with a new host (an agent attached again after a detach): a new epoch,
    /// and every stack and Python frame is sent again before its next use, since the new host
    /// has seen none of them. Entries still pending belong to the previous session: drain them
    /// into its channel first.
    pub fn new_session(&self) {
        self.new_epoch();
        self.session.fetch_add(1, Ordering::Relaxed);
        self.python.resend_all();
        self.annotations.resend_all();
    }

    /// Takes every thread's pending entries as `MSG_LAUNCHES` messages appended to `out`, their
    /// timestamps converted to session-clock nanoseconds by `clock`.
    pub fn drain(&self, out: &mut Vec<u8>, clock: &stamp::Clock) {
        // Python frame definitions first: every stack taken below was made after its frames'.
        self.python.put_definitions(out);
        self.annotations.put_definitions(out);
        let mut ranges = Vec::new();
        if let Ok(mut threads) = self.threads.lock() {
            threads.retain(|t| {
                let live = Arc::strong_count(t) > 1;
                if let Ok(mut sh) = t.lock() {
                    if !sh.bytes.is_empty() {
                        let at = wire::begin_message(out, wire::MSG_LAUNCHES);
                        out.extend_from_slice(&sh.tid.to_le_bytes());
                        out.extend_from_slice(&0u32.to_le_bytes());
                        ranges.push(out.len()..out.len() + sh.bytes.len());
                        out.extend_from_slice(&sh.bytes);
                        wire::end_message(out, at);
                        sh.bytes.clear();
                    }
                    if !live {
                        self.retired.0.fetch_add(sh.launches, Ordering::Relaxed);
                        self.retired.1.fetch_add(sh.stacks, Ordering::Relaxed);
                    }
                }
                // Keep live threads; a finished thread's buffer is dropped once drained.
                live
            });
        }
        // Every entry taken was stamped before this pair: conversion only interpolates.
        clock.calibrate();
        for r in ranges {
            clock.convert_entries(&mut out[r]);
        }
    }

    /// Queues every thread's pending entries on `channel` as one chunk, preceded by a fresh module
    /// map when a stack used an address outside the modules `known` to the host (the periodic
    /// drain of the sender thread and the drain before device records, for every agent).
    pub fn drain_to(
        &self,
        channel: &crate::channel::Channel,
        known: &crate::modules::Known,
        clock: &stamp::Clock,
    ) {
        let mut out = Vec::new();
        self.drain(&mut out, clock);
        if known.take_stale() {
            let mut m = known.refresh();
            m.extend_from_slice(&out);
            out = m;
        }
        if !out.is_empty() {
            channel.push(crate::channel::Chunk::Bytes(out));
        }
    }

    /// Launch entries and distinct stacks published so far, all threads.
    pub fn totals(&self) -> (u64, u64) {
        let mut launches = self.retired.0.load(Ordering::Relaxed);
        let mut stacks = self.retired.1.load(Ordering::Relaxed);
        if let Ok(threads) = self.threads.lock() {
            for t in threads.iter() {
                if let Ok(sh) = t.lock() {
                    launches += sh.launches;
                    stacks += sh.stacks;
                }
            }
        }
        (launches, stacks)
    }
}

/// The registers of the first frame outside `own_code` (the walk stops there); `regs` itself
/// when the walk finds none.
fn caller_side(regs: Registers, bounds: Bounds, own_code: &[(u64, u64)]) -> Registers {
    let mut one = [0u64; 1];
    stack::walk(regs, bounds, own_code, &mut one).1.unwrap_or(regs)
}

fn put_launch(b: &mut Vec<u8>, domain: u8, cbid: u32, corr: u32, time: u64, stack: u64, nested: bool) {
    let flags = if nested { wire::LAUNCH_NESTED } else { 0 };
    let mut e = [0u8; wire::LAUNCH_ENTRY_BYTES];
    e[0] = wire::ENTRY_LAUNCH;
    e[1] = domain;
    e[2..4].copy_from_slice(&flags.to_le_bytes());
    e[4..8].copy_from_slice(&cbid.to_le_bytes());
    e[8..12].copy_from_slice(&corr.to_le_bytes());
    e[16..24].copy_from_slice(&time.to_le_bytes());
    e[24..32].copy_from_slice(&stack.to_le_bytes());
    b.extend_from_slice(&e);
}
