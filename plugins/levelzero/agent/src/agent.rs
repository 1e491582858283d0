//! The agent's Level Zero logic: launch-class calls (their stacks, correlation ids and
//! timestamp events), regular-list bookkeeping (recorded once, one operation per execution),
//! and the reads of device timestamps with loss counting.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use level_zero_sys::*;
use xpuprof_agent_kit::channel::Chunk;
use xpuprof_agent_kit::stack;
use xpuprof_agent_kit::AgentCore;
use xpuprof_levelzero_wire::{api_kind, launch_domain, loss, op_kind, Msg, Op, Writer};

use crate::clock;
use crate::config::Config;
use crate::state::{Pending, Recorded, State};

/// The running agent (set once, by `start`).
pub static AGENT: OnceLock<Agent> = OnceLock::new();

/// The agent, when tracing is on and the call is the application's (not one the agent makes
/// itself, see [`INSIDE`]).
pub fn active() -> Option<&'static Agent> {
    if INSIDE.with(|c| c.get()) {
        return None;
    }
    AGENT.get().filter(|a| !a.stopping())
}

thread_local! {
    /// Set while the agent itself calls Level Zero outside a callback (its reader thread, exit):
    /// those calls are traced too and must not be recorded.
    pub static INSIDE: Cell<bool> = const { Cell::new(false) };
    /// The call between its prologue and epilogue (the tracing layer never nests them).
    static CALL: RefCell<Option<Call>> = const { RefCell::new(None) };
}

/// A traced call between prologue and epilogue.
#[derive(Debug, Clone, Default)]
struct Call {
    name: u32,
    kind: u8,
    start: u64,
    /// A launch-class call's id (its entry is open in the kit's registry); 0 for other calls.
    correlation: u64,
    list: usize,
    queue: usize,
    lists: Vec<usize>,
    /// The timestamp event the work signals.
    event: usize,
    /// `event` is ours, put in place of the application's.
    ours: bool,
    /// The application's event when ours replaced it (it must still be signalled).
    app_event: usize,
    op: Op,
}

/// The agent.
pub struct Agent {
    /// The loader's functions.
    pub ze: ZeLoader,
    /// Channel, launch registry (stacks, Python frames), known modules, clock, own code (the
    /// agent and the tracing layer, left off launch stacks), sender.
    pub core: AgentCore,
    /// Settings.
    pub config: Config,
    /// Bookkeeping.
    pub state: Mutex<State>,
    /// Devices, for clock pairs.
    pub devices: Vec<usize>,
    /// Set at exit: callbacks stop recording.
    pub exiting: AtomicBool,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent").field("devices", &self.devices).finish()
    }
}

impl Agent {
    /// True once the process is exiting.
    pub fn stopping(&self) -> bool {
        self.exiting.load(Ordering::Relaxed)
    }

    /// Sends messages to the host; device work goes after the launch sites recorded so far, so
    /// the host has every launch before the work it caused.
    pub fn send(&self, msgs: &[Msg]) {
        if msgs.is_empty() {
            return;
        }
        if msgs.iter().any(|m| matches!(m, Msg::Op(_))) {
            self.core.drain_launches();
        }
        let mut w = Writer::default();
        msgs.iter().for_each(|m| w.put(m));
        self.core.channel.push(Chunk::Bytes(w.buf));
    }

    /// Locks the bookkeeping.
    pub fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Prologue of a call: its name and start time; for a launch-class call (appends and
    /// executes, `domain` in [`launch_domain`]) a correlation id and the kit's launch entry
    /// with the calling thread's stack. The loader and its tracing layer are built without
    /// frame pointers: the kit's walk goes through them with their CFI.
    #[inline(never)]
    fn begin(&self, st: &mut State, name: &str, kind: u8, domain: Option<u8>, out: &mut Vec<Msg>) -> Call {
        let name = st.intern(name, out);
        let start = clock::mono();
        let correlation = match domain {
            Some(domain) => {
                let id = st.next_id();
                let sites = self.core.sites(&self.config.common);
                let _ = self.core.launches.enter(&sites, domain, name, id as u32, stack::registers());
                id
            }
            None => 0,
        };
        Call { name, kind, start, correlation, ..Default::default() }
    }

    /// The call's API record; a launch-class call's launch entry closes.
    fn api(&self, c: &Call, result: ze_result_t, out: &mut Vec<Msg>) {
        if c.correlation != 0 {
            self.core.launches.exit(result);
        }
        out.push(Msg::Api {
            tid: clock::tid(),
            name: c.name,
            kind: c.kind,
            start: c.start,
            end: clock::mono(),
            correlation: c.correlation,
            result,
        });
    }

    /// Prologue of an append (kernel, copy, fill, barrier) to `list`: gives the work a
    /// timestamp event, the application's when it has timestamps, else one of ours in its place.
    ///
    /// # Safety
    /// `signal` points at the call's signal-event argument in the tracing layer's parameter block.
    pub unsafe fn append_prologue(
        &self,
        name: &str,
        list: usize,
        signal: *mut ze_event_handle_t,
        mut op: Op,
    ) {
        let mut out = Vec::new();
        let mut st = self.lock();
        let kind = match op.kind {
            op_kind::COPY => api_kind::COPY,
            op_kind::FILL => api_kind::MEMSET,
            op_kind::BARRIER => api_kind::SYNC,
            _ => api_kind::LAUNCH,
        };
        let info = st.lists.get(&list).map(|l| (l.context, l.device, l.immediate));
        let recording = info.is_some_and(|(_, _, immediate)| !immediate);
        let domain = if recording { launch_domain::RECORDING } else { launch_domain::CALL };
        let mut c = self.begin(&mut st, name, kind, Some(domain), &mut out);
        // SAFETY: `signal` points at the call's signal-event argument (the tracing layer's copy).
        let app = unsafe { *signal } as usize;
        if let Some((context, device, _)) = info {
            op.device = device as u64;
            op.queue = list as u64;
            if app != 0 && st.ts_events.contains(&app) {
                c.event = app;
            } else {
                match st.pools.take(&self.ze, context) {
                    Ok(ev) => {
                        c.event = ev;
                        c.ours = true;
                        c.app_event = app;
                        // SAFETY: as above; the driver is called with this event instead.
                        unsafe { *signal = ev as ze_event_handle_t };
                    }
                    Err(_) => out.push(Msg::Loss { cause: loss::NO_TIMESTAMP, count: 1 }),
                }
            }
        }
        c.list = list;
        op.correlation = c.correlation;
        c.op = op;
        // Under the lock: a definition (name, stack) reaches the channel before any other
        // thread can use its id.
        self.send(&out);
        drop(st);
        CALL.with(|k| *k.borrow_mut() = Some(c));
    }

    /// Epilogue of an append: the API call, the application's event signalled after ours, and
    /// the work queued for reading (immediate list) or recorded on the list (regular list).
    pub fn append_epilogue(&self, result: ze_result_t) {
        let Some(c) = CALL.with(|k| k.borrow_mut().take()) else { return };
        let mut out = Vec::new();
        self.api(&c, result, &mut out);
        let mut st = self.lock();
        let ok = result == _ze_result_t::ZE_RESULT_SUCCESS;
        if c.ours && c.app_event != 0 && ok {
            let mut wait = c.event as ze_event_handle_t;
            // SAFETY: inside the callback this goes straight to the driver; the list, the
            // application's event and ours are alive.
            let _ =
                unsafe { self.ze.zeCommandListAppendBarrier(c.list as _, c.app_event as _, 1, &mut wait) };
        }
        let immediate = st.lists.get(&c.list).map(|l| l.immediate);
        match (ok && c.event != 0, immediate) {
            (true, Some(true)) => {
                let recycle = c.ours.then_some(c.event);
                st.pending.push(Pending { event: c.event, recycle, list: 0, op: c.op });
            }
            (true, Some(false)) => {
                let mut op = c.op;
                op.recorded = c.correlation;
                op.list = c.list as u64;
                let r = Recorded { event: c.event, ours: c.ours, op };
                st.lists.get_mut(&c.list).expect("checked above").recorded.push(r);
            }
            _ if c.ours => st.pools.give_back(&self.ze, c.event),
            _ => {}
        }
        self.send(&out);
        drop(st);
    }

    /// Prologue of `zeCommandQueueExecuteCommandLists`: the execute is the launch of every
    /// operation on the lists. An execution whose timestamps were not read yet is lost now.
    pub fn execute_prologue(&self, queue: usize, lists: &[usize]) {
        let mut out = Vec::new();
        let mut st = self.lock();
        let name = "zeCommandQueueExecuteCommandLists";
        let mut c = self.begin(&mut st, name, api_kind::LAUNCH, Some(launch_domain::CALL), &mut out);
        let mut lost = 0;
        for l in lists {
            let events: Vec<(usize, bool)> = st
                .lists
                .get(l)
                .map(|l| l.recorded.iter().map(|r| (r.event, r.ours)).collect())
                .unwrap_or_default();
            for (ev, ours) in events {
                if let Some(i) = st.pending.iter().position(|p| p.event == ev) {
                    let p = st.pending.swap_remove(i);
                    match self.try_read(&p) {
                        Some(Some(ts)) => out.push(done(p.op, ts)),
                        Some(None) | None => lost += 1,
                    }
                }
                if ours {
                    // SAFETY: our event, read or given up above; the driver is called directly.
                    let _ = unsafe { self.ze.zeEventHostReset(ev as _) };
                }
            }
        }
        if lost > 0 {
            out.push(Msg::Loss { cause: loss::REEXECUTED, count: lost });
        }
        c.queue = queue;
        c.lists = lists.to_vec();
        self.send(&out);
        drop(st);
        CALL.with(|k| *k.borrow_mut() = Some(c));
    }

    /// Epilogue of an execute: one pending read per recorded operation, under the execute's id.
    pub fn execute_epilogue(&self, result: ze_result_t) {
        let Some(c) = CALL.with(|k| k.borrow_mut().take()) else { return };
        let mut out = Vec::new();
        self.api(&c, result, &mut out);
        if result == _ze_result_t::ZE_RESULT_SUCCESS {
            let mut st = self.lock();
            let mut add = Vec::new();
            for l in &c.lists {
                for r in st.lists.get(l).map(|l| l.recorded.as_slice()).unwrap_or_default() {
                    let mut op = r.op;
                    op.correlation = c.correlation;
                    op.queue = c.queue as u64;
                    add.push(Pending { event: r.event, recycle: None, list: *l, op });
                }
            }
            st.pending.extend(add);
        }
        self.send(&out);
    }

    /// Prologue of any other traced call (host synchronisation).
    pub fn call_prologue(&self, name: &str, kind: u8) {
        let mut out = Vec::new();
        let mut st = self.lock();
        let c = self.begin(&mut st, name, kind, None, &mut out);
        self.send(&out);
        drop(st);
        CALL.with(|k| *k.borrow_mut() = Some(c));
    }

    /// Epilogue of a host synchronisation: the call, then every timestamp that is ready.
    pub fn sync_epilogue(&self, result: ze_result_t) {
        let Some(c) = CALL.with(|k| k.borrow_mut().take()) else { return };
        let mut out = Vec::new();
        self.api(&c, result, &mut out);
        self.read_ready(&mut self.lock(), true, &mut out);
        self.send(&out);
    }

    /// `None`: not ready; `Some(None)`: cannot be read; `Some(Some((start, end)))`: device ticks.
    fn try_read(&self, p: &Pending) -> Option<Option<(u64, u64)>> {
        // SAFETY: `p.event` is alive: events are read before the application or the agent
        // destroys them (event, list and context destroy prologues).
        let status = unsafe { self.ze.zeEventQueryStatus(p.event as _) };
        if status == _ze_result_t::ZE_RESULT_NOT_READY {
            return None;
        }
        let mut r = ze_kernel_timestamp_result_t::default();
        // SAFETY: as above; `r` is a local.
        let rc = unsafe { self.ze.zeEventQueryKernelTimestamp(p.event as _, &mut r) };
        if status != 0 || rc != 0 {
            return Some(None);
        }
        Some(Some((r.global.kernelStart, r.global.kernelEnd)))
    }

    /// Reads every pending operation that is ready. Regular lists are read only at host
    /// synchronisation (`at_sync`), when the last execution is known to be complete.
    pub fn read_ready(&self, st: &mut State, at_sync: bool, out: &mut Vec<Msg>) {
        let mut failed = 0;
        let mut keep = Vec::with_capacity(st.pending.len());
        // In submission order, so every queue's work reaches the host in device order.
        for p in std::mem::take(&mut st.pending) {
            let r = if p.list != 0 && !at_sync { None } else { self.try_read(&p) };
            match r {
                None => keep.push(p),
                Some(r) => {
                    match r {
                        Some(ts) => out.push(done(p.op, ts)),
                        None => failed += 1,
                    }
                    if let Some(ev) = p.recycle {
                        st.pools.give_back(&self.ze, ev);
                    }
                }
            }
        }
        st.pending = keep;
        if failed > 0 {
            out.push(Msg::Loss { cause: loss::NO_TIMESTAMP, count: failed });
        }
    }

    /// Reads what is pending on `event` (the application resets or destroys it).
    pub fn read_event(&self, event: usize) {
        let mut out = Vec::new();
        let mut st = self.lock();
        while let Some(i) = st.pending.iter().position(|p| p.event == event) {
            let p = st.pending.swap_remove(i);
            match self.try_read(&p) {
                Some(Some(ts)) => out.push(done(p.op, ts)),
                _ => out.push(Msg::Loss { cause: loss::NO_TIMESTAMP, count: 1 }),
            }
        }
        self.send(&out);
        drop(st);
    }

    /// Reads what a list has pending and forgets its recording (reset or destroy).
    pub fn close_list(&self, list: usize, destroy: bool) {
        let mut out = Vec::new();
        let mut st = self.lock();
        self.read_ready(&mut st, true, &mut out);
        let before = st.pending.len();
        st.pending.retain(|p| p.list != list);
        let lost = (before - st.pending.len()) as u64;
        if lost > 0 {
            out.push(Msg::Loss { cause: loss::NO_TIMESTAMP, count: lost });
        }
        let recorded = if destroy {
            st.lists.remove(&list).map(|l| l.recorded).unwrap_or_default()
        } else {
            st.lists.get_mut(&list).map(|l| std::mem::take(&mut l.recorded)).unwrap_or_default()
        };
        for r in recorded.iter().filter(|r| r.ours) {
            st.pools.give_back(&self.ze, r.event);
        }
        self.send(&out);
        drop(st);
    }

    /// The application destroys `context`: read everything, then destroy our pools in it.
    pub fn close_context(&self, context: usize) {
        let mut out = Vec::new();
        let mut st = self.lock();
        self.read_ready(&mut st, true, &mut out);
        st.pools.destroy_context(&self.ze, context);
        self.send(&out);
        drop(st);
    }

    /// The reader thread's turn: immediate work that is ready, and clock pairs. Nothing once
    /// the process is exiting (the loader and driver are being torn down).
    pub fn tick(&self, clocks: bool) {
        let mut out = Vec::new();
        let mut st = self.lock();
        if st.stopped {
            return;
        }
        self.read_ready(&mut st, false, &mut out);
        if clocks {
            crate::devices::clock_pairs(&self.ze, &self.devices, &mut out);
        }
        self.send(&out);
        drop(st);
    }

    /// At exit: everything that can still be read, what cannot as lost, a last clock pair,
    /// then the kit's last words.
    pub fn finish(&self) {
        self.exiting.store(true, Ordering::Relaxed);
        let mut out = Vec::new();
        let mut st = self.lock();
        if std::mem::replace(&mut st.stopped, true) {
            return;
        }
        self.read_ready(&mut st, true, &mut out);
        if !st.pending.is_empty() {
            out.push(Msg::Loss { cause: loss::UNREAD_AT_EXIT, count: st.pending.len() as u64 });
            st.pending.clear();
        }
        crate::devices::clock_pairs(&self.ze, &self.devices, &mut out);
        self.send(&out);
        drop(st);
        self.core.finish(Duration::from_secs(2));
    }
}

/// The finished operation.
fn done(mut op: Op, (start, end): (u64, u64)) -> Msg {
    op.start = start;
    op.end = end;
    Msg::Op(op)
}

/// The kind of work and its launch details.
pub fn kernel_op(st: &State, kernel: usize, groups: Option<[u32; 3]>) -> Op {
    let k = st.kernels.get(&kernel).copied().unwrap_or_default();
    Op {
        kind: op_kind::KERNEL,
        name: k.name,
        groups: groups.unwrap_or_default(),
        group_size: k.group_size,
        ..Default::default()
    }
}
