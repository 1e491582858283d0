#!/usr/bin/env bash
# Fuzzes the archive reader and `xpuprof report` longer than CI does: raw and checksum-repaired
# mutations of real archives (scripted, long synthetic, the frozen fixture and the CUDA
# fixtures' archives). Usage: scripts/fuzz-archive.sh [ITERATIONS]  (default 5000 per archive
# for the reader, ITERATIONS/10 report runs). Any panic, hang or invalid output fails the run
# with the seed and iteration that reproduce it.
set -euo pipefail
cd "$(dirname "$0")/.."
iters="${1:-5000}"
cargo build --workspace
XPUPROF_FUZZ_ITERS="$iters" timeout 3600 cargo test -p xpuprof-archive --test archive damage::fuzz -- --nocapture
XPUPROF_FUZZ_ITERS="$((iters / 10))" timeout 3600 cargo test -p xpuprof-core --test host report::fuzz -- --nocapture
echo "fuzz-archive: no panics, hangs or invalid outputs in $iters mutations per archive"
