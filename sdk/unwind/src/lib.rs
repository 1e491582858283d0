//! # xpuprof-unwind: native stacks through code with and without frame pointers
//!
//! One unwinder for every place xpuprof captures a native stack:
//!
//! - **in-process** ([`local`]): the in-target agents walk the launching thread's stack at API
//!   entry. Modules come from `dl_iterate_phdr`; their `.eh_frame_hdr`/`.eh_frame` are read in
//!   place (nothing is copied), and the module list is refreshed when a walk meets an address
//!   outside every known module (a library `dlopen`ed later: Triton kernels, JIT `.so` files).
//! - **copied stacks** ([`remote`]): the eBPF source copies a bounded slice of the user stack and
//!   the user registers in BPF; the host unwinds it here with modules from `/proc/PID/maps` and the
//!   mapped files (the model of `perf --call-graph dwarf`).
//!
//! Both drive [framehop](https://docs.rs/framehop) (the unwinder behind samply): for every
//! address it finds the unwind rule in the binary's CFI and caches it per address. On top of it a
//! fast path: each address's rule is classified once (the frame-pointer rule, a stack-pointer
//! rule, or a frame-pointer-based rule of another layout such as libffi's trampoline) and cached
//! per thread, and the walk's hot loop steps cached frames with the registers in locals: a cache
//! probe and one or two stack reads per frame, with or without frame pointers; only rules of
//! other shapes (and the first frame of a sample) are stepped by framehop. Addresses in code
//! without CFI (JIT code) fall back to the frame pointer. A walk never reads outside the stack it
//! was given and never goes on with garbage: a step that fails, or two consecutive frames outside
//! every known module, cuts the walk there; every walk's end is counted in [`Stats`].
//!
//! Frames are written innermost first: `out[0]` is the start instruction pointer, every later
//! entry a return address (as read from the stack: symbolise `addr - 1` to name the call site).
//!
//! Only x86_64 is implemented; on other architectures [`local::walk`] and [`remote::Remote::walk`]
//! return no frames and count [`Cut::Unsupported`].

pub mod local;
pub mod regs;
pub mod remote;
pub mod stats;
pub mod walk;

mod image;
mod memo;
mod rules;

pub use regs::Registers;
pub use rules::{rule_spill_on, set_rule_spill};
pub use stats::{stats, Stats, StatsSnapshot};
pub use walk::{set_fast_path, Cut, End, Walk};
