//! Compile-time work in the timeline: device work whose launch stack (or, for work run from a
//! recording, the recording's stack) holds the compile marker frame ([`COMPILE_MARKER`], put
//! there by the source) gets the category `<kind>,compile` (`kernel,compile`), so a viewer
//! filters it apart from the steady state.

use xpuprof_sdk::hash::IdMap;
use xpuprof_sdk::model::{DeviceOp, StackId};
use xpuprof_toolbox::agent_host::COMPILE_MARKER;
use xpuprof_toolbox::defs::Definitions;

/// Which stacks hold the marker, looked at once each.
#[derive(Debug, Default)]
pub struct CompileStacks {
    seen: IdMap<StackId, bool>,
}

impl CompileStacks {
    /// True when `op` is compile-time work.
    pub fn is_compile(&mut self, defs: &Definitions, op: &DeviceOp) -> bool {
        let stack = op.recorded.filter(|r| !r.stack.is_none()).or(op.launch).map(|l| l.stack);
        let Some(stack) = stack.filter(|s| !s.is_none()) else { return false };
        *self.seen.entry(stack).or_insert_with(|| {
            defs.stack(stack)
                .unwrap_or(&[])
                .iter()
                .any(|f| defs.frame(*f).and_then(|f| defs.str(f.name)).is_some_and(|n| n == COMPILE_MARKER))
        })
    }
}

/// The category of compile-time work of category `cat`.
pub fn category(cat: &'static str) -> &'static str {
    match cat {
        "kernel" => "kernel,compile",
        "memcpy" => "memcpy,compile",
        "memset" => "memset,compile",
        _ => "compile",
    }
}
