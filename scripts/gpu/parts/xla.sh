# shellcheck shell=bash
# ---- xla: JAX/XLA under xpuprof (issue 33) ----------------------------------------------------
# Sourced by run-all.sh (`run-all.sh xla`). tests/workloads/jax/train.py (a jitted MLP step of
# known operations in named scopes) is run unprofiled (its optimized HLO, the lines of its
# operations), under the cupti agent alone writing its wire stream (the fixture the CI decoding
# tests replay), and under `xpuprof --source ebpf,cupti` with every output; then with XLA's
# command buffers off, and torch.compile's max-autotune. What comes back: $W/logs/xla/.
# XLA_QUICK=1 (the default): only parts/xla_quick.sh (one small JAX loop with annotation frames,
# under 60 s); XLA_QUICK=0: everything above (about 70 s, more when runs crash).
XL=$W/logs/xla
rm -rf "$XL"; mkdir -p "$XL"
XJ=tests/workloads/jax/train.py
ldconfig -p | grep -q 'libelf.so.1 ' || export LD_LIBRARY_PATH=$CARRY/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
if [ "${XLA_QUICK:-1}" = 1 ]; then
  # shellcheck source=/dev/null
  . "$ROOT/scripts/gpu/parts/xla_quick.sh"
  return 0 2>/dev/null || true
fi
{
  python3 -c 'import jax, jaxlib; print("jax", jax.__version__, "jaxlib", jaxlib.__version__, jax.devices())'
  pip list 2>/dev/null | grep -i -E '^(jax|nvidia|torch)'
} >"$XL/versions.txt" 2>&1
row "xla versions" "$(head -1 "$XL/versions.txt" | cut -c1-120)"

# Unprofiled: the step's HLO (op names, metadata), the marked lines, the wall time.
s=$(date +%s.%N)
timeout 150 python3 "$XJ" --steps 100 --hlo "$XL/step.hlo.txt" --ops "$XL/ops.txt" >"$XL/plain.out" 2>"$XL/plain.err"
rc=$?
row "xla unprofiled 100 steps" "rc=$rc $(python3 -c "import time; print(f'{time.time()-$s:.1f} s')") $(tail -1 "$XL/plain.out" | cut -c1-80)"

# The agent alone with annotation frames on, its wire stream kept (small sizes: the CI fixture).
mkdir -p "$XL/wire-annotated"
CUDA_INJECTION64_PATH=$AGENT NVTX_INJECTION64_PATH=$AGENT XPUPROF_CUPTI_DUMP=$XL/wire-annotated \
  XPUPROF_CUPTI_OPTS="$AGENT_DEFAULT_OPTS,verbose=1,annotations=1" \
  timeout 150 python3 -X faulthandler "$XJ" --steps 3 --batch 64 --width 256 --ops "$XL/wire-ops.txt" \
  >"$XL/wire-annotated.out" 2>"$XL/wire-annotated.err"
rc=$?
# Where it ended (R1: SIGSEGV with annotations on): the agent's last traced ranges, Python's fault report.
tail -40 "$XL/wire-annotated.err" | cut -c1-300 >"$XL/wire-annotated.tail"
row "xla agent wire stream annotated" "rc=$rc $(ls -la "$XL"/wire-annotated/ 2>/dev/null | awk '/cupti-/ {print $5}' | tr '\n' ' ')bytes"
# If it crashed: is it the NVTX callbacks themselves (the capture-range markers take the same
# ones, with annotations off) or the annotation frames?
if [ "$rc" -ne 0 ]; then
  CUDA_INJECTION64_PATH=$AGENT NVTX_INJECTION64_PATH=$AGENT XPUPROF_CUPTI_OPTS="$AGENT_DEFAULT_OPTS,range=nvtx:no such range@TSL,dormant=pause" \
    timeout 150 python3 -X faulthandler "$XJ" --steps 3 --batch 64 --width 256 >"$XL/markers-only.out" 2>"$XL/markers-only.err"
  row "xla NVTX callbacks without annotations" "rc=$? $(tail -1 "$XL/markers-only.out" | cut -c1-60)"
fi
for d in wire-annotated; do
  for f in "$XL/$d"/cupti-*.bin; do
    [ -f "$f" ] || continue
    "$CARRY/xpuprof" decode-agent-dump "$f" 2>&1 | gzip >"$f.jsonl.gz"
    gzip -f "$f"
  done
done

# xpuprof with both sources and every output (dump sink: every record, for the design).
xla_run() {  # name, config file or "", steps, extra env...
  local n=$1 cfg=$2 steps=$3; shift 3
  local o=$W/out/xla-$n c=()
  rm -rf "$o"
  [ -n "$cfg" ] && c=(-c "$cfg")
  s=$(date +%s.%N)
  env "$@" timeout 150 "$CARRY/xpuprof" --plugin-dir "$CARRY" ${c[@]+"${c[@]}"} --source ebpf,cupti \
    --sink folded,chrome,summary,dump,archive -o "$o" -- python3 "$XJ" --steps "$steps" >"$XL/$n.out" 2>"$XL/$n.err"
  local rc=$?
  local dt; dt=$(python3 -c "import time; print(f'{time.time()-$s:.1f}')")
  cp "$o/profile.gpu.folded" "$XL/$n.gpu.folded" 2>/dev/null; cp "$o/profile.cpu.folded" "$XL/$n.cpu.folded" 2>/dev/null
  for f in "$o"/summary.*; do [ -f "$f" ] && cp "$f" "$XL/$n.$(basename "$f")"; done
  if [ "$n" != nocmdbuf ]; then
    gzip -c "$o/records.jsonl" >"$XL/$n.records.jsonl.gz" 2>/dev/null
    gzip -c "$o/trace.json" >"$XL/$n.trace.json.gz" 2>/dev/null
  fi
  # The archive, to replay the real records through changed sinks on the development machine.
  [ "$n" = annotated ] && (cd "$o" && tar czf "$XL/$n.archive.tar.gz" archive 2>/dev/null)
  row "xla xpuprof $n ($steps steps)" "rc=$rc ${dt}s $(grep -o 'device ops: .*' "$XL/$n.err" | head -1 | cut -c1-100)"
  row "xla graphs $n" "$(grep -o '[0-9]* replayed kernels of child graphs[^,]*, joined[^:]*\|[0-9]* replayed kernels of child graphs show no capture stack' "$XL/$n.err" | tr '\n' ';' | cut -c1-200)"
  python3 scripts/gpu/check_xla.py "$o" "$XL/ops.txt" "$XJ" >"$XL/$n.check.txt" 2>&1
  row "xla check $n" "$(tail -1 "$XL/$n.check.txt" | cut -c1-200)"
}
printf '[source.cupti]\nannotations = true\n' >"$W/xla-annotations.toml"
xla_run default "" 50
# The agent's annotation frames (XLA operations, compile-time work): [source.cupti] annotations.
xla_run annotated "$W/xla-annotations.toml" 100
# XLA's command buffers off: every thunk launched from the executable's own thread.
xla_run nocmdbuf "$W/xla-annotations.toml" 50 XLA_FLAGS=--xla_gpu_enable_command_buffer=

# torch.compile max-autotune: its benchmarking launches (issue 33 item 4).
o=$W/out/xla-torch-autotune; rm -rf "$o"
timeout 150 "$CARRY/xpuprof" --plugin-dir "$CARRY" --source ebpf,cupti --sink folded,summary,dump -o "$o" -- \
  python3 tests/workloads/torch/autotune.py --steps 50 >"$XL/torch-autotune.out" 2>"$XL/torch-autotune.err"
rc=$?
cp "$o/profile.gpu.folded" "$XL/torch-autotune.gpu.folded" 2>/dev/null
gzip -c "$o/records.jsonl" >"$XL/torch-autotune.records.jsonl.gz" 2>/dev/null
row "xla torch max-autotune" "rc=$rc $(tail -1 "$XL/torch-autotune.out" | cut -c1-80)"
python3 scripts/gpu/check_xla.py "$o" "" tests/workloads/torch/autotune.py >"$XL/torch-autotune.check.txt" 2>&1
row "xla check torch-autotune" "$(tail -1 "$XL/torch-autotune.check.txt" | cut -c1-200)"
du -sh "$XL" | tee -a "$SUMMARY"
