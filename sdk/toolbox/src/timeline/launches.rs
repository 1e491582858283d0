//! The launch stack of each API slice: an API call and the stack of its launch arrive as two
//! records (`ApiCall`, `LaunchSite`) in either order, and device work joined to the call carries
//! the stack too (`DeviceOp.launch`). A call with a correlation id is held until its stack is
//! known (its launch site, or device work joined to it, arrives), and written then with its
//! stack (Perfetto's `callstack_iid`, the Trace Event format's `sf`); a stack that arrives first waits for its call. Calls whose kind launches
//! nothing (synchronisations, queries) are written at once.
//!
//! Both waits are bounded: at most [`HELD_CALLS`] calls are held (the oldest is then written
//! without a stack: most calls that are not launches never get one) and at most [`KEPT_SITES`]
//! stacks wait for their call (the oldest is then forgotten and counted). Memory stays bounded
//! whatever the run's length.

use std::collections::VecDeque;

use xpuprof_sdk::hash::IdMap;
use xpuprof_sdk::model::*;

/// Calls held for their stack at most; past this the oldest is written without one.
pub const HELD_CALLS: usize = 4096;
/// Stacks that wait for their call at most; past this the oldest is forgotten.
pub const KEPT_SITES: usize = 65_536;

/// A launch's correlation key: process, backend, correlation id.
type Key = (u32, u32, u64);

fn key(pid: u32, c: Correlation) -> Key {
    (pid, c.backend, c.id)
}

/// A held call: its key, the next held call of the same key (a call nested in another with
/// the same correlation id), and whether it is still waiting.
#[derive(Debug)]
struct Slot {
    key: Key,
    call: ApiCall,
    next: Option<u64>,
    waiting: bool,
}

/// API calls and launch stacks waiting for each other. Held calls live in a queue in arrival
/// order (a slot stays, no longer waiting, once its call is written: no allocation per call).
#[derive(Debug, Default)]
pub struct Launches {
    held: VecDeque<Slot>,
    /// Arrival number of `held[0]`.
    base: u64,
    /// First and last held call of each key waiting.
    waiting: IdMap<Key, (u64, u64)>,
    sites: IdMap<Key, StackId>,
    sites_order: VecDeque<Key>,
    /// Stacks forgotten before their call came.
    pub sites_forgotten: u64,
    /// Calls written without a stack because the window was full.
    pub calls_without_stack: u64,
}

/// What to write: API calls, each with the stack of its launch (or [`StackId::NONE`]).
pub type Ready = Vec<(ApiCall, StackId)>;

impl Launches {
    /// API call `c`: ready now (with its stack) when it has none to wait for or its stack came
    /// first, else held; a full window makes the oldest held calls ready without a stack.
    pub fn call(&mut self, c: &ApiCall, ready: &mut Ready) {
        // Waits and queries never launch anything: no stack to wait for.
        let corr = match c.correlation {
            Some(corr) if !matches!(c.kind, ApiKind::Sync | ApiKind::Other) => corr,
            _ => {
                ready.push((c.clone(), StackId::NONE));
                return;
            }
        };
        let k = key(c.pid, corr);
        if let Some(stack) = self.sites.remove(&k) {
            ready.push((c.clone(), stack));
            return;
        }
        let n = self.base + self.held.len() as u64;
        match self.waiting.get_mut(&k) {
            Some((_, last)) => {
                let at = (*last - self.base) as usize;
                self.held[at].next = Some(n);
                *last = n;
            }
            None => {
                self.waiting.insert(k, (n, n));
            }
        }
        self.held.push_back(Slot { key: k, call: c.clone(), next: None, waiting: true });
        while self.held.len() > HELD_CALLS {
            if self.held[0].waiting {
                let old = self.held[0].key;
                let before = ready.len();
                self.release(old, StackId::NONE, ready);
                self.calls_without_stack += (ready.len() - before) as u64;
            }
            self.held.pop_front();
            self.base += 1;
        }
    }

    /// Makes the calls waiting for `k` ready with `stack`; false when none waits.
    fn release(&mut self, k: Key, stack: StackId, ready: &mut Ready) -> bool {
        let Some((first, _)) = self.waiting.remove(&k) else { return false };
        let mut next = Some(first);
        while let Some(n) = next {
            let slot = &mut self.held[(n - self.base) as usize];
            slot.waiting = false;
            ready.push((slot.call.clone(), stack));
            next = slot.next;
        }
        true
    }

    /// The stack `stack` of the launch `(pid, corr)` (a launch site, or device work joined to
    /// its call): the calls held for it are ready; with `keep`, a stack that came before its
    /// call waits for it.
    pub fn stack(&mut self, pid: u32, corr: Correlation, stack: StackId, keep: bool, ready: &mut Ready) {
        let k = key(pid, corr);
        if self.release(k, stack, ready) {
            return;
        }
        if !keep || stack.is_none() || self.sites.insert(k, stack).is_some() {
            return;
        }
        self.sites_order.push_back(k);
        while self.sites.len() > KEPT_SITES {
            let Some(old) = self.sites_order.pop_front() else { break };
            if self.sites.remove(&old).is_some() {
                self.sites_forgotten += 1;
            }
        }
        // Keys taken by their call stay in the queue: drop them once it is much longer than
        // the map, so it stays bounded too.
        if self.sites_order.len() > 2 * KEPT_SITES {
            self.sites_order.retain(|k| self.sites.contains_key(k));
        }
    }

    /// Every call still held, oldest first, without a stack (the end of the trace).
    pub fn drain(&mut self, ready: &mut Ready) {
        for slot in self.held.drain(..) {
            if slot.waiting {
                ready.push((slot.call, StackId::NONE));
            }
        }
        self.base = 0;
        self.waiting.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(corr: u64) -> ApiCall {
        ApiCall::default().pid(1).tid(1).correlation(Some(Correlation { backend: 1, id: corr }))
    }

    fn c(id: u64) -> Correlation {
        Correlation { backend: 1, id }
    }

    #[test]
    fn a_call_waits_for_its_stack_and_a_stack_for_its_call() {
        let mut l = Launches::default();
        let mut ready = Ready::new();
        l.call(&call(1), &mut ready);
        assert!(ready.is_empty(), "held");
        l.stack(1, c(1), StackId(7), true, &mut ready);
        assert_eq!(ready.pop().map(|(c, s)| (c.correlation, s)), Some((Some(c(1)), StackId(7))));
        l.stack(1, c(2), StackId(8), true, &mut ready);
        l.call(&call(2), &mut ready);
        assert_eq!(ready.pop().map(|(_, s)| s), Some(StackId(8)), "the stack came first");
        l.call(&ApiCall::default(), &mut ready);
        assert_eq!(ready.pop().map(|(_, s)| s), Some(StackId::NONE), "no correlation: no wait");
        l.call(&call(3).kind(ApiKind::Sync), &mut ready);
        assert_eq!(ready.len(), 1, "a synchronisation launches nothing: no wait");
        ready.clear();
        // A call nested in another with the same correlation id: both wait, both get the stack.
        l.call(&call(4), &mut ready);
        l.call(&call(4), &mut ready);
        l.stack(1, c(4), StackId(9), true, &mut ready);
        assert_eq!(ready.iter().map(|(_, s)| *s).collect::<Vec<_>>(), [StackId(9), StackId(9)]);
    }

    #[test]
    fn the_window_is_bounded_and_its_overflow_counted() {
        let mut l = Launches::default();
        let mut ready = Ready::new();
        for i in 0..HELD_CALLS as u64 + 10 {
            l.call(&call(i + 1), &mut ready);
        }
        assert_eq!(ready.len(), 10);
        assert_eq!(l.calls_without_stack, 10);
        assert_eq!(ready[0].0.correlation, Some(c(1)), "oldest first");
        ready.clear();
        l.drain(&mut ready);
        assert_eq!(ready.len(), HELD_CALLS);
    }
}
