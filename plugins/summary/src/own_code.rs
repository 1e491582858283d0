//! xpuprof's own code inside the profiled process, by the toolbox's one rule
//! ([`xpuprof_toolbox::own_code`], shared with the folded and flame graph outputs): CPU samples
//! that land in it are the profiler's cost, and the report shows them under one [`OWN_FRAME`].

pub use xpuprof_toolbox::own_code::{is_own_frame, OWN_FRAME};
