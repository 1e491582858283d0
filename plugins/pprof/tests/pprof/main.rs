//! Integration tests of the pprof sink: golden files, reading the profile with Go's
//! `go tool pprof` (the reference implementation of profile.proto), and the sink inside the
//! real host.

mod e2e;
mod go;
mod pc_samples;
mod python;
mod ranks;
mod sink;

use xpuprof_testkit::{golden, host};
