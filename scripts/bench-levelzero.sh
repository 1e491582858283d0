#!/usr/bin/env bash
# Cost of Level Zero tracing per zeCommandListAppendLaunchKernel, measured side by side in one
# run on the test-double driver (no Intel GPU here): the launch-bound workload
# plugins/levelzero/tests/workloads/launch_bench.c (N appends to an immediate list) runs, in interleaved
# rounds,
#   plain   - the loader and the test driver only;
#   layer   - with the loader's tracing layer on (ZE_ENABLE_TRACING_LAYER=1), no tracer;
#   xpuprof - under `xpuprof --source levelzero` (tracing layer + the agent: a stack, a
#             correlation id, a timestamp event and an API record per launch).
# Prints ns per launch of each round, the medians and the ratios. The driver's own cost is the
# test double's, not Intel's: the absolute difference (xpuprof - plain) is the figure that
# carries over; the ratio depends on how cheap the real driver's append is.
# Usage: scripts/bench-levelzero.sh [N=200000] [ROUNDS=5]
set -euo pipefail
N=${1:-200000}
ROUNDS=${2:-5}
cd "$(dirname "$0")/.."
cargo build --release -q -p xpuprof-core -p xpuprof-plugin-levelzero -p xpuprof-levelzero-agent \
  -p xpuprof-test-double-ze-driver -p xpuprof-plugin-summary
T=target/release
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
cc -O2 -g -fno-omit-frame-pointer -I plugins/levelzero/tests/workloads plugins/levelzero/tests/workloads/launch_bench.c \
  -o "$W/launch_bench" -lze_loader
export ZE_ENABLE_ALT_DRIVERS="$PWD/$T/libxpuprof_test_double_ze_driver.so"
ns() { awk '/^ns_per_launch/ {print $2}'; }
plain=() layer=() xpu=()
for r in $(seq "$ROUNDS"); do
  p=$("$W/launch_bench" "$N" | ns)
  l=$(ZE_ENABLE_TRACING_LAYER=1 "$W/launch_bench" "$N" | ns)
  x=$("$T/xpuprof" --plugin-dir "$T" --source levelzero --sink summary -o "$W/out" -- "$W/launch_bench" "$N" 2>/dev/null | ns)
  echo "round $r: plain $p ns, layer $l ns, xpuprof $x ns per launch"
  plain+=("$p") layer+=("$l") xpu+=("$x")
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
mp=$(median "${plain[@]}") ml=$(median "${layer[@]}") mx=$(median "${xpu[@]}")
echo "median ns per launch ($N launches, $ROUNDS rounds): plain $mp, layer $ml, xpuprof $mx"
awk -v p="$mp" -v l="$ml" -v x="$mx" 'BEGIN {
  printf "ratios: layer/plain %.2fx, xpuprof/plain %.2fx, xpuprof/layer %.2fx; agent cost %.0f ns per launch over the layer, %.0f ns over plain\n", l/p, x/p, x/l, x-l, x-p }'
