# Part `dormant` of scripts/gpu/run-all.sh (issue 25's budgets), sourced with ROOT, W, CARRY, row.
# All of it takes about 5 minutes; part `attach_long` (scripts/gpu/parts/attach_long.sh, <= 240 s)
# runs its record_every section and the dormant_bench.py processes, counted, beside the long
# attach run: name `attach_long` alone for issue 25's device round.
# For each workload (B2 small inference and a ResNet-18 training step with backward), rounds of
# three processes of tests/workloads/torch/dormant_bench.py, which times windows of steps before
# and after a pause in one process (steps in calibration-loop units, see the script):
#   control  nothing happens in the pause (the method's drift);
#   attach   `xpuprof attach --duration 1s` in the pause: before = no agent, after = the agent
#            loaded and dormant (CUPTI detached); also attach-to-first-record, --duration expiry
#            to xpuprof done, and expiry to cuptiFinalize in the process;
#   paused   under `xpuprof record --start-paused`, an `xpuprof trigger --duration 1s` in the
#            pause: before = dormant from the start, after = dormant after a window.
# scripts/gpu/check_dormant.py prints the rows (budgets: dormant <= 1.01x unprofiled, detach
# <= 1 s, first record <= 2 s). Knobs: DORMANT_ROUNDS (2), DORMANT_WORKLOADS (b2small resnet).
# About 20 s a process: 12 processes, 4 minutes; then attach --every, attach --tree on a launcher
# whose worker starts later, and NVTX after an attach (about 1 minute together).
# DORMANT_ONLY=LIST runs only the checks named (bench every record_every tree nvtx other);
# DORMANT_ONLY=every (`DORMANT_ONLY=every scripts/gpu/run-all.sh dormant`) runs only attach
# --every, in under 60 s (torch's start-up, a 12 s loop): one PASS/FAIL row per kept window with
# its kernel count; DORMANT_ONLY="every record_every" adds record --every (about 25 s more).
D=$W/logs/dormant; mkdir -p "$D"
DW=$W/dormant; rm -rf "$DW"; mkdir -p "$DW"
ldconfig -p | grep -q 'libelf.so.1 ' || export LD_LIBRARY_PATH=$CARRY/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
dormant_runs() { [ -z "${DORMANT_ONLY:-}" ] || [[ " $DORMANT_ONLY " == *" $1 "* ]]; }
if [ -x "$CARRY/xpuprof" ] && dormant_runs bench; then
  DPIN=""; command -v taskset >/dev/null && DPIN="taskset -c 3-9"
  : >"$D/runs.txt"
  for wl in ${DORMANT_WORKLOADS:-b2small resnet}; do
    for r in $(seq 1 "${DORMANT_ROUNDS:-2}"); do
      for m in control attach paused; do
        BENCH_CPU=${DPIN:+2} timeout 120 python3 scripts/gpu/check_dormant.py run $m "$wl" "$DW/$wl-$m-$r" \
          "$CARRY/xpuprof" "$CARRY" $DPIN >>"$D/runs.txt" 2>>"$D/runs.err" \
          || echo "DORMANTRUN mode=$m workload=$wl error=exit-$? round=$r" >>"$D/runs.txt"
        for f in "$DW/$wl-$m-$r"/*.log; do [ -f "$f" ] && cp "$f" "$D/$(basename "${f%.log}")-$r.log"; done
        rm -rf "$DW/$wl-$m-$r/attach" "$DW/$wl-$m-$r/rec"
      done
    done
  done
  python3 scripts/gpu/check_dormant.py summary "$D/runs.txt" 2>&1 | while IFS= read -r line; do
    row "${line%%:*}" "${line#*: }"
  done
elif [ ! -x "$CARRY/xpuprof" ]; then
  row "dormant" "skipped: no $CARRY/xpuprof"
fi

# One row per kept window of a continuous run in $1 (out/ and steps.log), labelled $2:
# check_attach.py's PASS/FAIL with the window's kernel count, its length, the devices its trace names.
every_rows() {
  n=0
  for d in "$1"/out/*Z; do
    [ -d "$d" ] || continue
    n=$((n + 1))
    gpus=$(python3 -c "import json,sys; t=json.load(open(sys.argv[1])); e=t.get('traceEvents',t) if isinstance(t,dict) else t; print(';'.join(sorted({x['args']['name'] for x in e if x.get('ph')=='M' and x.get('name')=='process_name' and str(x.get('args',{}).get('name','')).startswith('GPU ')})) or 'none')" "$d/trace.json" 2>/dev/null)
    # The window's length: 0.5 s, or less when the loop ended inside it (windows.json's start and
    # the steps' CLOCK_MONOTONIC ends are one clock); none when it opened after the last step.
    wlen=$(python3 - "$1/out/windows.json" "$(basename "$d")" "$1/steps.log" 2>/dev/null <<'PY'
import json, sys
w = [x for x in json.load(open(sys.argv[1])) if x.get("dir") == sys.argv[2]]
ends = [int(l.split()[3]) for l in open(sys.argv[3]) if l.startswith("step ") and len(l.split()) == 4]
left = (max(ends) - w[0]["start_ns"]) / 1e9 if w and ends else 0.5
print(f"{min(0.5, left):.3f}" if left > 0.05 else "after")
PY
)
    if [ "$wlen" = after ]; then
      row "$2 window $n" "n/a: opened after the loop's last step (the process was exiting) devices=${gpus:-?}"
      continue
    fi
    row "$2 window $n" "$(python3 scripts/gpu/check_attach.py "$d/trace.json" "$1/steps.log" auto "${wlen:-0.5}" 2>&1 | tail -1) window=${wlen:-0.5}s devices=${gpus:-?}"
  done
}

# attach --every on a running PyTorch training loop: windows of 0.5 s every 2 s until the loop
# ends (12 s), the newest 2 kept; each kept window must hold every step inside it with all its kernels
# (check_attach.py, kernels per step `auto`), nothing outside it (its kernels span at most the
# window and a step), and the loop must run on to its own end. Each window's row also names the
# devices its trace defines: the H200 as the driver names it (the agent's description), not an
# ordinal-only `CUDA device 0` (work released at the window's end with no description).
if [ -x "$CARRY/xpuprof" ] && dormant_runs every; then
  T=plugins/cupti/tests/workloads/attach_train.py
  E=$W/dormant/every; rm -rf "$E"; mkdir -p "$E"
  python3 "$T" --seconds 12 --step-log "$E/steps.log" >"$E/train.out" 2>"$E/train.err" &
  TP=$!
  for _ in $(seq 1 120); do grep -q '^ready' "$E/train.out" && break; kill -0 "$TP" 2>/dev/null || break; sleep 1; done
  timeout 60 "$CARRY/xpuprof" --plugin-dir "$CARRY" attach "$TP" --every 2s --duration 500ms --keep 2 \
    --source cupti --sink chrome,summary -v -o "$E/out" >"$D/every.out" 2>"$D/every.err"
  rc=$?
  wait "$TP"; trc=$?
  every_rows "$E" "attach --every"
  [ $n -eq 2 ] && [ -f "$E/out/windows.json" ] && v=PASS || v=FAIL
  row "attach --every 2s --duration 500ms --keep 2" "$v rc=$rc kept=$n loop rc=$trc $(tail -1 "$E/train.out") $(grep -c 'reused the agent\|loaded the agent' "$D/every.err") injections"
  cp "$E/out/windows.json" "$D/every-windows.json" 2>/dev/null
fi

# record --every with the cupti source (DORMANT_ONLY=record_every, about 25 s more): the same loop
# started under xpuprof (the driver starts the agent at its cuInit), windows of 0.5 s every 2 s,
# the newest 2 kept, each checked as above.
if [ -x "$CARRY/xpuprof" ] && dormant_runs record_every; then
  T=plugins/cupti/tests/workloads/attach_train.py
  R=$W/dormant/record-every; rm -rf "$R"; mkdir -p "$R"
  timeout 60 "$CARRY/xpuprof" --plugin-dir "$CARRY" record --every 2s --duration 500ms --keep 2 \
    --source cupti --sink chrome,summary -v -o "$R/out" -- python3 "$T" --seconds 10 --step-log "$R/steps.log" \
    >"$R/train.out" 2>"$D/record-every.err"
  rc=$?
  every_rows "$R" "record --every"
  [ $n -eq 2 ] && [ $rc -eq 0 ] && v=PASS || v=FAIL
  row "record --every 2s --duration 500ms --keep 2" "$v rc=$rc kept=$n $(tail -1 "$R/train.out")"
fi

# attach --tree on a launcher that starts its PyTorch worker only after the attach: the worker is
# followed (armed before its cuInit, as its torch import takes seconds), so every logged step of
# it must be in the profile with all its kernels (the warm-up's kernels come before the first
# logged step: shown as stray), and its NVTX range around each step (armed before its first NVTX
# call, NVTX loads the agent).
# NVTX `train_step` ranges (async slices) in a chrome trace.
nvtx_ranges() {
  python3 -c "import json,sys; t=json.load(open(sys.argv[1])); e=t.get('traceEvents',t) if isinstance(t,dict) else t; print(sum(1 for x in e if x.get('ph')=='b' and x.get('name')=='train_step'))" "$1" 2>/dev/null
}
if [ -x "$CARRY/xpuprof" ] && dormant_runs tree; then
  T=plugins/cupti/tests/workloads/attach_train.py
  F=$W/dormant/follow; rm -rf "$F"; mkdir -p "$F"
  sh -c "while [ ! -e '$F/go' ]; do sleep 0.05; done; python3 '$T' --seconds 4 --nvtx --step-log '$F/steps.log' >'$F/train.out' 2>'$F/train.err'; exit 7" &
  LP=$!
  timeout 120 "$CARRY/xpuprof" --plugin-dir "$CARRY" attach "$LP" --tree --source cupti --sink chrome,summary -v -o "$F/out" \
    >"$D/follow.out" 2>"$D/follow.err" &
  XP=$!
  for _ in $(seq 1 100); do grep -q 'attached to process' "$D/follow.err" && break; kill -0 "$XP" 2>/dev/null || break; sleep 0.1; done
  touch "$F/go"
  wait "$XP"; rc=$?
  wait "$LP"; lrc=$?
  logged=$(grep -c '^step' "$F/steps.log" 2>/dev/null)
  res=$(python3 scripts/gpu/check_attach.py "$F/out/trace.json" "$F/steps.log" auto 4 2>&1 | tail -1)
  got=$(echo "$res" | sed -n 's/.* steps=\([0-9]*\) interior=\([0-9]*\)\/\([0-9]*\).*/\1 \2 \3/p')
  read -r s_in s_ok s_all <<<"$got"
  nvtx=$(nvtx_ranges "$F/out/trace.json")
  [ "${s_in:-0}" = "${logged:-x}" ] && [ "${s_ok:-0}" = "${s_all:-x}" ] && [ "${nvtx:-0}" = "${logged:-x}" ] && v=PASS || v=FAIL
  row "attach --tree, worker started after" "$v rc=$rc launcher rc=$lrc steps in profile ${s_in:-?} of $logged logged, NVTX ranges ${nvtx:-?}; $(grep -c 'started after the attach' "$D/follow.err") followed; check_attach (stray = warm-up): $res"
fi

# NVTX after a late attach: a running loop whose NVTX calls began before the attach (each library
# copy of NVTX chose "no injection" at its first call): the attach records its kernels but no NVTX
# range is expected. And whether any NVTX table could be found by symbol: the libraries of
# PyTorch and CUDA that carry NVTX, and how many name nvtxGlobals in a symbol table.
if [ -x "$CARRY/xpuprof" ] && dormant_runs nvtx; then
  T=plugins/cupti/tests/workloads/attach_train.py
  N=$W/dormant/nvtx; rm -rf "$N"; mkdir -p "$N"
  python3 "$T" --seconds 12 --nvtx --step-log "$N/steps.log" >"$N/train.out" 2>"$N/train.err" &
  TP=$!
  for _ in $(seq 1 120); do grep -q '^ready' "$N/train.out" && break; kill -0 "$TP" 2>/dev/null || break; sleep 1; done
  sleep 2
  timeout 60 "$CARRY/xpuprof" --plugin-dir "$CARRY" attach "$TP" --duration 2s --source cupti --sink chrome -v -o "$N/out" \
    >"$D/nvtx.out" 2>"$D/nvtx.err"
  rc=$?
  wait "$TP"
  k=$(python3 -c "import json,sys; t=json.load(open(sys.argv[1])); e=t.get('traceEvents',t) if isinstance(t,dict) else t; print(sum(1 for x in e if x.get('cat')=='kernel'))" "$N/out/trace.json" 2>/dev/null)
  row "attach to a loop already using NVTX" "rc=$rc kernels=${k:-?} NVTX ranges=$(nvtx_ranges "$N/out/trace.json") (0 expected: NVTX chose no injection at its first call)"
  python3 - >"$D/nvtx-symbols.txt" 2>&1 <<'PY'
import glob, mmap, os, shutil, subprocess
import torch
if shutil.which("nm") is None:
    raise SystemExit("NVTX_SYMBOLS not checked: no nm (binutils) on this machine")
dirs = [os.path.join(os.path.dirname(torch.__file__), "lib")]
dirs += glob.glob(os.path.join(os.path.dirname(os.path.dirname(torch.__file__)), "nvidia", "*", "lib"))
with_nvtx = named = named_dyn = 0
for d in dirs:
    for lib in sorted(glob.glob(os.path.join(d, "*.so*"))):
        try:
            with open(lib, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
                if m.find(b"NVTX_INJECTION64_PATH") < 0:
                    continue
        except (OSError, ValueError):
            continue
        with_nvtx += 1
        sym = subprocess.run(["nm", lib], capture_output=True, text=True).stdout
        dyn = subprocess.run(["nm", "-D", lib], capture_output=True, text=True).stdout
        a, b = "nvtxGlobals" in sym, "nvtxGlobals" in dyn
        named += a
        named_dyn += b
        print(f"{os.path.basename(lib)} symtab={int(a)} dynsym={int(b)}")
print(f"NVTX_SYMBOLS libraries_with_nvtx={with_nvtx} nvtxGlobals_in_symtab={named} in_dynsym={named_dyn}")
PY
  row "NVTX tables findable by symbol" "$(grep '^NVTX_SYMBOLS' "$D/nvtx-symbols.txt" || tail -1 "$D/nvtx-symbols.txt")"
fi

# Refused before anything is loaded: a loop started with another tool's CUDA injection
# (run-all's libcupti_alone.so, a CUPTI client as Nsight Systems' is); the loop must run on.
if [ -x "$CARRY/xpuprof" ] && [ -f "$W/bin/libcupti_alone.so" ] && dormant_runs other; then
  T=plugins/cupti/tests/workloads/attach_train.py
  R=$W/dormant/other; rm -rf "$R"; mkdir -p "$R"
  CUDA_INJECTION64_PATH=$W/bin/libcupti_alone.so python3 "$T" --seconds 6 >"$R/train.out" 2>"$R/train.err" &
  TP=$!
  for _ in $(seq 1 120); do grep -q '^ready' "$R/train.out" && break; kill -0 "$TP" 2>/dev/null || break; sleep 1; done
  timeout 60 "$CARRY/xpuprof" --plugin-dir "$CARRY" attach "$TP" --duration 1s --source cupti --sink folded -o "$R/out" \
    >"$D/other.out" 2>"$D/other.err"
  rc=$?
  wait "$TP"; trc=$?
  grep -q 'owns CUPTI' "$D/other.err" && [ $rc -ne 0 ] && [ $trc -eq 0 ] && v=PASS || v=FAIL
  row "attach refuses another tool's process" "$v rc=$rc loop rc=$trc $(grep -o 'started with CUDA_INJECTION64_PATH=[^:]*' "$D/other.err" | head -1)"
fi
