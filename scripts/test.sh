#!/usr/bin/env bash
# The whole test suite, as CI runs it: formatting, lints, build, tests.
# eBPF tests need root (CI runs as root); without it they are skipped with a printed reason.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fmt --all --check
cargo clippy --workspace --all-targets -- -D warnings
# Plugins are cdylibs loaded at run time: build them before the tests that load them.
cargo build --workspace
cargo test --workspace --no-fail-fast
