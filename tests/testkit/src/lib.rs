//! # xpuprof-testkit: helpers for the crates' integration tests
//!
//! - [`alloc`]: count the allocations a piece of code makes (hot paths allocate nothing per
//!   record).
//! - [`golden`]: compare an output with `tests/golden/<name>` of the crate under test;
//!   `XPUPROF_BLESS=1` rewrites the file.
//! - [`host`]: build and run the real `xpuprof` binary with the plugins under test.
//! - [`struct_offsets`]: `-sys` crates' layout tests: pinned sizes and offsets, measured again from the
//!   vendor's headers by a C++ compiler.
//! - [`python`]: an embedded CPython for benchmarks that read live interpreter frames.
//! - [`skip`]: a missing prerequisite fails the test in CI and is a visible, counted skip
//!   elsewhere (never a silent pass).
//!
//! A dev-dependency only (`xpuprof-testkit = { path = "../../tests/testkit" }`).

pub mod alloc;
pub mod golden;
pub mod host;
pub mod outputs;
pub mod python;
pub mod skip;
pub mod struct_offsets;
