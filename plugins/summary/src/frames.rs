//! A stack read for people: each frame classified (native, xpuprof's own, Python user or library
//! code, the autograd marker), and the forms the tables show.
//!
//! Tables show a stack **innermost user frame first**: where a stack has a Python frame of the
//! user's code ([`crate::python::UserCode`]), from that frame outward through the user's frames
//! only (the interpreter, the framework and `nn.Module` call plumbing between them left out);
//! a Python stack without user code from its innermost Python frame; a native stack from the
//! caller of the API function. CPU stacks keep their leaf in front (what the CPU was doing),
//! then the user's frames. xpuprof's own frames become one [`OWN_FRAME`] frame.

use xpuprof_sdk::model::{StackId, StrId};

use crate::defs::Defs;
use crate::own_code::{self, OWN_FRAME};
use crate::python::{self, PyFrame, UserCode, AUTOGRAD_MARKER};
use xpuprof_toolbox::python_frame::short_path;

/// What a frame is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Native code of the program or its libraries.
    Native,
    /// xpuprof's own code (an agent).
    Own,
    /// A Python frame; `user` when it is the user's code.
    Python {
        /// The user's code.
        user: bool,
    },
    /// The frame between an autograd engine thread's stack and the backward() it ran for.
    AutogradMarker,
}

/// One frame (an inlined function is a frame of its own).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// Its name as the report shows it in full.
    pub name: String,
    /// What it is.
    pub kind: Kind,
}

impl Frame {
    /// The Python frame's parts.
    pub fn python(&self) -> Option<PyFrame<'_>> {
        matches!(self.kind, Kind::Python { .. }).then(|| PyFrame::parse(&self.name)).flatten()
    }

    /// The name tables show: a Python frame with its file shortened.
    pub fn shown(&self) -> String {
        self.python().map_or_else(|| self.name.clone(), |p| python::label(&p))
    }
}

/// A stack's frames, innermost first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stack {
    /// The frames.
    pub frames: Vec<Frame>,
}

impl Stack {
    /// Reads stack `id`.
    pub fn read(defs: &Defs, user: &UserCode, id: StackId) -> Self {
        let mut frames = Vec::new();
        for &f in defs.stack_frames(id) {
            let own = defs.frame_def(f).is_some_and(|d| own_code::is_own_frame(defs.definitions(), d));
            for name in defs.frame_names(f).into_iter().rev() {
                let kind = if own {
                    Kind::Own
                } else if name == AUTOGRAD_MARKER {
                    Kind::AutogradMarker
                } else if defs.is_named_frame(f) {
                    match PyFrame::parse(&name) {
                        Some(p) => Kind::Python { user: user.is_user(p.file) },
                        None => Kind::Native,
                    }
                } else {
                    Kind::Native
                };
                frames.push(Frame { name, kind });
            }
        }
        Self { frames }
    }

    /// True when a frame is xpuprof's own code.
    pub fn has_own(&self) -> bool {
        self.frames.iter().any(|f| f.kind == Kind::Own)
    }

    /// True when a frame is a Python frame.
    pub fn has_python(&self) -> bool {
        self.frames.iter().any(|f| matches!(f.kind, Kind::Python { .. }))
    }

    /// The frame names with everything from the leaf through the outermost frame of xpuprof's
    /// own code replaced by [`OWN_FRAME`]: what the profiler did, and where it was called from.
    pub fn names_own_collapsed(&self) -> Vec<String> {
        match self.frames.iter().rposition(|f| f.kind == Kind::Own) {
            Some(i) => std::iter::once(OWN_FRAME.to_owned())
                .chain(self.frames[i + 1..].iter().map(|f| f.name.clone()))
                .collect(),
            None => self.frames.iter().map(|f| f.name.clone()).collect(),
        }
    }

    /// The innermost frame of the user's Python code.
    pub fn innermost_user(&self) -> Option<&Frame> {
        self.frames.iter().find(|f| f.kind == Kind::Python { user: true })
    }

    /// The launch (or allocation) stack as tables show it, innermost user frame first (see the
    /// module docs); `api` is the launching function, whose frame and those inside it are left
    /// out of a native stack.
    pub fn user_first(&self, defs: &Defs, api: StrId) -> Vec<String> {
        if let Some(i) = self.frames.iter().position(|f| f.kind == Kind::Python { user: true }) {
            return self.frames[i..]
                .iter()
                .filter(|f| f.kind == Kind::Python { user: true })
                .map(Frame::shown)
                .collect();
        }
        if let Some(i) = self.frames.iter().position(|f| matches!(f.kind, Kind::Python { .. })) {
            return self.frames[i..].iter().filter(|f| f.python().is_some()).map(Frame::shown).collect();
        }
        let api = defs.str(api);
        let start = self.frames.iter().position(|f| !api.is_empty() && f.name == api).map_or(0, |i| i + 1);
        self.frames[start..].iter().map(|f| f.name.clone()).collect()
    }

    /// A CPU sample's stack as tables show it: xpuprof's own code collapsed, the leaf kept, then
    /// (when the stack has user Python frames further out) `…` and the user's frames.
    pub fn cpu_view(&self) -> Vec<String> {
        let names = self.names_own_collapsed();
        let Some(first_user) = self.frames.iter().position(|f| f.kind == Kind::Python { user: true }) else {
            return names;
        };
        let own_end = self.frames.iter().rposition(|f| f.kind == Kind::Own).map_or(0, |i| i + 1);
        let leaf = names.first().cloned().unwrap_or_default();
        let users =
            self.frames[first_user.max(own_end)..].iter().filter(|f| f.kind == Kind::Python { user: true });
        let mut out = vec![leaf];
        if first_user > own_end.max(1) {
            out.push("…".to_owned());
        }
        out.extend(users.map(Frame::shown));
        if first_user == 0 {
            out.remove(0);
        }
        out
    }

    /// The innermost `forward` of an `nn.Module` (class, file), class empty where the interpreter
    /// does not name it.
    pub fn innermost_module(&self) -> Option<(String, String)> {
        self.modules().next()
    }

    /// Every `nn.Module` `forward` on the stack (class, file), innermost first.
    pub fn modules(&self) -> impl Iterator<Item = (String, String)> + '_ {
        self.frames.iter().filter_map(|f| {
            let p = f.python()?;
            Some((p.module_class()?.to_owned(), short_path(p.file).to_owned()))
        })
    }

    /// True when the stack runs for a backward pass: it holds the autograd marker (an engine
    /// thread's launch attributed to its `backward()` call) or a Python frame entering the
    /// autograd engine.
    pub fn is_backward(&self) -> bool {
        self.frames
            .iter()
            .any(|f| f.kind == Kind::AutogradMarker || f.python().is_some_and(|p| p.is_backward_entry()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stack(frames: &[(&str, Kind)]) -> Stack {
        Stack { frames: frames.iter().map(|(n, k)| Frame { name: (*n).to_owned(), kind: *k }).collect() }
    }

    const USER: Kind = Kind::Python { user: true };
    const LIB: Kind = Kind::Python { user: false };

    #[test]
    fn own_frames_collapse_into_one_with_their_callers_kept() {
        let s = stack(&[
            ("process_vm_readv", Kind::Native),
            ("xpuprof_python::capture_backward_caller", Kind::Own),
            ("xpuprof_agent_kit::enter", Kind::Own),
            ("acmeLaunchKernel", Kind::Native),
            ("step (train.py:9)", USER),
        ]);
        assert_eq!(s.names_own_collapsed(), ["[xpuprof]", "acmeLaunchKernel", "step (train.py:9)"]);
        assert_eq!(s.cpu_view(), ["[xpuprof]", "…", "step (train.py:9)"]);
    }

    #[test]
    fn cpu_views_keep_the_leaf_then_the_users_frames() {
        let s = stack(&[
            ("acmeStreamSynchronize", Kind::Native),
            ("item (/v/site-packages/torch/_tensor.py:10)", LIB),
            ("step (train.py:9)", USER),
            ("PyObject_Call", Kind::Native),
            ("main (train.py:20)", USER),
        ]);
        assert_eq!(s.cpu_view(), ["acmeStreamSynchronize", "…", "step (train.py:9)", "main (train.py:20)"]);
        let leaf_is_user = stack(&[("step (train.py:9)", USER), ("main (train.py:20)", USER)]);
        assert_eq!(leaf_is_user.cpu_view(), ["step (train.py:9)", "main (train.py:20)"]);
    }
}
