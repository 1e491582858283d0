//! Flow ids from a launch's API slice to the device work it caused, made from the correlation
//! key (backend, process, correlation id) so both ends know the id without a table: `slot << 36
//! | correlation id`, `slot` numbering the (backend, process) pairs in order of appearance (0 for
//! the first, so a one-process trace's ids are its correlation ids). An id stays below 2^53 (JSON
//! viewers read numbers as doubles) and is never 0 (catapult ignores a `bind_id` of 0). A key
//! that does not fit (a correlation id of 2^36 or more, past 131,072 processes) gets no flow and
//! is counted.
//!
//! Both timeline formats bind a flow to slices, the API slice starting it and each device slice
//! ending it without closing it, so a graph launch has one arrow per kernel from one call: the
//! Trace Event format's flow events v2 (`bind_id` with `flow_out` / `flow_in`) and Perfetto's
//! `TrackEvent.legacy_event` (`bind_id` with `FLOW_OUT` / `FLOW_IN`; trace processor's
//! `FlowTracker::Begin` and `End(close_flow = false)`; `terminating_flow_ids` would close the
//! flow at the first kernel).
//!
//! An id starts one flow only: trace processor keeps a flow id's start for the whole trace (a
//! second start is an import error, `flow_duplicate_id`, and later ends would bind to the first
//! start). A correlation id used again by a later call of its process (a test source's fixed
//! ids; a backend's 32-bit ids after four billion calls) therefore starts none, and the device
//! work joined to it ends none, counted like the above. Device work ends a flow only where its
//! id started, so every end has its start in the trace. Which ids started is kept as one bit per
//! id, in pages of 4,096 ids (512 bytes), so memory grows by about one bit per launch.

use xpuprof_sdk::hash::{IdMap, IdSet};
use xpuprof_sdk::model::Correlation;

/// Bits of the correlation id in a flow id.
const ID_BITS: u32 = 36;
/// Bits of the (backend, process) slot: 36 + 17 = 53.
const SLOT_BITS: u32 = 17;

/// Flow ids of the trace.
#[derive(Debug, Default)]
pub struct Flows {
    slots: IdMap<(u32, u32), u64>,
    /// The last (backend, pid) looked up and its slot (traces mostly come from one process).
    last: Option<((u32, u32), u64)>,
    /// The flow ids that started an arrow: bit `id % 4096` of page `id / 4096`, the pages in
    /// `pages` at the index `page_index` gives.
    page_index: IdMap<u64, usize>,
    pages: Vec<[u64; 64]>,
    /// The page looked up last and its index (consecutive ids share a page).
    last_page: Option<(u64, usize)>,
    /// Flow ids whose correlation id came again on a later call: no arrow starts or ends there.
    reused: IdSet<u64>,
    /// Launch ends that got no flow id (see the module docs).
    pub not_drawn: u64,
}

impl Flows {
    /// The flow id of correlation `c` in process `pid`, or `None` (counted) when it does not fit.
    #[inline]
    pub fn id(&mut self, pid: u32, c: Correlation) -> Option<u64> {
        let key = (c.backend, pid);
        let slot = match self.last {
            Some((k, slot)) if k == key => slot,
            _ => {
                let next = self.slots.len() as u64;
                let slot = *self.slots.entry(key).or_insert(next);
                self.last = Some((key, slot));
                slot
            }
        };
        if c.id == 0 || c.id >> ID_BITS != 0 || slot >> SLOT_BITS != 0 {
            self.not_drawn += 1;
            return None;
        }
        Some(slot << ID_BITS | c.id)
    }

    /// Whether flow id `id` (from [`Flows::id`]) may start an arrow at an API call: not when it
    /// already started one (counted, and the id is not used again).
    pub fn start(&mut self, id: u64) -> Option<u64> {
        let key = id >> 12;
        let index = match self.last_page {
            Some((k, i)) if k == key => i,
            _ => {
                let next = self.pages.len();
                let i = *self.page_index.entry(key).or_insert(next);
                if i == next {
                    self.pages.push([0; 64]);
                }
                self.last_page = Some((key, i));
                i
            }
        };
        let page = &mut self.pages[index];
        let (word, bit) = ((id >> 6 & 63) as usize, 1u64 << (id & 63));
        if page[word] & bit != 0 {
            self.reused.insert(id);
            self.not_drawn += 1;
            return None;
        }
        page[word] |= bit;
        Some(id)
    }

    /// Whether flow id `id` started a flow.
    pub fn started(&self, id: u64) -> bool {
        let Some(&index) = self.page_index.get(&(id >> 12)) else { return false };
        self.pages[index][(id >> 6 & 63) as usize] & (1u64 << (id & 63)) != 0
    }

    /// When device work joined to correlation `c` of process `pid` arrives: the flow id it may
    /// end, or `None` (counted) when the id does not fit or its correlation id was used again.
    /// Whether it ends a flow is decided where it is placed ([`Flows::end`]): its call may come
    /// after it.
    #[inline]
    pub fn end_id(&mut self, pid: u32, c: Correlation) -> Option<u64> {
        let id = self.id(pid, c)?;
        if !self.reused.is_empty() && self.reused.contains(&id) {
            self.not_drawn += 1;
            return None;
        }
        Some(id)
    }

    /// Where device work with flow id `id` (from [`Flows::end_id`]) is placed: `id` when its
    /// flow started, else `None` (counted: its call is not in the trace).
    #[inline]
    pub fn end(&mut self, id: Option<u64>) -> Option<u64> {
        let id = id?;
        if self.started(id) {
            return Some(id);
        }
        self.not_drawn += 1;
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn corr(backend: u32, id: u64) -> Correlation {
        Correlation { backend, id }
    }

    #[test]
    fn the_first_process_keeps_its_correlation_ids_and_others_get_their_own_range() {
        let mut f = Flows::default();
        assert_eq!(f.id(10, corr(1, 7)), Some(7));
        assert_eq!(f.id(11, corr(1, 7)), Some(1 << 36 | 7));
        assert_eq!(f.id(10, corr(2, 7)), Some(2 << 36 | 7), "another backend of the same process");
        assert_eq!(f.id(10, corr(1, 8)), Some(8));
        assert_eq!(f.id(11, corr(1, 8)), Some(1 << 36 | 8));
        assert_eq!(f.not_drawn, 0);
    }

    #[test]
    fn an_id_starts_one_arrow_and_a_reused_one_none() {
        let mut f = Flows::default();
        let start = |f: &mut Flows, pid, id| f.id(pid, corr(1, id)).and_then(|id| f.start(id));
        assert_eq!(start(&mut f, 10, 7), Some(7));
        assert_eq!(f.end_id(10, corr(1, 7)).and_then(|id| f.end(Some(id))), Some(7));
        assert_eq!(start(&mut f, 10, 4096 + 7), Some(4096 + 7), "another page");
        assert_eq!(start(&mut f, 11, 7), Some(1 << 36 | 7), "another process");
        assert_eq!(start(&mut f, 10, 7), None, "a later call with the same id");
        assert_eq!(f.end_id(10, corr(1, 7)), None, "and its work");
        assert_eq!(f.end_id(11, corr(1, 7)).and_then(|id| f.end(Some(id))), Some(1 << 36 | 7));
        assert_eq!(f.not_drawn, 2);
        let unstarted = f.end_id(12, corr(1, 7));
        assert_eq!(f.end(unstarted), None, "work whose call never came ends no flow");
        assert_eq!(f.not_drawn, 3);
    }

    #[test]
    fn ids_that_do_not_fit_are_counted_not_drawn() {
        let mut f = Flows::default();
        assert_eq!(f.id(10, corr(1, 0)), None, "0 is no id");
        assert_eq!(f.id(10, corr(1, 1 << 36)), None);
        assert_eq!(f.id(10, corr(1, (1 << 36) - 1)), Some((1 << 36) - 1));
        for pid in 11..(11 + (1 << 17) - 1) {
            f.id(pid, corr(1, 1)).expect("a slot");
        }
        assert_eq!(f.id(5, corr(1, 1)), None, "past 2^17 processes");
        assert_eq!(f.not_drawn, 3);
        assert!(f.id(10 + (1 << 17) - 1, corr(1, (1 << 36) - 1)).unwrap() < 1 << 53);
    }
}
