#!/usr/bin/env bash
# The whole test suite, as CI runs it: formatting, lints, build, tests.
# eBPF tests need root (CI runs as root); without it they are skipped with a printed reason.
set -euo pipefail
cd "$(dirname "$0")/.."
# A full test build takes about 2.2 GB of target/ (Cargo.toml says how it is kept small); say so
# up front when the disk is short, rather than leave it to a linker's crash.
free_mb=$(df -Pm . | awk 'NR == 2 { print $4 }')
echo "test.sh: ${free_mb} MB free on this disk" >&2
if [ "${free_mb:-0}" -lt 3000 ] && [ ! -d target/debug/deps ]; then
  echo "test.sh: only ${free_mb} MB free here; building and testing the workspace needs about 2.2 GB for target/" >&2
fi
cargo fmt --all --check
cargo clippy --workspace --all-targets -- -D warnings
# Plugins are cdylibs loaded at run time: build them before the tests that load them.
cargo build --workspace
cargo test --workspace --no-fail-fast
