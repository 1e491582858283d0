#!/usr/bin/env bash
# What the cupti agent's annotations (`[source.cupti] annotations`, on by default) cost, side by
# side in adjacent runs on the development machine: the release agent on the CUDA test double
# (plugins/cupti/tests/doubles/libcuda_double.c) under `xla_nvtx bench N`, which pushes and pops N
# NVTX ranges of the program's own (another domain than XLA's, an ASCII title: they give no frame,
# what any program with NVTX ranges pays) and runs N steps of an XLA module (a module range, three
# operation ranges with extended payloads, a launch in each). Runs alternate annotations=1 and
# annotations=0 (the NVTX callbacks for domain ranges are on either way, for NCCL's); prints the
# medians in nanoseconds per range and per step, and their ratio on/off. CUPTI's own callback
# dispatch is the double's here; on a GPU the full xla part measures JAX's steps
# (scripts/gpu/parts/xla.sh, `xla annotations cost`).
#
# usage: scripts/bench-annotations.sh [ROUNDS] [N]
# Builds the agent (cargo build --release -p xpuprof-cupti-agent) unless XPUPROF_AGENT names one.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
ROUNDS=${1:-9} N=${2:-200000}
# shellcheck source=scripts/lib/cuda-double.sh
. "$ROOT/scripts/lib/cuda-double.sh"
cuda_double annotations
DB=plugins/cupti/tests/doubles
cc -Wall -O1 -I"$INC" $DB/xla_nvtx.c "$D/libcuda.so.1" -Wl,-rpath,"$D" -o "$D/xla_nvtx" -lpthread
for r in $(seq 1 "$ROUNDS"); do
  for on in 1 0; do
    CUDA_INJECTION64_PATH=$AGENT XPUPROF_CUPTI_LIB=$D/libcuda.so.1 XPUPROF_CUPTI_DUMP=$D/dump \
      XPUPROF_CUPTI_OPTS="annotations=$on" "$D/xla_nvtx" bench "$N" | sed "s/^/on=$on /" >>"$D/runs.txt"
    rm -f "$D"/dump/*
  done
done
python3 - "$D/runs.txt" <<'PY'
import re, statistics, sys
runs = {"1": {"range": [], "step": []}, "0": {"range": [], "step": []}}
for line in open(sys.argv[1]):
    m = re.search(r"on=(\d) bench ranges=\d+ ns_per_range=([\d.]+) ns_per_step=([\d.]+)", line)
    if m:
        runs[m.group(1)]["range"].append(float(m.group(2)))
        runs[m.group(1)]["step"].append(float(m.group(3)))
for what in ("range", "step"):
    on, off = statistics.median(runs["1"][what]), statistics.median(runs["0"][what])
    print(f"ns per {what:5}: annotations on {on:8.1f}  off {off:8.1f}  on/off {on / off:.3f}  "
          f"(+{on - off:.1f} ns; medians of {len(runs['1'][what])} runs each)")
PY
