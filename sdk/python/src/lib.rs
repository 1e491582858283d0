//! # xpuprof-python: CPython frames in xpuprof's stacks
//!
//! Python code runs inside the interpreter's eval loop, so a native stack of a Python program
//! shows `_PyEval_EvalFrameDefault` where the user's functions are. This crate reads the
//! interpreter's own frame chain and puts the Python functions where the eval loop's frames are,
//! each shown as `function (file.py:line)` (what `py-spy --native` shows):
//!
//! - [`cpython_offsets`]: per CPython version (3.9 to 3.13), where the thread states, frames, code
//!   objects and strings keep what is read (pinned against CPython's headers in the tests);
//! - [`memory`]: reading the interpreter's memory in this process or another one;
//! - [`chain`]: a thread's frames as (code object, instruction offset) pairs, with the entry
//!   frames that mark where each eval-loop call starts;
//! - [`code`] and [`lines`]: a code object's function name, file and the line of an offset;
//! - [`merge`]: Python frames into a native stack;
//! - [`own`]: the interpreter of the calling process, for the agents (at API entry), which
//!   takes a thread's previous capture where every field it read still holds (`reuse.rs`);
//! - [`autograd`]: for launches of PyTorch's autograd engine threads, the Python stack of the
//!   thread whose `backward()` they run (which threads are in such calls is kept from launch to
//!   launch and looked at again where the GIL's hand-over record says it may have changed);
//! - [`target`]: the interpreter of another process, found from its mapped binaries.
//!
//! A Python frame travels in a stack's address list as a tagged id ([`PY_FRAME_TAG`] | n) whose
//! text the agent sends once as a definition; hosts turn it into a named frame.

pub mod autograd;
mod callers;
pub mod chain;
pub mod code;
pub mod cpython_offsets;
mod gil;
pub mod lines;
pub mod memory;
pub mod merge;
pub mod own;
mod reuse;
mod signature;
pub mod target;

pub use xpuprof_wire::{is_python_frame, PY_FRAME_TAG};

/// What can go wrong reading an interpreter.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A read of target memory failed.
    #[error("failed to read {len} bytes of the interpreter's memory at {addr:#x}")]
    Read {
        /// Address.
        addr: u64,
        /// Bytes.
        len: usize,
    },
    /// Memory that should hold an interpreter object does not.
    #[error("the memory at {addr:#x} is not {what} (a layout that does not match the interpreter?)")]
    Object {
        /// Address.
        addr: u64,
        /// What was expected.
        what: &'static str,
    },
    /// The code object a frame ran was freed (another object lives at its address) before
    /// it was read.
    #[error("the code object at {addr:#x} was freed before it was read")]
    Freed {
        /// Address.
        addr: u64,
    },
    /// The interpreter does not export a symbol this crate needs.
    #[error("the Python interpreter does not export {name}: Python frames are off for this process")]
    Symbol {
        /// Symbol name.
        name: &'static str,
    },
    /// A version this crate has no layout for.
    #[error("unsupported Python version {text:?}: Python frames are read for CPython 3.9 to 3.13")]
    Version {
        /// The version as the interpreter states it.
        text: String,
    },
    /// A binary could not be read.
    #[error("failed to read the Python binary {path}: {cause}")]
    Binary {
        /// Path.
        path: String,
        /// Why.
        cause: String,
    },
    /// A lock was poisoned by a panic elsewhere.
    #[error("the Python frame table's lock was poisoned")]
    Poisoned,
}
