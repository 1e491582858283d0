# Part `dormant` of scripts/gpu/run-all.sh (issue 25's budgets), sourced with ROOT, W, CARRY, row.
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
# About 20 s a process: 12 processes, 4 minutes.
if [ -x "$CARRY/xpuprof" ]; then
  D=$W/logs/dormant; mkdir -p "$D"
  DW=$W/dormant; rm -rf "$DW"; mkdir -p "$DW"
  ldconfig -p | grep -q 'libelf.so.1 ' || export LD_LIBRARY_PATH=$CARRY/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
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
else
  row "dormant" "skipped: no $CARRY/xpuprof"
fi

# attach --every on a running PyTorch training loop: windows of 0.5 s every 2 s until the loop
# ends, the newest 2 kept; each kept window must hold every step inside it with all its kernels
# (check_attach.py, kernels per step `auto`), nothing outside it (its kernels span at most the
# window and a step), and the loop must run on to its own end.
if [ -x "$CARRY/xpuprof" ]; then
  T=plugins/cupti/tests/workloads/attach_train.py
  E=$W/dormant/every; rm -rf "$E"; mkdir -p "$E"
  python3 "$T" --seconds 10 --step-log "$E/steps.log" >"$E/train.out" 2>"$E/train.err" &
  TP=$!
  for _ in $(seq 1 120); do grep -q '^ready' "$E/train.out" && break; sleep 1; done
  timeout 60 "$CARRY/xpuprof" --plugin-dir "$CARRY" attach "$TP" --every 2s --duration 500ms --keep 2 \
    --source cupti --sink chrome,summary -v -o "$E/out" >"$D/every.out" 2>"$D/every.err"
  rc=$?
  wait "$TP"; trc=$?
  n=0
  for d in "$E"/out/*Z; do
    [ -d "$d" ] || continue
    n=$((n + 1))
    row "attach --every window $n" "$(python3 scripts/gpu/check_attach.py "$d/trace.json" "$E/steps.log" auto 0.5 2>&1 | tail -1)"
  done
  [ $n -eq 2 ] && [ -f "$E/out/windows.json" ] && v=PASS || v=FAIL
  row "attach --every 2s --duration 500ms --keep 2" "$v rc=$rc kept=$n loop rc=$trc $(tail -1 "$E/train.out") $(grep -c 'reused the agent\|loaded the agent' "$D/every.err") injections"
  cp "$E/out/windows.json" "$D/every-windows.json" 2>/dev/null
fi

# attach --tree on a launcher that starts its PyTorch worker only after the attach: the worker is
# followed (armed before its cuInit, as its torch import takes seconds), so every logged step of
# it must be in the profile with all its kernels (the warm-up's kernels come before the first
# logged step: shown as stray).
if [ -x "$CARRY/xpuprof" ]; then
  T=plugins/cupti/tests/workloads/attach_train.py
  F=$W/dormant/follow; rm -rf "$F"; mkdir -p "$F"
  sh -c "while [ ! -e '$F/go' ]; do sleep 0.05; done; python3 '$T' --seconds 4 --step-log '$F/steps.log' >'$F/train.out' 2>'$F/train.err'; exit 7" &
  LP=$!
  timeout 120 "$CARRY/xpuprof" --plugin-dir "$CARRY" attach "$LP" --tree --source cupti --sink chrome,summary -v -o "$F/out" \
    >"$D/follow.out" 2>"$D/follow.err" &
  XP=$!
  for _ in $(seq 1 100); do grep -q 'attached to process' "$D/follow.err" && break; sleep 0.1; done
  touch "$F/go"
  wait "$XP"; rc=$?
  wait "$LP"; lrc=$?
  logged=$(grep -c '^step' "$F/steps.log" 2>/dev/null)
  res=$(python3 scripts/gpu/check_attach.py "$F/out/trace.json" "$F/steps.log" auto 4 2>&1 | tail -1)
  got=$(echo "$res" | sed -n 's/.* steps=\([0-9]*\) interior=\([0-9]*\)\/\([0-9]*\).*/\1 \2 \3/p')
  read -r s_in s_ok s_all <<<"$got"
  [ "${s_in:-0}" = "${logged:-x}" ] && [ "${s_ok:-0}" = "${s_all:-x}" ] && v=PASS || v=FAIL
  row "attach --tree, worker started after" "$v rc=$rc launcher rc=$lrc steps in profile ${s_in:-?} of $logged logged; $(grep -c 'started after the attach' "$D/follow.err") followed; check_attach (stray = warm-up): $res"
fi
