#!/usr/bin/env bash
# Launch-stack reuse (issue #29), side by side in one process, on the development machine: the
# release cupti agent on the CUDA test double (plugins/cupti/tests/doubles/libcuda_double.c) under
# a Python training-shaped loop about 50 frames deep with a backward-like native engine thread
# (plugins/cupti/tests/workloads/reuse_windows.py, engine_thread.c). Adjacent windows: agent
# paused, collecting with every launch captured in full (the capture before reuse), collecting
# with reuse; the order rotates; medians of the per-round ratios. Then a check window (every
# launch captured both ways; the launches whose stacks differ are counted, 0 if reuse is exact).
#
# usage: scripts/bench-launch-reuse.sh [ROUNDS] [STEPS_PER_WINDOW] [PROCESSES]
# Builds the agent (cargo build --release -p xpuprof-cupti-agent) unless XPUPROF_AGENT names one.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
ROUNDS=${1:-30} PER=${2:-40} PROCS=${3:-3}
# shellcheck source=scripts/lib/cuda-double.sh
. "$ROOT/scripts/lib/cuda-double.sh"
cuda_double reuse
cc -Wall -O1 -shared -fPIC plugins/cupti/tests/workloads/engine_thread.c -o "$D/libengine.so" -lpthread -ldl
for p in $(seq 1 "$PROCS"); do
  CUDA_INJECTION64_PATH=$AGENT XPUPROF_CUPTI_LIB=$D/libcuda.so.1 XPUPROF_CUPTI_DUMP=$D/dump \
    python3 plugins/cupti/tests/workloads/reuse_windows.py double "$D/libcuda.so.1" "$D/libengine.so" "$ROUNDS" "$PER"
  rm -f "$D"/dump/*
done
