//! The `cupti` source's tests, one binary: the decoder on streams captured on the H100
//! (`replay`), the plugin inside the real host replaying them (`host`), and attach and capture
//! windows over a test double of the CUDA driver and CUPTI (`attach`), XLA's NVTX annotations on
//! that double (`annotations`), launch-stack reuse in the agent on that double (`reuse`).
//! Their inputs sit beside them: `tests/fixtures/` (captured streams), `tests/workloads/` (the CUDA programs that made
//! them, run by `scripts/gpu/run-all.sh`), `tests/doubles/` (the test double) and
//! `tests/golden/` (expected outputs).

mod annotations;
mod attach;
mod double;
mod host;
mod nccl;
mod pc_replay;
mod pc_sampling;
mod pc_split;
mod replay;
mod reuse;
mod xla;
