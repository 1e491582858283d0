//! Definition tables: what the ids in events refer to.

use xpuprof_sdk::hash;

use xpuprof_sdk::model::*;

/// Ids below this are stored in a vector; the host numbers definitions densely from 1.
const DENSE_LIMIT: u32 = 1 << 24;

/// A map from `u32` ids to values: a vector for dense ids, a hash map for stray large ones.
#[derive(Debug)]
pub(crate) struct IdMap<T> {
    dense: Vec<Option<T>>,
    sparse: hash::IdMap<u32, T>,
}

impl<T> Default for IdMap<T> {
    fn default() -> Self {
        Self { dense: Vec::new(), sparse: hash::IdMap::default() }
    }
}

impl<T> IdMap<T> {
    /// Stores `value` under `id`, replacing an earlier value.
    pub(crate) fn insert(&mut self, id: u32, value: T) {
        if id < DENSE_LIMIT {
            let i = id as usize;
            if i >= self.dense.len() {
                self.dense.resize_with(i + 1, || None);
            }
            self.dense[i] = Some(value);
        } else {
            self.sparse.insert(id, value);
        }
    }

    /// The value stored under `id`.
    pub(crate) fn get(&self, id: u32) -> Option<&T> {
        if id < DENSE_LIMIT {
            self.dense.get(id as usize).and_then(Option::as_ref)
        } else {
            self.sparse.get(&id)
        }
    }
}

/// Everything the folded view needs to turn ids into text.
#[derive(Debug, Default)]
pub(crate) struct Defs {
    pub(crate) strings: IdMap<String>,
    pub(crate) processes: hash::IdMap<u32, StrId>,
    pub(crate) devices: IdMap<u32>,
    pub(crate) streams: IdMap<u64>,
    pub(crate) modules: IdMap<StrId>,
    pub(crate) frames: IdMap<FrameDef>,
    pub(crate) stacks: IdMap<Vec<FrameId>>,
}

impl Defs {
    /// Records a definition; returns false for events.
    pub(crate) fn add(&mut self, r: &Record) -> bool {
        match r {
            Record::Str(d) => self.strings.insert(d.id.0, d.text.clone()),
            Record::Process(d) => {
                self.processes.insert(d.pid, d.command);
            }
            Record::Device(d) => self.devices.insert(d.id.0, d.index),
            Record::Stream(d) => self.streams.insert(d.id.0, d.native_id),
            Record::Module(d) => self.modules.insert(d.id.0, d.path),
            Record::Frame(d) => self.frames.insert(d.id.0, d.clone()),
            Record::Stack(d) => self.stacks.insert(d.id.0, d.frames.clone()),
            Record::Thread(_) => {}
            _ => return false,
        }
        true
    }

    /// The text of string `id`, or `None` for [`StrId::NONE`] and unknown ids.
    pub(crate) fn str(&self, id: StrId) -> Option<&str> {
        if id.is_none() {
            return None;
        }
        self.strings.get(id.0).map(String::as_str)
    }
}
