#!/usr/bin/env bash
# Profiles a bundled demo with the release build and says where the outputs are.
set -euo pipefail
cd "$(dirname "$0")/.."
X=target/release/xpuprof
OUT=${OUT_DIR:-xpuprof-demo}
mkdir -p target/demo
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

NVCC=$(command -v nvcc || ls "${CUDA_HOME:-/nonexistent}"/bin/nvcc /usr/local/cuda*/bin/nvcc 2>/dev/null | head -1 || true)
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 && [ -n "$NVCC" ]; then
  echo "demo: GPU found: profiling the CUDA demo (tests/workloads/cuda/multi_stream.cu)"
  "$NVCC" -O2 -g -std=c++17 -Xcompiler -fno-omit-frame-pointer -o target/demo/cuda_demo tests/workloads/cuda/multi_stream.cu -ldl -lpthread
  sources="cupti"
  if $SUDO -n true 2>/dev/null; then sources="ebpf,cupti"; fi
  $SUDO "$X" --source "$sources" --sink folded,chrome,flamegraph,summary -o "$OUT" -- target/demo/cuda_demo
else
  echo "demo: no GPU: profiling the CPU demo (tests/workloads/cpu/burn.c) with the eBPF source"
  cc -O1 -g -fno-omit-frame-pointer -o target/demo/cpu_demo tests/workloads/cpu/burn.c
  $SUDO "$X" --source ebpf --sink folded,flamegraph,summary -o "$OUT" -- target/demo/cpu_demo
fi
echo
echo "demo: outputs in $OUT/:"
echo "  profile.folded   folded stacks (inferno-flamegraph, flamegraph.pl, speedscope)"
echo "  flamegraph.svg   open in a browser"
echo "  trace.json       (GPU demo) open in https://ui.perfetto.dev or chrome://tracing"
echo "  summary.txt      statistics; summary.json for CI (xpuprof diff)"
