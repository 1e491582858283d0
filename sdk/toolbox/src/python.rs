//! The host side of Python frames: the `python = "auto" | "off"` switch the sources that can show
//! them share, and the turning of the tagged Python frame ids in an agent's stacks into named
//! frames (`function (file.py:line)`).
//!
//! [`Python`] is the agent's `xpuprof_wire::opts::PythonMode`, which is also a host config value
//! (the SDK's `agent-stream` feature): one declaration of the words for both ends.

use xpuprof_sdk::hash::IdMap;
use xpuprof_sdk::model::FrameId;
use xpuprof_sdk::Emitter;
use xpuprof_wire::Reader;

use crate::Interner;

/// Python frames in stacks: `auto` (where the process runs CPython 3.9-3.13, found by what it
/// maps) or `off`; the host's config value and the agent's option.
pub use xpuprof_wire::opts::PythonMode as Python;

/// The Python frame texts one process's agent defined, by tagged id, and the first lines of
/// their functions where the agent sent them.
#[derive(Debug, Default)]
pub struct PyFrames {
    names: IdMap<u64, String>,
    first_lines: IdMap<u64, u32>,
}

impl PyFrames {
    /// Takes the definitions of a `MSG_PY_FRAMES` payload.
    pub fn define(&mut self, payload: &[u8]) {
        self.names.extend(xpuprof_wire::read_py_frames(payload));
    }

    /// Takes the first lines of a `MSG_PY_FIRST_LINES` payload.
    pub fn define_first_lines(&mut self, payload: &[u8]) {
        self.first_lines.extend(xpuprof_wire::read_py_first_lines(payload));
    }

    /// The text of stack entry `addr` when it is a Python frame id (an id never defined reads
    /// `[python frame not defined]`), else `None`.
    pub fn name(&self, addr: u64) -> Option<&str> {
        if !xpuprof_wire::is_python_frame(addr) {
            return None;
        }
        Some(self.names.get(&addr).map_or("[python frame not defined]", String::as_str))
    }

    /// The named frame of stack entry `addr` when it is a Python frame id (an id never defined
    /// becomes a frame saying so), else `None`.
    pub fn frame(&self, int: &mut Interner, em: &mut Emitter, addr: u64) -> Option<FrameId> {
        let name = self.name(addr)?;
        let first_line = self.first_lines.get(&addr).copied().unwrap_or(0);
        Some(int.python_frame(em, name, first_line))
    }
}

/// An agent's Python capture counts (`MSG_PY_COUNTS`).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct PyCounts {
    /// Launch stacks with Python frames.
    pub with_frames: u64,
    /// Launch stacks of a process running CPython that got none (no Python frame running on the
    /// launching thread: a thread Python never ran on, such as a C++ worker thread).
    pub without_frames: u64,
    /// Launch stacks whose Python frame chain could not be read to its end (cut where it failed;
    /// not counted in the two others).
    pub errors: u64,
    /// Of the launches without Python frames, those of PyTorch's autograd engine threads shown
    /// under the Python stack of the one `backward()` call running (exact: the engine works for
    /// that call only while it runs).
    pub autograd_attributed: u64,
    /// Autograd engine launches made while several threads were in `backward()` (not attributed).
    pub autograd_ambiguous: u64,
    /// Autograd engine launches made while no thread was in `backward()` from Python.
    pub autograd_unattributed: u64,
    /// Runs of Python frames (one per eval-loop call) put by the eval loop's symbol because no
    /// native frame held their call's marker on the C stack (the others are placed exactly).
    pub runs_by_symbol: u64,
}

impl PyCounts {
    /// Adds the counts of a `MSG_PY_COUNTS` payload.
    pub fn add(&mut self, payload: &[u8]) {
        let mut r = Reader::new(payload);
        let (w, wo, e) = (r.u64(), r.u64(), r.u64());
        if r.short {
            return;
        }
        self.with_frames += w;
        self.without_frames += wo;
        self.errors += e;
        // Agents that attribute autograd launches add three counts.
        let (a, m, u) = (r.u64(), r.u64(), r.u64());
        if !r.short {
            self.autograd_attributed += a;
            self.autograd_ambiguous += m;
            self.autograd_unattributed += u;
        }
        // Agents that place Python frames by their eval call's C-stack marker add one more.
        let b = r.u64();
        if !r.short {
            self.runs_by_symbol += b;
        }
    }

    /// The warning, when launch stacks of Python processes lack Python frames.
    pub fn warning(&self) -> Option<String> {
        // Attributed autograd launches got the Python frames of the backward() they ran for.
        let without = self.without_frames.saturating_sub(self.autograd_attributed);
        (without + self.errors > 0).then(|| {
            format!(
                "{} launch stacks of Python processes have native frames only ({} launched from threads running no \
                 Python code, such as C++ worker threads; {} whose Python frame chain could not be read)",
                without + self.errors,
                without,
                self.errors
            )
        })
    }

    /// The report line, when any launch came from a Python process.
    pub fn report(&self) -> Option<String> {
        let total = self.with_frames + self.without_frames + self.errors;
        (total > 0).then(|| {
            let mut line =
                format!("python frames on {} of {total} launch stacks of Python processes", self.with_frames);
            let engine = self.autograd_attributed + self.autograd_ambiguous + self.autograd_unattributed;
            if engine > 0 {
                line.push_str(&format!(
                    "; autograd engine threads: {} of {engine} launches under the Python stack of the backward() \
                     they ran for, {} while several backward() calls ran (not attributed), {} with no backward() \
                     call from Python",
                    self.autograd_attributed, self.autograd_ambiguous, self.autograd_unattributed
                ));
            }
            if self.runs_by_symbol > 0 {
                line.push_str(&format!(
                    "; {} runs of Python frames placed by the eval loop's symbol (no native frame held their \
                     eval call's marker on the C stack)",
                    self.runs_by_symbol
                ));
            }
            line
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use xpuprof_wire::{put_py_frames, split_messages, PY_FRAME_TAG};

    #[test]
    fn names_defined_frames_and_leaves_addresses_alone() {
        let mut b = Vec::new();
        put_py_frames(&mut b, &[(PY_FRAME_TAG | 1, "run (a.py:3)".into())]);
        let mut py = PyFrames::default();
        py.define(split_messages(&b).0[0].payload);
        let (mut int, mut em) = (Interner::default(), Emitter::detached());
        let a = py.frame(&mut int, &mut em, PY_FRAME_TAG | 1).unwrap();
        assert_eq!(py.frame(&mut int, &mut em, PY_FRAME_TAG | 1), Some(a));
        assert!(py.frame(&mut int, &mut em, PY_FRAME_TAG | 2).is_some_and(|f| f != a));
        assert_eq!(py.frame(&mut int, &mut em, 0x7f00_1000), None);
    }

    #[test]
    fn frames_carry_their_functions_first_line_when_the_agent_sent_it() {
        let mut b = Vec::new();
        put_py_frames(
            &mut b,
            &[(PY_FRAME_TAG | 1, "run (a.py:9)".into()), (PY_FRAME_TAG | 2, "<module> (a.py:20)".into())],
        );
        xpuprof_wire::put_py_first_lines(&mut b, &[(PY_FRAME_TAG | 1, 7)]);
        let mut py = PyFrames::default();
        let (msgs, _) = split_messages(&b);
        py.define(msgs[0].payload);
        py.define_first_lines(msgs[1].payload);
        let (mut int, mut em) = (Interner::default(), Emitter::detached());
        py.frame(&mut int, &mut em, PY_FRAME_TAG | 1);
        py.frame(&mut int, &mut em, PY_FRAME_TAG | 2);
        use xpuprof_sdk::model::Record;
        let starts: Vec<u32> = xpuprof_sdk::codec::decode_all(&em.take_buffer())
            .unwrap()
            .into_iter()
            .filter_map(|r| match r {
                Record::Frame(f) => Some(f.start_line),
                _ => None,
            })
            .collect();
        assert_eq!(starts, [7, 0], "the first line where sent, 0 where not");
    }

    #[test]
    fn counts_add_up_and_report() {
        let mut c = PyCounts::default();
        assert_eq!(c.report(), None);
        let p: Vec<u8> = [5u64, 2, 1].iter().flat_map(|v| v.to_le_bytes()).collect();
        c.add(&p);
        c.add(&p[..10]);
        assert_eq!((c.with_frames, c.without_frames, c.errors), (5, 2, 1));
        assert_eq!(c.report().unwrap(), "python frames on 5 of 8 launch stacks of Python processes");

        assert!(c
            .warning()
            .unwrap()
            .starts_with("3 launch stacks of Python processes have native frames only"));
        let p: Vec<u8> = [0u64, 4, 0, 2, 1, 1].iter().flat_map(|v| v.to_le_bytes()).collect();
        c.add(&p);
        assert_eq!((c.autograd_attributed, c.autograd_ambiguous, c.autograd_unattributed), (2, 1, 1));
        assert!(c.report().unwrap().ends_with(
            "autograd engine threads: 2 of 4 launches under the Python stack of the backward() they ran for, 1 while \
             several backward() calls ran (not attributed), 1 with no backward() call from Python"
        ));
        assert!(
            c.warning().unwrap().starts_with("5 launch stacks of Python processes have native frames only"),
            "the attributed engine launches have Python frames"
        );
        let p: Vec<u8> = [1u64, 0, 0, 0, 0, 0, 2].iter().flat_map(|v| v.to_le_bytes()).collect();
        c.add(&p);
        assert_eq!(c.runs_by_symbol, 2);
        assert!(c.report().unwrap().ends_with(
            "; 2 runs of Python frames placed by the eval loop's symbol (no native frame held their eval call's \
             marker on the C stack)"
        ));
    }
}
