//! CPU samples: hot functions (self and total time), xpuprof's own share, and the index used to
//! name the CPU stack active before a device idle gap.
//!
//! Samples are aggregated per stack id while recording (memory grows with distinct stacks, not
//! with samples); stacks are expanded into functions once, at the end. A function's *self* time
//! is the weight of samples whose innermost frame (after expanding inlined functions) is that
//! function; its *total* time is the weight of samples with the function anywhere in the stack,
//! counted once per sample even when it recurses. A sample in xpuprof's own code (an agent in
//! the target, [`crate::own_code`]) has its frames from the leaf through the agent's outermost
//! one replaced by `[xpuprof]`: its self time is xpuprof's, its callers' total time still holds it.

use std::collections::{HashMap, HashSet};

use xpuprof_sdk::hash::{IdMap, IdSet};

use xpuprof_sdk::model::{CpuSample, SampleKind, StackId};

use crate::defs::Defs;
use crate::frames::Stack;
use crate::python::UserCode;
use crate::samples::{SampleIndex, SampleRef};

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

    /// Samples and weight of the stacks that hold xpuprof's own code.
    pub fn own_cost(&self, defs: &Defs) -> (u64, u64) {
        let user = UserCode::default();
        self.by_stack
            .iter()
            .filter(|(stack, _)| Stack::read(defs, &user, **stack).has_own())
            .fold((0, 0), |(n, w), (_, &(weight, count))| (n + count, w + weight))
    }

    /// The stacks that hold xpuprof's own code, added to `own`.
    fn own_stacks(&self, defs: &Defs, own: &mut IdSet<StackId>) {
        let user = UserCode::default();
        own.extend(self.by_stack.keys().filter(|&&stack| Stack::read(defs, &user, stack).has_own()));
    }

    /// Functions by self time, then total time, then name.
    pub fn hot_functions(&self, defs: &Defs) -> Vec<HotFunction> {
        let user = UserCode::default();
        let mut rows: HashMap<String, HotFunction> = HashMap::new();
        for (stack, &(weight, count)) in &self.by_stack {
            let mut names = Stack::read(defs, &user, *stack).names_own_collapsed();
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

/// On- and off-CPU profiles plus the samples kept for idle gaps.
#[derive(Debug, Default)]
pub struct CpuAgg {
    /// On-CPU samples (weight = sampling period).
    pub on_cpu: CpuProfile,
    /// Off-CPU samples (weight = blocked time).
    pub off_cpu: CpuProfile,
    /// Samples by time, for idle-gap attribution.
    pub index: SampleIndex,
}

impl CpuAgg {
    /// Adds a sample.
    #[inline]
    pub fn add(&mut self, s: &CpuSample) {
        match s.kind {
            SampleKind::OffCpu => self.off_cpu.add(s.stack, s.weight),
            _ => self.on_cpu.add(s.stack, s.weight),
        }
        self.index.push(SampleRef { time: s.time, pid: s.pid, tid: s.tid, stack: s.stack });
    }

    /// Readies the sample index for look-ups: sorted, and told which stacks are xpuprof's own
    /// cost (passed over when naming the user's CPU before a time).
    pub fn finish_index(&mut self, defs: &Defs) {
        let mut own = IdSet::default();
        self.on_cpu.own_stacks(defs, &mut own);
        self.off_cpu.own_stacks(defs, &mut own);
        self.index.finish(own);
    }
}
