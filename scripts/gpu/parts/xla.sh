# shellcheck shell=bash
# ---- xla: JAX/XLA under xpuprof (issue 33) ----------------------------------------------------
# Device-time budget: 150 s (R1); the time limits below add up to 140 s (35+25+25+55), the checks
# a few seconds more.
# Sourced by run-all.sh (`run-all.sh xla`). The full part (the default; XLA_QUICK=1 runs only
# parts/xla_quick.sh, under 60 s) runs tests/workloads/jax/train.py (a jitted MLP step of known
# operations in named scopes, 100 steps, batch 128, width 1024) as a JAX user would, with the
# defaults and every output (`xpuprof --source cupti -- python3 train.py`: annotations are on by
# default); the same with `annotations = false` (what they add and what they cost: the loop's
# wall time per step, on against off); with XLA's command buffers off; and torch.compile's
# max-autotune (issue 33 item 4). scripts/gpu/check_xla.py checks each run against the issue's
# Checks, one `check NAME FIGURE (bar BAR) PASS|FAIL` line each, all of them rows here.
# What comes back: $W/logs/xla/.
XL=$W/logs/xla
rm -rf "$XL"; mkdir -p "$XL"
XJ=tests/workloads/jax/train.py
ldconfig -p | grep -q 'libelf.so.1 ' || export LD_LIBRARY_PATH=$CARRY/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
if [ "${XLA_QUICK:-0}" = 1 ]; then
  # shellcheck source=/dev/null
  . "$ROOT/scripts/gpu/parts/xla_quick.sh"
  return 0 2>/dev/null || true
fi
XSIZE=(--batch 128 --width 1024)

# One run of xpuprof: name, time limit, sinks, program and arguments (after --), extra xpuprof
# arguments before it (--set ...). Env: XENV (assignments for the program).
xla_run() {
  local n=$1 limit=$2 sinks=$3; shift 3
  local o=$W/out/xla-$n pre=() s rc dt
  while [ $# -gt 0 ] && [ "$1" != -- ]; do pre+=("$1"); shift; done
  shift
  rm -rf "$o"
  s=$(date +%s.%N)
  timeout -k 5 "$limit" "$CARRY/xpuprof" --plugin-dir "$CARRY" ${pre[@]+"${pre[@]}"} --source cupti \
    --sink "$sinks" -o "$o" -- env ${XENV:-} python3 "$@" >"$XL/$n.out" 2>"$XL/$n.err"
  rc=$?
  dt=$(python3 -c "import time; print(f'{time.time()-$s:.1f}')")
  cp "$o/profile.gpu.folded" "$XL/$n.gpu.folded" 2>/dev/null
  for f in "$o"/summary.txt "$o"/summary.json; do [ -f "$f" ] && cp "$f" "$XL/$n.$(basename "$f")"; done
  [ -f "$o/records.jsonl" ] && gzip -c "$o/records.jsonl" >"$XL/$n.records.jsonl.gz"
  [ -f "$o/trace.json" ] && gzip -c "$o/trace.json" >"$XL/$n.trace.json.gz"
  row "xla $n" "rc=$rc ${dt}s $(grep -o 'step_ms=[0-9.]*\|AUTOTUNE .* ok' "$XL/$n.out" | head -1) $(grep -o 'annotations: .* not read[^;]*' "$XL/$n.err" | head -1 | cut -c1-90)"
  XRUN_OUT=$o
}
# The checks of one run: every `check` line of check_xla.py as a row, then its last line.
xla_check() {  # name, script
  python3 scripts/gpu/check_xla.py "$XRUN_OUT" "" "$2" >"$XL/$1.check.txt" 2>&1
  grep '^check ' "$XL/$1.check.txt" | cut -c7-230 | while read -r l; do row "xla $1 check" "$l"; done
  row "xla $1 checks" "$(tail -1 "$XL/$1.check.txt" | cut -c1-200)"
}

# 1. What a JAX user gets with the defaults, every output (dump: records.jsonl for the steady state by time).
XENV= xla_run default 35 folded,chrome,summary,dump -- "$XJ" --steps 100 "${XSIZE[@]}"
xla_check default "$XJ"
grep -o '\[xla\] [^;]*' "$XL/default.gpu.folded" 2>/dev/null | sort | uniq -c | sort -rn | head -30 >"$XL/default.ops.txt"
row "xla default top operation" "$(head -1 "$XL/default.ops.txt" | cut -c1-150)"

# 2. Annotations off: what they add (the compile-time share left unmarked) and cost (step_ms, on vs off).
XENV= xla_run off 25 folded,summary --set source.cupti.annotations=false -- "$XJ" --steps 100 "${XSIZE[@]}"
xla_check off "$XJ"
on=$(grep -o 'step_ms=[0-9.]*' "$XL/default.out" | cut -d= -f2)
off=$(grep -o 'step_ms=[0-9.]*' "$XL/off.out" | cut -d= -f2)
row "xla annotations cost" "step_ms on=${on:-?} off=${off:-?} ratio=$(python3 -c "print(f'{float(\"${on:-0}\")/float(\"${off:-0}\"):.3f}')" 2>/dev/null || echo '?') (100 steps each, one run each: noisy)"

# 3. XLA's command buffers off: every operation launched from the executable's own thread.
XENV=XLA_FLAGS=--xla_gpu_enable_command_buffer= xla_run nocmdbuf 25 folded,summary,dump -- "$XJ" --steps 50 "${XSIZE[@]}"
xla_check nocmdbuf "$XJ"

# 4. torch.compile max-autotune: its benchmarking launches (issue 33 item 4).
XENV= xla_run torch-autotune 55 folded,summary,dump -- tests/workloads/torch/autotune.py --steps 20
xla_check torch-autotune tests/workloads/torch/autotune.py
# Keep what comes back small: records of the two dump runs stay (gzipped), the rest is folded text.
du -sh "$XL" | tee -a "$SUMMARY"
