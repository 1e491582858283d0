#!/usr/bin/env bash
# Profiles a bundled demo and says where the outputs are: with $XPUPROF when set (scripts/setup.sh
# sets it to the installed binary), else the xpuprof on PATH, else the release build.
set -euo pipefail
cd "$(dirname "$0")/.."
X=${XPUPROF:-$(command -v xpuprof || echo target/release/xpuprof)}
OUT=${OUT_DIR:-xpuprof-demo}
mkdir -p target/demo
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

NVCC=$(command -v nvcc || ls "${CUDA_HOME:-/nonexistent}"/bin/nvcc /usr/local/cuda*/bin/nvcc 2>/dev/null | head -1 || true)
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 && [ -n "$NVCC" ]; then
  echo "demo: GPU found: profiling the CUDA demo (plugins/cupti/tests/workloads/multi_stream.cu)"
  "$NVCC" -O2 -g -std=c++17 -Xcompiler -fno-omit-frame-pointer -o target/demo/cuda_demo plugins/cupti/tests/workloads/multi_stream.cu -ldl -lpthread
  sources="cupti"
  if $SUDO -n true 2>/dev/null; then sources="ebpf,cupti"; fi
  $SUDO "$X" --source "$sources" --sink folded,chrome,flamegraph,summary -o "$OUT" -- target/demo/cuda_demo
else
  echo "demo: no GPU: profiling the CPU demo (plugins/ebpf/tests/workloads/burn.c) with the eBPF source"
  cc -O1 -g -fno-omit-frame-pointer -o target/demo/cpu_demo plugins/ebpf/tests/workloads/burn.c
  $SUDO "$X" --source ebpf --sink folded,flamegraph,summary -o "$OUT" -- target/demo/cpu_demo
fi
echo
echo "demo: outputs in $OUT/:"
echo "  flamegraph.svg       (GPU demo) GPU time under the CPU stacks that launched it: open in a browser"
echo "  flamegraph.cpu.svg   CPU time by stack: open in a browser"
echo "  profile.folded       folded stacks (inferno-flamegraph, flamegraph.pl, speedscope); profile.gpu.folded and"
echo "                       profile.cpu.folded hold the two views apart"
echo "  trace.json           (GPU demo) open in https://ui.perfetto.dev or chrome://tracing"
echo "  summary.txt          statistics; summary.json for CI (xpuprof diff)"
