//! CPU samples: hot functions (self and total time) and the recent-sample ring used to name the
//! CPU stack active before a device idle gap.
//!
//! Samples are aggregated per stack id while recording (memory grows with distinct stacks, not
//! with samples); stacks are expanded into functions once, at the end. A function's *self* time
//! is the weight of samples whose innermost frame (after expanding inlined functions) is that
//! function; its *total* time is the weight of samples with the function anywhere in the stack,
//! counted once per sample even when it recurses.

use std::collections::{HashMap, HashSet};

use xpuprof_sdk::hash::IdMap;

use xpuprof_sdk::model::{CpuSample, SampleKind, StackId};

use crate::defs::Defs;

/// Samples kept to look up the CPU stack before a device idle gap.
pub const RING_CAPACITY: usize = 65_536;

/// A CPU sample as remembered for idle gaps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SampleRef {
    /// Process.
    pub pid: u32,
    /// Thread.
    pub tid: u32,
    /// Sample time.
    pub time: u64,
    /// Stack.
    pub stack: StackId,
}

/// The most recent samples, oldest overwritten first.
#[derive(Debug, Default)]
pub struct SampleRing {
    buf: Vec<SampleRef>,
    next: usize,
}

impl SampleRing {
    /// Remembers a sample.
    #[inline]
    pub fn push(&mut self, s: SampleRef) {
        if self.buf.len() < RING_CAPACITY {
            self.buf.push(s);
        } else {
            self.buf[self.next] = s;
            self.next = (self.next + 1) % RING_CAPACITY;
        }
    }

    /// The latest remembered sample taken at or before `t`.
    pub fn latest_at_or_before(&self, t: u64) -> Option<SampleRef> {
        self.buf.iter().filter(|s| s.time <= t).max_by_key(|s| (s.time, s.pid, s.tid)).copied()
    }
}

/// Weight and count of samples of one kind.
#[derive(Debug, Default)]
pub struct CpuProfile {
    by_stack: IdMap<StackId, (u64, u64)>,
    /// Samples.
    pub samples: u64,
    /// Sum of weights, ns.
    pub weight: u64,
}

/// One row of the hot-function table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HotFunction {
    /// Function name.
    pub name: String,
    /// Weight where it was the innermost function, ns.
    pub self_ns: u64,
    /// Weight where it was on the stack, ns.
    pub total_ns: u64,
    /// Samples with it innermost.
    pub self_samples: u64,
}

impl CpuProfile {
    #[inline]
    fn add(&mut self, stack: StackId, weight: u64) {
        let e = self.by_stack.entry(stack).or_insert((0, 0));
        e.0 += weight;
        e.1 += 1;
        self.samples += 1;
        self.weight += weight;
    }

    /// Functions by self time, then total time, then name.
    pub fn hot_functions(&self, defs: &Defs) -> Vec<HotFunction> {
        let mut rows: HashMap<String, HotFunction> = HashMap::new();
        for (stack, &(weight, count)) in &self.by_stack {
            let mut names = defs.stack_names(*stack);
            if names.is_empty() {
                names.push("[unknown stack]".to_owned());
            }
            let mut seen = HashSet::new();
            for (i, name) in names.into_iter().enumerate() {
                let first = seen.insert(name.clone());
                let row = rows.entry(name.clone()).or_insert_with(|| HotFunction {
                    name,
                    self_ns: 0,
                    total_ns: 0,
                    self_samples: 0,
                });
                if i == 0 {
                    row.self_ns += weight;
                    row.self_samples += count;
                }
                if first {
                    row.total_ns += weight;
                }
            }
        }
        let mut rows: Vec<HotFunction> = rows.into_values().collect();
        rows.sort_by(|a, b| {
            (b.self_ns, b.total_ns).cmp(&(a.self_ns, a.total_ns)).then_with(|| a.name.cmp(&b.name))
        });
        rows
    }
}

/// On- and off-CPU profiles plus the recent-sample ring.
#[derive(Debug, Default)]
pub struct CpuAgg {
    /// On-CPU samples (weight = sampling period).
    pub on_cpu: CpuProfile,
    /// Off-CPU samples (weight = blocked time).
    pub off_cpu: CpuProfile,
    /// Recent samples for idle-gap attribution.
    pub ring: SampleRing,
}

impl CpuAgg {
    /// Adds a sample; returns what the idle-gap lists should be offered.
    #[inline]
    pub fn add(&mut self, s: &CpuSample) -> SampleRef {
        match s.kind {
            SampleKind::OffCpu => self.off_cpu.add(s.stack, s.weight),
            _ => self.on_cpu.add(s.stack, s.weight),
        }
        let r = SampleRef { pid: s.pid, tid: s.tid, time: s.time, stack: s.stack };
        self.ring.push(r);
        r
    }
}
