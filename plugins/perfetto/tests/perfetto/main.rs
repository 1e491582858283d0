//! Integration tests of the perfetto sink: golden files, the checks of `tests/check_trace.py`
//! (decoding with Perfetto's official protos), bounded streaming, size per launch, and the sink
//! inside the real host (live, `xpuprof report`, a real CUDA stream).

mod check;
mod e2e;
mod sink;
mod timeline;

use xpuprof_testkit::{golden, host};
