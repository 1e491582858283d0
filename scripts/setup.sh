#!/usr/bin/env bash
# First command for a new user: installs what is missing, builds xpuprof in release mode, and
# profiles a bundled demo (the CUDA demo where a GPU and nvcc exist, else a CPU demo).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cargo build --release --workspace
exec scripts/demo.sh
