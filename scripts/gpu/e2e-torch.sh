#!/usr/bin/env bash
# Issue 6 on a GPU machine: the headline command on PyTorch (inference + a training step),
# two processes sharing a GPU, and (with 2+ GPUs) one process per GPU with per-device labels.
# Runs `xpuprof --source ebpf,cupti --sink folded,chrome,flamegraph,summary` with launch stacks
# from both the agent and the eBPF trampoline, so every run is also an agreement check.
#
# Needs the release builds carried in .device-carry/ (see docs/gpu-test-notes.md, "How to run",
# plus libxpuprof_plugin_ebpf.so, _flamegraph.so and _summary.so). Writes logs and a tarball of
# the outputs to $OUT and prints a table last.
set -u
cd "$(dirname "$0")/../.."
C=$PWD/.device-carry
X="$C/xpuprof --plugin-dir $C --quiet"
W=/tmp/xpuprof-e2e
OUT=${OUT:-/tmp/xpuprof-e2e-out}
rm -rf "$W"; mkdir -p "$W" "$OUT"
T=tests/workloads/torch
SUMMARY=$OUT/summary-table.txt
: >"$SUMMARY"
row() { printf '%-28s %s\n' "$1" "$2" | tee -a "$SUMMARY"; }

# The eBPF plugin links libelf; use the carried copy where the machine has none.
ldconfig -p | grep -q 'libelf.so.1 ' || export LD_LIBRARY_PATH=$C/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi -L | tee "$OUT/gpus.txt"
NGPU=$(nvidia-smi -L | grep -c '^GPU')
cat >"$W/xpuprof.toml" <<'TOML'
[source.cupti]
launch_stacks = "both"
[source.ebpf]
launch_stacks_from_trampoline = true
sample_hz = 99
[sink.folded]
gpu_device = true
TOML

run_case() {  # name, check args, workload args...
  local name=$1 check=$2; shift 2
  local o=$W/$name
  (cd "$W" && $X -v --source ebpf,cupti --sink folded,chrome,flamegraph,summary -o "$o" -- \
      python3 "$OLDPWD/$T/workload.py" "$@") >"$OUT/$name.out" 2>"$OUT/$name.err"
  local rc=$?
  local res
  res=$(python3 "$T/check_e2e.py" "$o" "$OUT/$name.out" $check 2>&1 | tail -1)
  local agree
  agree=$(grep -o 'launch stacks from two sources: .*' "$OUT/$name.err" | head -1)
  row "$name" "rc=$rc $res"
  row "  agreement" "${agree:-no stacks from two sources}"
  # How much of the eBPF stack copy the walks to the root needed (chooses ustack_copy_bytes).
  local depth
  depth=$(grep -o 'user stacks unwound to their root: .*' "$OUT/$name.err" | head -1)
  row "  eBPF stack depth" "${depth:-not reported}"
  grep -E 'device ops:|losses:' "$OUT/$name.err" | sed 's/^/    /' | tee -a "$SUMMARY"
  cp "$o/profile.folded" "$OUT/$name.folded" 2>/dev/null
  cp "$o/summary.txt" "$OUT/$name.summary.txt" 2>/dev/null
}

run_case torch-both "--cpu" --mode both --steps 20
run_case torch-2proc "" --mode both --steps 10 --procs 2 --devices 1
if [ "$NGPU" -ge 2 ]; then
  run_case torch-2gpu "--devices 2" --mode both --steps 10 --procs 2 --devices 2
else
  row torch-2gpu "skipped: $NGPU GPU on this machine"
fi
# Issue 18: the default outputs, without any config file (a fresh directory), as a user would run it.
mkdir -p "$W/default-cwd"
(cd "$W/default-cwd" && $X --source ebpf,cupti --sink folded,chrome,flamegraph,summary -o "$W/torch-default" -- \
    python3 "$OLDPWD/$T/workload.py" --mode both --steps 20) >"$OUT/torch-default.out" 2>"$OUT/torch-default.err"
row "torch-default (no config)" "rc=$? $(python3 scripts/gpu/check_presentation.py "$W/torch-default" "$OUT/torch-default.err" | head -1)"
python3 scripts/gpu/check_presentation.py "$W/torch-default" "$OUT/torch-default.err" | tail -n +2 | tee -a "$SUMMARY"
for f in flamegraph.svg flamegraph.cpu.svg summary.txt; do cp "$W/torch-default/$f" "$OUT/torch-default.$f" 2>/dev/null; done
tar -czf "$OUT/e2e-outputs.tar.gz" -C "$W" . 2>/dev/null
echo
cat "$SUMMARY"
