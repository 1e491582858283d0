//! The trace's `stackFrames` dictionary: the Trace Event format's stacks, a tree of frames each
//! naming its parent, that events point into with `"sf":N` (their innermost frame). API calls
//! carry their launch's stack this way and CPU samples their sampled stack; catapult and
//! Perfetto's JSON importer read both. A frame with inlined functions is one node per function,
//! outermost first, as in the other sinks; xpuprof's own code in the target (its agents:
//! [`xpuprof_toolbox::own_code`]) goes under one `[xpuprof]` node above its outermost frame.
//! Nodes are made once per distinct call path and written
//! at the end of the file (the dictionary is a key of the top-level object, beside
//! `traceEvents`), so memory grows with distinct stacks, not with time.

use xpuprof_sdk::hash::IdMap;
use xpuprof_sdk::model::*;
use xpuprof_toolbox::own_code::{is_own_frame, OWN_FRAME};

use crate::json::{quoted, Push};
use crate::names::Names;

/// The nodes of `stackFrames`, numbered from 1.
#[derive(Debug, Default)]
pub struct StackFrames {
    /// Node of each (parent node, frame, function index in the frame).
    nodes: IdMap<(u64, FrameId, u32), u64>,
    /// Parent node (0: none) and JSON-quoted name of each node.
    entries: Vec<(u64, String)>,
    /// The innermost node of each stack.
    leaves: IdMap<StackId, u64>,
}

impl StackFrames {
    /// The node of the innermost frame of `stack`, made the first time; `None` when the stack
    /// is not defined or has no frames.
    pub fn leaf(&mut self, stack: StackId, names: &Names) -> Option<u64> {
        if let Some(&n) = self.leaves.get(&stack) {
            return Some(n);
        }
        let defs = names.defs();
        let frames = defs.stack(stack)?;
        let own =
            frames.iter().rev().find(|&&f| defs.frame(f).is_some_and(|d| is_own_frame(defs, d))).copied();
        let mut parent = 0;
        for &f in frames.iter().rev() {
            if own == Some(f) {
                parent = self.node(parent, (f, u32::MAX), OWN_FRAME);
            }
            let functions = function_names(f, names);
            for (i, name) in functions.iter().enumerate() {
                parent = self.node(parent, (f, i as u32), name);
            }
        }
        (parent != 0).then(|| {
            self.leaves.insert(stack, parent);
            parent
        })
    }

    /// The node of function `at` (frame, function index in it) named `name` under `parent`,
    /// made the first time.
    fn node(&mut self, parent: u64, at: (FrameId, u32), name: &str) -> u64 {
        let k = (parent, at.0, at.1);
        if let Some(&n) = self.nodes.get(&k) {
            return n;
        }
        self.entries.push((parent, quoted(name)));
        let n = self.entries.len() as u64;
        self.nodes.insert(k, n);
        n
    }

    /// Whether a node was made.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Appends `"stackFrames":{"1":{"name":"main"},"2":{"name":"f","parent":"1"},...}`.
    pub fn write(&self, l: &mut Vec<u8>) {
        l.s(r#""stackFrames":{"#);
        for (i, (parent, name)) in self.entries.iter().enumerate() {
            if i > 0 {
                l.s(",\n");
            }
            l.s("\"").n(i as u64 + 1).s(r#"":{"name":"#).s(name);
            if *parent != 0 {
                l.s(r#","parent":""#).n(*parent).s("\"");
            }
            l.s("}");
        }
        l.s("}");
    }
}

/// The functions of frame `f`, outermost first: its own, then those inlined into it; an
/// unsymbolized frame is `module+0xoffset`.
fn function_names(f: FrameId, names: &Names) -> Vec<String> {
    let defs = names.defs();
    let Some(d) = defs.frame(f) else { return vec!["[unknown frame]".to_owned()] };
    let own = defs.str(d.name).map(str::to_owned).unwrap_or_else(|| {
        let module = defs.module_path(d.module).unwrap_or("[unknown module]");
        format!("{}+{:#x}", module.rsplit('/').next().unwrap_or(module), d.address)
    });
    let mut out = vec![own];
    out.extend(d.inlined.iter().map(|s| defs.str(*s).unwrap_or("[unknown inlined]").to_owned()));
    out
}
