# shellcheck shell=bash
# ---- xla quick: one small JAX training loop with annotation frames on (issue 33) -------------
# Runs in under 60 s (about 25 s when it passes, 35 s when it crashes; the time limits add up
# to 59 s on either path). On a clean run the agent alone also writes its stream of a 3-step run,
# the CI fixture of the annotations ($XL/fixture/). Sourced by parts/xla.sh
# when XLA_QUICK=1:
#
#   XLA_QUICK=1 scripts/gpu/run-all.sh xla
#
# `xpuprof --source cupti --set source.cupti.annotations=true` runs tests/workloads/jax/train.py
# (20 steps, batch 64, width 256); PASS when it exits 0 and its GPU profile holds XLA operation
# frames (`[xla] ...`). A crash reporter (scripts/gpu/segv_report.c, LD_PRELOAD into the
# program) writes the native frame that faulted to $XL/segv.txt. On a failure, the same program
# under the agent alone with annotations on and callback_noop=1 (CUPTI delivers the NVTX
# callbacks, the agent returns at once) says whether the crash needs the agent's work at all,
# and the agent alone with its NVTX trace (verbose=1) shows the last ranges before the end.
# Variables from parts/xla.sh: XL (logs), XJ (the workload).
QO=$W/out/xla-quick
rm -rf "$QO"
PRE=
if cc -shared -fPIC -O1 -o "$W/bin/segv_report.so" "$ROOT/scripts/gpu/segv_report.c" -ldl >"$XL/segv-build.log" 2>&1; then
  PRE="LD_PRELOAD=$W/bin/segv_report.so"
fi
: >"$XL/segv.txt"
s=$(date +%s.%N)
timeout 35 "$CARRY/xpuprof" --plugin-dir "$CARRY" --source cupti --set source.cupti.annotations=true \
  --sink folded,summary -o "$QO" -- env $PRE XPUPROF_SEGV_LOG="$XL/segv.txt" \
  python3 "$XJ" --steps 20 --batch 64 --width 256 >"$XL/quick.out" 2>"$XL/quick.err"
rc=$?
dt=$(python3 -c "import time; print(f'{time.time()-$s:.1f}')")
rm -f "$XL/quick.gpu.folded" "$XL/quick.summary.txt"
cp "$QO/profile.gpu.folded" "$XL/quick.gpu.folded" 2>/dev/null
cp "$QO/summary.txt" "$XL/quick.summary.txt" 2>/dev/null
labelled=$(grep -c '\[xla\] ' "$XL/quick.gpu.folded" 2>/dev/null)
compiled=$(grep -c '\[compile\]' "$XL/quick.gpu.folded" 2>/dev/null)
with_line=$(grep -c '\[xla\] [^;]*(.*train\.py:[0-9]*)' "$XL/quick.gpu.folded" 2>/dev/null)
example=$(grep -o '\[xla\] [^;]*' "$XL/quick.gpu.folded" 2>/dev/null | sort | uniq -c | sort -rn | head -1 | cut -c1-90)
skipped=$(grep -o 'annotations: .* not read.*' "$XL/quick.err" 2>/dev/null | head -1 | cut -c1-140)
if [ "$rc" -eq 0 ] && [ "${labelled:-0}" -gt 0 ]; then
  row "xla quick annotations" "PASS rc=0 ${dt}s, ${labelled} GPU stacks with [xla] ops (${with_line:-0} with their train.py line), ${compiled:-0} [compile]; top: ${example}"
  # Issue 33's shares on this run (steady state under the CALL line and its operations,
  # compile-time work marked): information, its own PASS needs more than this part checks.
  python3 scripts/gpu/check_xla.py "$QO" "" "$XJ" >"$XL/quick.check.txt" 2>&1
  row "xla quick issue-33 shares" "$(tail -1 "$XL/quick.check.txt" | cut -c1-150)"
  # The CI fixture: the agent's own stream of a short run (plugins/cupti/tests/fixtures/jax_steps).
  mkdir -p "$XL/fixture"
  CUDA_INJECTION64_PATH=$AGENT NVTX_INJECTION64_PATH=$AGENT XPUPROF_CUPTI_DUMP=$XL/fixture \
    XPUPROF_CUPTI_OPTS="$AGENT_DEFAULT_OPTS,annotations=1" \
    timeout 12 python3 "$XJ" --steps 3 --batch 64 --width 256 --ops "$XL/fixture/ops.txt" >"$XL/fixture/stdout.txt" 2>"$XL/fixture/stderr.txt"
  row "xla quick fixture capture" "rc=$? $(ls -l "$XL"/fixture/cupti-*.bin 2>/dev/null | awk '{print $5}' | head -1) bytes"
else
  row "xla quick annotations" "FAIL rc=$rc ${dt}s, ${labelled:-0} GPU stacks with [xla] ops; $(grep -m1 SEGV-REPORT "$XL/segv.txt" | cut -c1-100)"
  # The faulting frames (library+offset symbol), for `addr2line -f -e .device-carry/LIB OFFSET`.
  grep -m6 '^#' "$XL/segv.txt" | while read -r f; do row "xla quick fault frame" "$(echo "$f" | sed 's|/[^ ]*/||' | cut -c1-110)"; done
  tail -3 "$XL/quick.err" | cut -c1-160 | while read -r l; do row "xla quick stderr" "$l"; done
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ]; then
    mkdir -p "$XL/noop"
    CUDA_INJECTION64_PATH=$AGENT NVTX_INJECTION64_PATH=$AGENT XPUPROF_CUPTI_DUMP=$XL/noop \
      XPUPROF_CUPTI_OPTS="$AGENT_DEFAULT_OPTS,annotations=1,callback_noop=1" \
      timeout 12 python3 "$XJ" --steps 3 --batch 64 --width 256 >"$XL/noop.out" 2>"$XL/noop.err"
    row "xla quick NVTX callbacks, agent idle" "rc=$? (0: the crash needs the agent's annotation work; 139: CUPTI's own NVTX path)"
    rm -rf "$XL/noop"
    # The agent alone with its NVTX trace (verbose): the last ranges before the end.
    mkdir -p "$XL/noop"
    CUDA_INJECTION64_PATH=$AGENT NVTX_INJECTION64_PATH=$AGENT XPUPROF_CUPTI_DUMP=$XL/noop \
      XPUPROF_CUPTI_OPTS="$AGENT_DEFAULT_OPTS,annotations=1,verbose=1" XPUPROF_SEGV_LOG="$XL/segv-alone.txt" \
      timeout 12 env $PRE python3 "$XJ" --steps 3 --batch 64 --width 256 >"$XL/alone.out" 2>"$XL/alone.err"
    row "xla quick agent alone, verbose" "rc=$? last: $(grep 'nvtx push\|nvtx pop' "$XL/alone.err" | tail -1 | cut -c1-120)"
    grep -m3 '^#' "$XL/segv-alone.txt" 2>/dev/null | while read -r f; do row "xla quick alone fault frame" "$(echo "$f" | sed 's|/[^ ]*/||' | cut -c1-110)"; done
    tail -60 "$XL/alone.err" | cut -c1-300 >"$XL/alone.tail"; gzip -f "$XL/alone.err"
    rm -rf "$XL/noop"
  fi
fi
[ -n "$skipped" ] && row "xla quick skipped annotations" "$skipped"
