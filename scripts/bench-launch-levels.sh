#!/usr/bin/env bash
# The cupti agent's launch path (issue #29), side by side in one process, on the development
# machine: the release agent on the CUDA test double (plugins/cupti/tests/doubles/libcuda_double.c)
# under reuse_windows.py's training-shaped Python loop (about 50 frames, a native pt_autograd_0
# engine thread), in adjacent windows paused / launch entries only / native frames only / full
# (plugins/cupti/tests/workloads/level_windows.py), plus LEVEL_EXTRA windows; the order rotates;
# medians of the per-round ratios.
#
# usage: scripts/bench-launch-levels.sh [ROUNDS] [STEPS_PER_WINDOW] [PROCESSES]
#   REUSE_SWEEP_KIB=N touches N KiB before each launch (a framework's work between launches).
#   PERF="stat -e ..." runs each process under `perf PERF --` (perf stat / perf record).
#   DEEP=SITESxDEPTH (e.g. 200x40) launches from a generated library of SITES native chains
#   DEPTH functions deep instead (plugins/cupti/tests/workloads/deep_lib.py: more return
#   addresses than the rule cache's first level holds, as libtorch's launch paths have).
# Builds the agent (cargo build --release -p xpuprof-cupti-agent) unless XPUPROF_AGENT names one.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
ROUNDS=${1:-30} PER=${2:-40} PROCS=${3:-3}
# shellcheck source=scripts/lib/cuda-double.sh
. "$ROOT/scripts/lib/cuda-double.sh"
cuda_double levels
cc -Wall -O1 -shared -fPIC plugins/cupti/tests/workloads/engine_thread.c -o "$D/libengine.so" -lpthread -ldl
MODE=(double "$D/libcuda.so.1" "$D/libengine.so")
if [ -n "${DEEP:-}" ]; then
  python3 plugins/cupti/tests/workloads/deep_lib.py "${DEEP%x*}" "${DEEP#*x}" >"$D/deep_lib.c"
  cc -O2 -fomit-frame-pointer -shared -fPIC "$D/deep_lib.c" -o "$D/libdeep.so" -L"$D" -l:libcuda.so.1
  export DEEP_SITES=${DEEP%x*}
  MODE=(deep "$D/libcuda.so.1" "$D/libdeep.so")
fi
for p in $(seq 1 "$PROCS"); do
  # shellcheck disable=SC2086
  CUDA_INJECTION64_PATH=$AGENT XPUPROF_CUPTI_LIB=$D/libcuda.so.1 XPUPROF_CUPTI_DUMP=$D/dump \
    ${PERF:+perf $PERF --} python3 plugins/cupti/tests/workloads/level_windows.py "${MODE[@]}" "$ROUNDS" "$PER"
  rm -f "$D"/dump/*
done
