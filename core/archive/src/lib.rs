//! xpuprof's native trace archive (being written).

pub mod sample;
