//! Python frames in launch stacks: where the process runs CPython, the launching thread's
//! Python functions replace the eval-loop frames of its native stack (`xpuprof-python` does the
//! reading and the merge; this is the agents' switch, cache and wire side).
//!
//! `auto` finds the interpreter at the first launch stack by the symbols the process exports
//! (a `python3.X` executable or a `libpython3.X.so`), so a program that is not Python pays one
//! lookup per process and nothing per launch.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use xpuprof_python::merge;
use xpuprof_python::own::{Interpreter, MAX_FRAMES};

use crate::wire;

/// The Python side of an agent's launch stacks.
#[derive(Debug, Default)]
pub struct PythonFrames {
    enabled: AtomicBool,
    interpreter: OnceLock<Option<Interpreter>>,
    /// Why the interpreter could not be read (said once by the agent).
    pub problem: OnceLock<String>,
}

impl PythonFrames {
    /// Turns Python frames on (`python = "auto"`) or off.
    pub fn set_enabled(&self, on: bool) {
        self.enabled.store(on, Ordering::Relaxed);
    }

    /// The interpreter, found on first use.
    pub fn interpreter(&self) -> Option<&Interpreter> {
        if !self.enabled.load(Ordering::Relaxed) {
            return None;
        }
        self.interpreter
            .get_or_init(|| match Interpreter::find() {
                Ok(found) => found,
                Err(e) => {
                    let _ = self.problem.set(e.to_string());
                    None
                }
            })
            .as_ref()
    }

    /// Writes `native` with the calling thread's Python frames merged in into `out`; returns the
    /// frames written (`native` as is when Python frames are off or the process runs no CPython).
    #[inline]
    pub fn merge(&self, native: &[u64], out: &mut [u64]) -> usize {
        let Some(py) = self.interpreter() else {
            let n = native.len().min(out.len());
            out[..n].copy_from_slice(&native[..n]);
            return n;
        };
        let mut frames = [(0u64, false); MAX_FRAMES];
        let n = py.capture(&mut frames);
        merge::merge(native, |ra| py.is_eval(ra), &frames[..n], out).len
    }

    /// Appends the definitions of the Python frames made since the last call ([`wire::MSG_PY_FRAMES`]).
    pub fn put_definitions(&self, out: &mut Vec<u8>) {
        if let Some(Some(py)) = self.interpreter.get() {
            wire::put_py_frames(out, &py.take_definitions());
        }
    }

    /// Appends the capture counts ([`wire::MSG_PY_COUNTS`]) when an interpreter was found.
    pub fn put_counts(&self, out: &mut Vec<u8>) {
        if let Some(Some(py)) = self.interpreter.get() {
            let c = &py.counts;
            let v = [&c.with_frames, &c.without_frames, &c.errors]
                .map(|a| a.load(Ordering::Relaxed).to_le_bytes());
            wire::put_message(out, wire::MSG_PY_COUNTS, &[&v[0], &v[1], &v[2]]);
        }
    }
}
