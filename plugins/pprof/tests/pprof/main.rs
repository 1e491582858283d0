//! Integration tests of the pprof sink: golden files, reading the profile with Go's
//! `go tool pprof` (the reference implementation of profile.proto), and the sink inside the
//! real host.

mod e2e;
mod go;
mod sink;

#[path = "../../../../tests/support/golden.rs"]
mod golden;
// The shared harness; these tests use only part of it.
#[allow(dead_code)]
#[path = "../../../../tests/support/host.rs"]
mod host;
