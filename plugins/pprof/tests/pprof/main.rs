//! Integration tests of the pprof sink: golden files, reading the profile with Go's
//! `go tool pprof` (the reference implementation of profile.proto), and the sink inside the
//! real host.

mod go;
mod host;
mod sink;
