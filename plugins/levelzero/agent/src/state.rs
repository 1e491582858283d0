//! What the agent remembers about the application's Level Zero objects: lists (and the work
//! recorded on regular lists), kernels, queues, timestamp pools, names.

use std::collections::{HashMap, HashSet};

use xpuprof_levelzero_wire::{Msg, Op};

use crate::events::Pools;

/// A command list.
#[derive(Debug, Default)]
pub struct List {
    /// Its context (our timestamp events must come from it).
    pub context: usize,
    /// Its device.
    pub device: usize,
    /// Immediate lists run at append.
    pub immediate: bool,
    /// Work appended to a regular list, in order.
    pub recorded: Vec<Recorded>,
}

/// One operation appended to a regular list.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// The event that gives its timestamps.
    pub event: usize,
    /// The event is ours (reset before every execution), not the application's.
    pub ours: bool,
    /// The operation, with `recorded` = the append's correlation id.
    pub op: Op,
}

/// Work submitted whose timestamps have not been read yet.
#[derive(Debug, Clone)]
pub struct Pending {
    /// The timestamp event.
    pub event: usize,
    /// Our event from an immediate append: back to the free list once read.
    pub recycle: Option<usize>,
    /// The regular list it belongs to (0: immediate).
    pub list: usize,
    /// The operation (correlation, queue and device filled).
    pub op: Op,
}

/// A kernel.
#[derive(Debug, Clone, Copy, Default)]
pub struct Kernel {
    /// Name string id.
    pub name: u32,
    /// Work-group size.
    pub group_size: [u32; 3],
}

/// Everything, behind the agent's one lock.
#[derive(Debug, Default)]
pub struct State {
    next_id: u64,
    strings: HashMap<String, u32>,
    /// Application event pools created with timestamps.
    pub ts_pools: HashSet<usize>,
    /// Application events of such pools.
    pub ts_events: HashSet<usize>,
    /// Command lists.
    pub lists: HashMap<usize, List>,
    /// Kernels.
    pub kernels: HashMap<usize, Kernel>,
    /// Command queue → device.
    pub queues: HashMap<usize, usize>,
    /// Our timestamp events.
    pub pools: Pools,
    /// Submitted work not read yet.
    pub pending: Vec<Pending>,
    /// The process is exiting: the agent no longer calls Level Zero.
    pub stopped: bool,
}

impl State {
    /// A new correlation id (Level Zero has none: the agent makes them).
    pub fn next_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// The id of `text`, sending its definition the first time.
    pub fn intern(&mut self, text: &str, out: &mut Vec<Msg>) -> u32 {
        if let Some(&id) = self.strings.get(text) {
            return id;
        }
        let id = self.strings.len() as u32 + 1;
        self.strings.insert(text.to_string(), id);
        out.push(Msg::Str { id, text: text.to_string() });
        id
    }
}
