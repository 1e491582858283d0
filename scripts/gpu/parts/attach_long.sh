# Part `attach_long` of scripts/gpu/run-all.sh: issue 25's "Done when" run and its dormancy
# budget, sourced with ROOT, W, CARRY, row. Time budget: <= 120 s with the defaults (the second
# device round); the first round ran LONG_WAIT=110 LONG_SIDE=1 LONG_EBPF=0 in 188 s (<= 240 s).
#
# 1. A PyTorch training loop (plugins/cupti/tests/workloads/attach_train.py: MLP forward, backward,
#    AdamW) is started WITHOUT xpuprof and runs LONG_WAIT s (40; 110 is about 2 minutes from its
#    start with torch's import); then, as a user would,
#      xpuprof attach PID --duration LONG_DUR(10s) --sink flamegraph,summary,perfetto,folded,chrome,pprof
#    (default sources; folded with frames = "all", which check_python_stacks.py reads), LONG_GAP s
#    later a second attach (the agent reused). Checked: check_attach.py (every step inside the
#    window with all its kernels, kernels per step from a `record --capture-range
#    cuda-profiler-api` calibration run of the same loop; the first record within 2 s; step time
#    before/during/after from the loop's own log), check_attach_long.py same (every interior step
#    launched the kernels record saw, by name), stacks (>= 99% of the GPU time under stacks record
#    had, Python lines and native frames), outputs (each file exists and parses),
#    check_python_stacks.py (>= 99% of the GPU time under the loop's Python lines, rooted), the
#    loop's own exit code.
# 2. Dormancy, in the same process. The VM has no hardware counters, and its CPU time per step
#    moves by +-15% from one second to the next, so times cannot decide 1%. What can:
#    - `xpuprof attach --source ebpf` CPU profiles (LONG_EBPF s, 8, at 999 Hz; nothing is put into
#      the process) while it is unprofiled (ending 2 s before the first attach) and while the
#      agent is dormant (from 1 s after the first detach): shares of CPU samples by module
#      (check_attach_long.py modules), which clock phases do not move: no sample may have a CUPTI
#      or agent frame when dormant (3/samples is the 95% bound), and the driver's share must not
#      grow; the first window's own profile (default sources) shows CUPTI and the agent present;
#    - the loop counts its own work per 50 steps (--counters: CPU time, context switches, the
#      agent threads' CPU time, the agent's state; instructions where the machine has hardware
#      counters): check_attach_long.py phases compares unprofiled blocks with dormant ones.
# 3. LONG_SIDE=1 (first round): meanwhile, until LONG_QUIET s before the first attach, three lanes
#    of side jobs share the GPU: `record --every` (part dormant's record_every) and
#    dormant_bench.py processes (check_dormant.py run: control, attach, start-paused; B2 small and
#    ResNet-18 training, a synchronize after every step), summed up by check_dormant.py summary.
#    LONG_SIDE=calib (default) runs only the calibration run beside the loop.
# Knobs: LONG_WAIT LONG_DUR LONG_GAP LONG_TAIL LONG_QUIET LONG_EBPF LONG_SIDE LONG_QUICK,
# LONG_WINDOWS (10: timed windows per phase of each dormant_bench.py process). A third eBPF
# window follows the second detach (its loop time: the 10 s tail and 6 s of slack).
L_D=$W/logs/attach_long; mkdir -p "$L_D"
L_W=$W/attach_long; rm -rf "$L_W"; mkdir -p "$L_W"
ldconfig -p | grep -q 'libelf.so.1 ' || export LD_LIBRARY_PATH=$CARRY/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
if [ "${LONG_QUICK:-0}" = 1 ]; then LW=${LONG_WAIT:-30}; LDUR=${LONG_DUR:-5}; else LW=${LONG_WAIT:-40}; LDUR=${LONG_DUR:-10}; fi
LEB=${LONG_EBPF:-8}; LGAP=${LONG_GAP:-$((LEB + 3))}; LTAIL=${LONG_TAIL:-10}; LQ=${LONG_QUIET:-20}; LSIDE=${LONG_SIDE:-calib}
# The folded view with every frame (check_python_stacks.py wants stacks rooted at a thread's
# start; the default user view folds the interpreter's start-up away); the eBPF windows sample
# at 999 Hz.
printf '[sink.folded]\nframes = "all"\n' >"$L_W/all.toml"
printf '[sink.folded]\nframes = "all"\n[source.ebpf]\nsample_hz = 999\n' >"$L_W/ebpf.toml"
mono() { python3 -c 'import time; print(time.monotonic_ns())'; }
pin() { [ "$(nproc)" -ge 16 ] && command -v taskset >/dev/null && echo "taskset -c $1"; }

if [ ! -x "$CARRY/xpuprof" ]; then
  row "attach_long" "skipped: no $CARRY/xpuprof"
else
  T=plugins/cupti/tests/workloads/attach_train.py
  t_start=$(date +%s)
  # The loop: alone on cores 12-15 when there are 16.
  $(pin 12-15) python3 "$T" --seconds $((LW + 2 * LDUR + LGAP + LTAIL + 6)) --counters 50 --blocking-sync \
    --step-log "$L_W/steps.log" >"$L_W/train.out" 2>"$L_W/train.err" &
  TP=$!
  for _ in $(seq 1 120); do grep -q '^ready' "$L_W/train.out" && break; kill -0 "$TP" 2>/dev/null || break; sleep 1; done
  t_ready=$(date +%s)
  deadline=$((t_ready + LW - LQ))
  # One lane of dormant_bench.py processes: modes cycled from offset $3, until the deadline.
  # A lane stops after two failed processes in a row.
  lane() {  # workload, cores, first mode index, BENCH_CPU
    local modes=(control attach paused) k=$3 n=0 failed=0 p
    p=$(pin "$2")
    while [ $(( $(date +%s) + 30 )) -le $deadline ] && [ $failed -lt 2 ]; do
      m=${modes[$((k % 3))]}; k=$((k + 1)); n=$((n + 1))
      if DORMANT_SYNC_STEPS=1 DORMANT_WINDOWS=${LONG_WINDOWS:-10} BENCH_CPU=${p:+$4} timeout $((deadline - $(date +%s) + 15)) python3 scripts/gpu/check_dormant.py run $m "$1" \
        "$L_W/bench-$1-$m-$n" "$CARRY/xpuprof" "$CARRY" $p >>"$L_W/runs-$1-$3.txt" 2>>"$L_D/runs.err"; then
        failed=0
      else
        echo "DORMANTRUN mode=$m workload=$1 error=exit-$? n=$n" >>"$L_W/runs-$1-$3.txt"
        failed=$((failed + 1))
        tail -3 "$L_W/bench-$1-$m-$n"/*.log >>"$L_D/runs.err" 2>/dev/null
      fi
      rm -rf "$L_W/bench-$1-$m-$n/attach" "$L_W/bench-$1-$m-$n/rec"
    done
  }
  if [ "$LSIDE" = calib ]; then
    "$CARRY/xpuprof" --plugin-dir "$CARRY" -c "$L_W/all.toml" record --capture-range cuda-profiler-api --source cupti --sink chrome,folded -o "$L_W/calib" -- \
      python3 "$T" --calibrate 50 --blocking-sync --step-log "$L_W/calib-steps.log" >"$L_W/calib.out" 2>"$L_D/calib.err"
  elif [ "$LSIDE" = 1 ]; then
    (
      "$CARRY/xpuprof" --plugin-dir "$CARRY" -c "$L_W/all.toml" record --capture-range cuda-profiler-api --source cupti --sink chrome,folded -o "$L_W/calib" -- \
        python3 "$T" --calibrate 50 --blocking-sync --step-log "$L_W/calib-steps.log" >"$L_W/calib.out" 2>"$L_D/calib.err"
      DORMANT_ONLY=record_every
      # shellcheck source=/dev/null
      . "$ROOT/scripts/gpu/parts/dormant.sh"
      lane b2small 2-4 0 2
    ) &
    S1=$!
    lane b2small 5-7 1 5 &
    S2=$!
    lane resnet 8-10 2 8 &
    S3=$!
    wait $S1 $S2 $S3
  fi
  : >"$L_W/times.txt"
  # eBPF-only CPU profile of LEB s (nothing loaded into the process): $1 = its name.
  ebpf_window() {
    local t0 erc; t0=$(mono)
    "$CARRY/xpuprof" --plugin-dir "$CARRY" -c "$L_W/ebpf.toml" attach "$TP" --source ebpf --duration ${LEB}s \
      --sink pprof,folded -v -o "$L_W/$1" >"$L_D/$1.out" 2>"$L_D/$1.err"
    erc=$?
    echo "ebpf $1 $t0 $(mono) $erc" >>"$L_W/times.txt"
  }
  if [ "$LEB" -gt 0 ]; then
    now=$(date +%s); [ $((t_ready + LW - LEB - 3)) -gt "$now" ] && sleep $((t_ready + LW - LEB - 3 - now))
    ebpf_window ebpf-unprofiled
  fi
  now=$(date +%s); [ $((t_ready + LW)) -gt "$now" ] && sleep $((t_ready + LW - now))
  age=$(( $(date +%s) - t_start ))
  for k in 1 2; do
    o=$L_W/attach$k; t0=$(mono)
    "$CARRY/xpuprof" --plugin-dir "$CARRY" -c "$L_W/all.toml" attach "$TP" --duration ${LDUR}s \
      --sink flamegraph,summary,perfetto,folded,chrome,pprof -v -o "$o" >"$L_D/attach$k.out" 2>"$L_D/attach$k.err"
    rc=$?
    echo "attach $k $t0 $(mono) $rc" >>"$L_W/times.txt"
    if [ $k = 1 ]; then
      t_gap=$(date +%s)
      if [ "$LEB" -gt 0 ]; then sleep 1; ebpf_window ebpf-dormant; fi
      now=$(date +%s); [ $((t_gap + LGAP)) -gt "$now" ] && sleep $((t_gap + LGAP - now))
    elif [ "$LEB" -gt 0 ]; then
      sleep 1; ebpf_window ebpf-dormant2  # dormant again, after the second window
    fi
  done
  wait "$TP"; trc=$?
  # Kernels per step: the calibration's (record of 50 steps), else the windows' most common count.
  n=$(python3 -c "import json,sys; t=json.load(open(sys.argv[1])); e=t.get('traceEvents',t) if isinstance(t,dict) else t; print(sum(1 for x in e if x.get('cat')=='kernel'))" "$L_W/calib/trace.json" 2>/dev/null)
  if [ -n "$n" ] && [ $((n % 50)) = 0 ] && [ "$n" -gt 0 ]; then KPS=$((n / 50)); else KPS=auto; fi
  row "attach_long calibration (record)" "kernels=${n:-none} of 50 steps: $KPS per step"
  row "attach_long loop" "exit $trc (own code), $(tail -1 "$L_W/train.out"), $(grep -m1 '^sync' "$L_W/train.out"), $(grep -m1 '^counters' "$L_W/train.out"), ran $(python3 -c "import sys; s=[l.split() for l in open(sys.argv[1]) if l.startswith('step ')]; print(f'{(int(s[-1][3])-int(s[0][2]))/1e9:.0f}')" "$L_W/steps.log" 2>/dev/null) s; first attach ${age} s after its start"
  while read -r _ k t0 t1 arc; do
    o=$L_W/attach$k
    how=$(grep -o 'loaded the agent into\|reused the agent already loaded in' "$L_D/attach$k.err" | head -1)
    row "attach_long $k ($how)" "rc=$arc took $(( (t1 - t0) / 1000000 )) ms $(python3 scripts/gpu/check_attach.py "$o/trace.json" "$L_W/steps.log" "$KPS" "$LDUR" "$t0" 2>&1 | tail -1)"
    row "attach_long $k same as record" "$(python3 scripts/gpu/check_attach_long.py same "$L_W/calib/trace.json" "$L_W/calib-steps.log" "$o/trace.json" "$L_W/steps.log" 2>&1 | tail -1)"
    row "attach_long $k stacks as record" "$(python3 scripts/gpu/check_attach_long.py stacks "$L_W/calib" "$o" 2>&1 | tail -1)"
    row "attach_long $k outputs" "$(python3 scripts/gpu/check_attach_long.py outputs "$o" 2>&1 | tail -1)"
    # The GPU view (profile.gpu.folded beside the CPU samples of the default sources) is what
    # check_python_stacks.py reads as profile.folded.
    mkdir -p "$o/gpu"; [ -f "$o/profile.gpu.folded" ] && ln -sf ../profile.gpu.folded "$o/gpu/profile.folded" || ln -sf ../profile.folded "$o/gpu/profile.folded"
    if [ -s "$o/gpu/profile.folded" ]; then
      row "attach_long $k python lines" "$(python3 scripts/gpu/check_python_stacks.py "$o/gpu" "$T" --min 99 2>&1 | tail -1)"
    else
      row "attach_long $k python lines" "FAIL no folded GPU view in $o"
    fi
    cp "$o/summary.txt" "$L_D/attach$k-summary.txt" 2>/dev/null
    grep -m3 'sources\|source ' "$L_D/attach$k.err" | sed "s/^/attach$k: /" >>"$L_D/sources.txt"
  done < <(grep '^attach ' "$L_W/times.txt")
  if [ "$LEB" -gt 0 ]; then
    row "attach_long CPU by module (eBPF)" "$(python3 scripts/gpu/check_attach_long.py modules "$L_W/ebpf-unprofiled" "$L_W/ebpf-dormant" "$L_W/attach1" "$L_W/ebpf-dormant2" 2>&1 | tail -1)"
  fi
  row "attach_long counted, one process" "$(python3 scripts/gpu/check_attach_long.py phases "$L_W/steps.log" "$L_W/times.txt" "$LQ" 2>&1 | tail -1)"
  grep '^counters' "$L_W/steps.log" >"$L_D/counters.txt"
  gzip -c "$L_W/steps.log" >"$L_D/steps.log.gz"
  cp "$L_W/times.txt" "$L_W/train.out" "$L_D/" 2>/dev/null
  if [ "$LSIDE" = 1 ]; then
    cat "$L_W"/runs-*.txt >"$L_D/runs.txt" 2>/dev/null
    python3 scripts/gpu/check_dormant.py summary "$L_D/runs.txt" 2>&1 | while IFS= read -r line; do
      row "${line%%:*}" "${line#*: }"
    done
  fi
fi
