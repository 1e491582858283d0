//! The stack agreement check: the same launch's stack captured by two sources (an agent and a
//! CPU-sampling source's trampoline probe) must be the same once the leaf frames only one
//! capture path sees are left out.

use xpuprof_sdk::model::StackId;

use super::SessionState;

/// Launches whose stack two sources captured, and whether the stacks agreed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Agreement {
    /// Launches with stacks from two sources.
    pub compared: u64,
    /// Of those, with identical stacks (frames inside the agent left out), compared up to the
    /// depth both stacks reached.
    pub agreed: u64,
    /// Compared pairs whose depths differed (one capture path stopped earlier).
    pub depth_limited: u64,
    /// Compared pairs where one stack had extra leaf frames the other capture path did not see
    /// (the instrumentation itself: agent, vendor tracing library, trampoline; or the dynamic
    /// loader on a first call), skipped before comparing.
    pub loader_leaf_skipped: u64,
    /// Compared pairs where a stack carried interpreter (Python) frames: compared on the native
    /// frames before them (the other capture path shows the interpreter's native frames there).
    pub native_only: u64,
    /// The first pair that differed (innermost first), for diagnosis.
    pub first_disagreement: Option<(Vec<String>, Vec<String>)>,
}

/// Most leaf frames one capture path may see beyond the other (the instrumentation's own frames:
/// agent callback, vendor tracing library, trampoline; a loader frame on a first call).
const MAX_LEAF_SKIP: usize = 16;

/// Drops the fewest leading (leaf) frames of `a`, at most [`MAX_LEAF_SKIP`], after which `a`
/// starts at the same frame as `b`. Returns whether it dropped any. No module is named: the two
/// paths differ only in the leaf frames of whatever captured the stack, whoever's they are.
fn skip_loader_leaf(a: &mut Vec<String>, b: &[String]) -> bool {
    let Some(first) = b.first() else { return false };
    if a.first() == Some(first) {
        return false;
    }
    match a.iter().take(MAX_LEAF_SKIP + 1).skip(1).position(|f| f == first) {
        Some(n) => {
            a.drain(..=n);
            true
        }
        None => false,
    }
}

impl SessionState {
    /// The agreement check: the same launch's stack from two sources (an agent and a
    /// CPU-sampling source's trampoline probe) must be the same once the leaf frames only one path sees are left out.
    pub(super) fn compare_stacks(&mut self, first: StackId, second: StackId) {
        let (mut a, a_py) = self.globals.comparable_stack(first);
        let (mut b, b_py) = self.globals.comparable_stack(second);
        if a_py || b_py {
            self.agreement.native_only += 1;
        }
        // A walk may see leaf frames the other misses (the instrumentation's own frames, the
        // dynamic loader on a first call); align past such frames only.
        if skip_loader_leaf(&mut a, &b) || skip_loader_leaf(&mut b, &a) {
            self.agreement.loader_leaf_skipped += 1;
        }
        // The capture paths have different depth limits: compare the depth both reached.
        let depth = a.len().min(b.len());
        if a.len() != b.len() {
            self.agreement.depth_limited += 1;
        }
        a.truncate(depth);
        b.truncate(depth);
        self.agreement.compared += 1;
        if a == b {
            self.agreement.agreed += 1;
        } else if self.agreement.first_disagreement.is_none() {
            self.agreement.first_disagreement = Some((a, b));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::skip_loader_leaf;

    fn v(x: &[&str]) -> Vec<String> {
        x.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn leaf_frames_one_path_saw_are_skipped_only_when_they_align() {
        let mut a =
            v(&["/opt/x/libxpuprof_agent.so+0x1", "/lib/libtool.so+0x2", "/lib/librt.so+0x10", "/app+0x20"]);
        assert!(skip_loader_leaf(&mut a, &v(&["/lib/librt.so+0x10", "/app+0x20"])));
        assert_eq!(a, v(&["/lib/librt.so+0x10", "/app+0x20"]));
        // Already aligned: nothing to skip.
        assert!(!skip_loader_leaf(&mut a, &v(&["/lib/librt.so+0x10"])));
        // Frames that do not lead to the other stack's leaf are kept, and so is a disagreement.
        let mut c = v(&["/lib/librt.so+0x5", "/app+0x1"]);
        assert!(!skip_loader_leaf(&mut c, &v(&["/app+0x2"])));
        assert_eq!(c.len(), 2);
        let mut d = v(&["launch", "main"]);
        assert!(!skip_loader_leaf(&mut d, &v(&["other", "main"])));
    }
}
