//! Integration tests of the `summary` sink: a hand-built session with hand-computed statistics,
//! golden files (`XPUPROF_BLESS=1` regenerates them), and the digest.

mod bounded;
mod compile_time;
mod e2e;
mod hygiene;
mod late;
mod python;
mod ranks;
use xpuprof_testkit::golden;
mod session;
mod sink;
mod streams;
