# shellcheck shell=bash
# ---- xla: JAX/XLA under xpuprof (issue 33) ----------------------------------------------------
# Device-time budget: 120 s (R2); the time limits below add up to 115 s (25+4x18+18; about 70 s
# run), the checks a few seconds more; XLA_NOCMDBUF=1 adds 18 s, XLA_FIXTURE=1 20 s, XLA_TORCH=1
# 40 s (all three ran in R1).
# Sourced by run-all.sh (`run-all.sh xla`). The full part (the default; XLA_QUICK=1 runs only
# parts/xla_quick.sh, under 60 s) runs tests/workloads/jax/train.py (a jitted MLP step of known
# operations in named scopes, 100 steps, its default batch 256 and width 2048: XLA's command
# buffers then hold cuBLAS gemms as child graphs) as a JAX user would, with the
# defaults and every output (`xpuprof --source cupti -- python3 train.py`: annotations are on by
# default); runs with annotations off and on in turn (what they add and what they cost: the
# loop's wall time per step), and the agent alone saying the time its annotations took;
# optionally with XLA's command buffers off, the agent's own stream of 3 such steps (a CI
# fixture) and torch.compile's max-autotune (issue 33 item 4). scripts/gpu/check_xla.py checks each run against the issue's
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
XSIZE=(--batch 256 --width 2048)

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
  row "xla $n" "rc=$rc ${dt}s $(grep -o 'step_ms=[0-9.]*\|AUTOTUNE .* ok' "$XL/$n.out" | head -1) $(grep -o 'annotations: .* not read[^;]*' "$XL/$n.err" | head -1 | cut -c1-90)"
  local g; g=$(grep -o '[0-9]* replayed kernels of child graphs.*' "$XL/$n.err" | sed 's/ (nodes[^)]*)//; s/: CUPTI does not.*//' | sort -u | tr '\n' ';' | cut -c1-220)
  [ -n "$g" ] && row "xla $n child graphs" "$g"
  XRUN_OUT=$o
}
# The checks of one run: every `check` line of check_xla.py as a row, then its last line; a
# third argument is what the rows are labelled by instead of `check` (a control run's figures).
xla_check() {  # name, script[, label]
  local label=${3:-check}
  python3 scripts/gpu/check_xla.py "$XRUN_OUT" "" "$2" >"$XL/$1.check.txt" 2>&1
  grep '^check ' "$XL/$1.check.txt" | cut -c7-230 | while read -r l; do row "xla $1 $label" "$l"; done
  row "xla $1 $label total" "$(tail -1 "$XL/$1.check.txt" | cut -c1-200)"
}

# 1. What a JAX user gets with the defaults, every output (dump: records.jsonl for the steady state by time).
XENV= xla_run default 25 folded,chrome,summary,dump -- "$XJ" --steps 100 "${XSIZE[@]}"
xla_check default "$XJ"
grep -o '\[xla\] [^;]*' "$XL/default.gpu.folded" 2>/dev/null | sort | uniq -c | sort -rn | head -30 >"$XL/default.ops.txt"
row "xla default top operation" "$(head -1 "$XL/default.ops.txt" | cut -c1-150)"

# 2. What the annotations cost: adjacent runs off, on, off, on (the same sinks, records for where
# the step's time goes: scripts/gpu/xla_cost.py); the first off run's figures also say what the
# annotations add (the compile-time share left unmarked without them).
cost_args=()
for c in off on off2 on2; do
  set_=(--set source.cupti.annotations=true)
  case $c in off*) set_=(--set source.cupti.annotations=false) ;; esac
  XENV= xla_run "$c" 18 folded,summary,dump "${set_[@]}" -- "$XJ" --steps 100 "${XSIZE[@]}"
  [ "$c" = off ] && xla_check off "$XJ" control
  cost_args+=("${c%2}=$XRUN_OUT:$XL/$c.out")
done
python3 scripts/gpu/xla_cost.py "${cost_args[@]}" >"$XL/cost.txt" 2>&1
while read -r l; do row "xla annotations cost" "$(echo "$l" | cut -c1-200)"; done <"$XL/cost.txt"
rm -f "$XL"/off*.records.jsonl.gz "$XL"/on*.records.jsonl.gz
# The agent alone with verbose=1 says the time its annotations took on the program's threads.
mkdir -p "$W/out/xla-alone"
CUDA_INJECTION64_PATH=$AGENT NVTX_INJECTION64_PATH=$AGENT XPUPROF_CUPTI_DUMP=$W/out/xla-alone \
  XPUPROF_CUPTI_OPTS="$AGENT_DEFAULT_OPTS,annotations=1,verbose=1" timeout -k 3 18 python3 "$XJ" --steps 100 "${XSIZE[@]}" \
  >"$XL/alone.out" 2>"$W/out/xla-alone.err"
row "xla agent alone, annotations" "rc=$? $(grep -o 'step_ms=[0-9.]*' "$XL/alone.out") $(grep -o 'annotations: [0-9]* NVTX calls taken.*' "$W/out/xla-alone.err" | cut -c1-120)"
grep -v 'nvtx string\|nvtx push\|nvtx pop\|nvtx domain' "$W/out/xla-alone.err" | tail -20 >"$XL/alone.err"
rm -rf "$W/out/xla-alone"

# 3. With XLA_NOCMDBUF=1 (every check PASS in R1): XLA's command buffers off, every operation
# launched from the executable's own thread.
if [ "${XLA_NOCMDBUF:-0}" = 1 ]; then
  XENV=XLA_FLAGS=--xla_gpu_enable_command_buffer= xla_run nocmdbuf 18 folded,summary,dump -- "$XJ" --steps 50 "${XSIZE[@]}"
  xla_check nocmdbuf "$XJ"
fi

# 4. With XLA_FIXTURE=1: the agent alone writing its stream of 3 steps (the CI fixture
# plugins/cupti/tests/fixtures/jax_cmdbuf); verbose=1: the agent also says what XLA passes in the
# extended payloads it cannot read.
if [ "${XLA_FIXTURE:-0}" = 1 ]; then
mkdir -p "$XL/fixture"
CUDA_INJECTION64_PATH=$AGENT NVTX_INJECTION64_PATH=$AGENT XPUPROF_CUPTI_DUMP=$XL/fixture \
  XPUPROF_CUPTI_OPTS="$AGENT_DEFAULT_OPTS,verbose=1" timeout -k 3 20 python3 "$XJ" --steps 3 "${XSIZE[@]}" \
  --ops "$XL/fixture/ops.txt" >"$XL/fixture/stdout.txt" 2>"$XL/fixture/stderr.txt"
row "xla fixture capture" "rc=$? $(ls -l "$XL"/fixture/cupti-*.bin 2>/dev/null | awk '{print $5}' | head -1) bytes"
row "xla unreadable payload" "$(grep -m1 'payload not read' "$XL/fixture/stderr.txt" | cut -c1-200)"
grep 'payload not read\|NVTX calls not read' "$XL/fixture/stderr.txt" >"$XL/fixture/payloads.txt"
gzip -f "$XL"/fixture/cupti-*.bin "$XL/fixture/stderr.txt" 2>/dev/null
fi

# 5. With XLA_TORCH=1: torch.compile max-autotune, its benchmarking launches (issue 33 item 4).
if [ "${XLA_TORCH:-0}" = 1 ]; then
  XENV= xla_run torch-autotune 40 folded,summary,dump -- tests/workloads/torch/autotune.py --steps 20
  xla_check torch-autotune tests/workloads/torch/autotune.py
fi
# What comes back: the dump runs' records (gzipped, for replaying the checks), folded views, the fixture.
du -sh "$XL" | tee -a "$SUMMARY"
