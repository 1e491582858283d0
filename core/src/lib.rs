//! xpuprof host library (being written).
