# Part `overhead` (issue 29): real-workload overhead with every source switched, and where the
# agent's time goes. Sourced by run-all.sh (ROOT, W, CARRY, row, pairs_summary).
# Time budget: 120 s for the default `levels` mode (R2; 150 s in R1) (OV_BUDGET_S; each process runs under a
# timeout and is skipped when the budget left is shorter); the other modes run only when named.
#   OV_MODES      "levels" (default): tests/workloads/torch/real_bench.py `levels` in ONE process per
#                 workload under `xpuprof --source cupti`: adjacent windows with the agent paused /
#                 collecting launch entries only (the path of launch_stacks = "off") / native
#                 frames only (python = "off") / in full (the default) / one window per
#                 OV_LEVEL_EXTRA item (name=EXPORT:VALUE, an agent switch toggled for that window;
#                 default nospill=xpuprof_launch_rule_spill:0, the full capture without the rule
#                 cache's second level: the launch path before it),
#                 the order rotating; rows `overhead levels WL ...` (medians of OV_LEVEL_ROUNDS
#                 rounds (Qwen: OV_LEVEL_QWEN_ROUNDS, 8) of OV_LEVEL_STEPS (12; Qwen: OV_LEVEL_QWEN_STEPS, 6) steps per window; the agent's own time per launch
#                 entry in each state, timed in the process, and apart on autograd engine threads; the full windows' walk counts); then the paused state's residual
#                 (CUPTI attached and idle vs detached, real_bench.py `residual`) and the same
#                 windows under `--source ebpf,cupti` (OV_LEVEL_EBPF, resnet: the eBPF source's
#                 share, from the paused windows of the two processes and from the kernel's
#                 run-time count of its BPF programs, row `... bpf time`). QUICK=1: 6 rounds.
#                 `reuse` (quick, under 60 s: `OV_MODES=reuse
#                 scripts/gpu/run-all.sh overhead`) runs tests/workloads/torch/reuse_resnet.py:
#                 ResNet-18 training in ONE process under the cupti agent, adjacent windows paused
#                 / collecting with full captures (the default) / with the native walk reused /
#                 with native and Python reused, then a check window (launches whose reused
#                 stack differs from the full capture: must be 0), rows `overhead reuse ...`
#                 (OV_REUSE_ROUNDS 8, OV_REUSE_STEPS 12);
#                 `profile` records ResNet-18 training under `--source ebpf,cupti` with 999 Hz sampling and every frame kept, and prints the
#                 share of the steps' CPU in CUPTI and in the agent, by part (profile_share.py); `range` runs
#                 real_bench.py's `range` mode (the whole profiler dormant vs collecting in adjacent
#                 windows switched by cudaProfilerStart/Stop) per configuration.
#   OV_WORKLOADS  (resnet qwen), OV_CFGS (unprofiled cupti_nostacks cupti_nopython cupti
#                 ebpf_cupti; the eBPF source's share is ebpf_cupti against cupti: the markers
#                 that switch the windows are seen by the cupti agent), OV_ROUNDS (1), OV_STEPS (640), AB_PAIRS (16).
ldconfig -p | grep -q 'libelf.so.1 ' || export LD_LIBRARY_PATH=$CARRY/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
OVX="$CARRY/xpuprof --plugin-dir $CARRY"
OVR=$ROOT/tests/workloads/torch/real_bench.py
OVL=$W/logs/overhead
mkdir -p "$OVL"
printf '[source.cupti]\nlaunch_stacks = "off"\n' >"$W/ov-nostacks.toml"
printf '[source.cupti]\npython = "off"\n' >"$W/ov-nopython.toml"
printf '[source.ebpf]\nsample_hz = 999\n[sink.folded]\nframes = "all"\n' >"$W/ov-profile.toml"

if [[ " ${OV_MODES:-levels} " == *" levels "* ]]; then
  ov_t0=$(date +%s)
  ov_left() { echo $(( ${OV_BUDGET_S:-120} - ($(date +%s) - ov_t0) )); }
  ov_fields() {  # a LEVELS line's fields, NAME=VALUE per argument
    local line=$1; shift
    for f in "$@"; do printf '%s ' "$(echo "$line" | tr ' ' '\n' | grep "^$f=" | head -1)"; done
  }
  ov_levels() {  # source, workload, timeout s, steps per window, rounds
    local src=$1 wl=$2 t=$3 per=$4 rounds=$5 o=$W/ov-levels-$2-${1/,/_} log=$OVL/levels-$2-${1/,/_} start rc line
    if [ "$(ov_left)" -lt "$t" ]; then row "overhead levels $wl $src" "SKIPPED: $(ov_left) s of the budget left"; return; fi
    rm -rf "$o"; start=$(date +%s)
    local bpf_time=()  # the BPF programs' own time (kernel statistics), asked for where eBPF runs
    [[ $src == *ebpf* ]] && bpf_time=(--set source.ebpf.bpf_run_time=true)
    LEVEL_ROUNDS=$rounds LEVEL_EXTRA=${OV_LEVEL_EXTRA-nospill=xpuprof_launch_rule_spill:0} \
      timeout "$t" $OVX -v --source "$src" ${bpf_time[@]+"${bpf_time[@]}"} --sink summary -o "$o" -- python3 "$OVR" levels "$wl" "$per" \
      >"$log.out" 2>"$log.err"
    rc=$?
    line=$(grep -h '^REAL ' "$log.out" | tail -1)
    row "overhead levels $wl $src" "rc=$rc $(( $(date +%s) - start )) s $(ov_fields "$line" rounds paused_ms)"
    [ -n "$line" ] || return
    row "overhead levels $wl $src vs paused" "$(ov_fields "$line" entries_vs_paused native_vs_paused full_vs_paused)"
    row "overhead levels $wl $src stacks add" "$(ov_fields "$line" stacks_add python_add) $(echo "$line" | tr ' ' '\n' | grep '_vs_full=' | tr '\n' ' ')"
    row "overhead levels $wl $src agent ns/launch" "$(echo "$line" | tr ' ' '\n' | grep -E '_ns=|engine_share=' | tr '\n' ' ')"
    row "overhead levels $wl $src walks" "$(ov_fields "$line" frames_per_walk fast_per_walk lookups_per_walk refreshes walks frames_per_stack) $(echo "$line" | tr ' ' '\n' | grep '_lookups_per_walk=' | tr '\n' ' ')"
    # The eBPF programs' own time, counted by the kernel (the eBPF source's share of the CPU).
    [[ $src == *ebpf* ]] && row "overhead levels $wl $src bpf time" "$(grep -h -o 'BPF programs.*' "$log.err" | cut -c1-200)"
    cp "$o/summary.txt" "$log-summary.txt" 2>/dev/null
    rm -rf "$o"
  }
  ov_residual() {  # workload, timeout s, steps (16 windows)
    local wl=$1 t=$2 n=$3 start rc
    if [ "$(ov_left)" -lt "$t" ]; then row "overhead residual $wl" "SKIPPED: $(ov_left) s of the budget left"; return; fi
    start=$(date +%s)
    AB_PAIRS=8 timeout "$t" python3 "$OVR" residual "$wl" "$n" >"$OVL/residual-$wl.out" 2>"$OVL/residual-$wl.err"
    rc=$?
    row "overhead residual $wl" "rc=$rc $(( $(date +%s) - start )) s $(ov_fields "$(grep -h '^REAL ' "$OVL/residual-$wl.out")" ratio_median)"
  }
  # Most telling first: a part cut by the budget loses its last rows.
  # ResNet-18 steps take 10-11 ms, Qwen tokens 85 ms (H200, R1): windows of 12 and 6 steps; the
  # R1 Qwen process took 53 s with 10 rounds, the ResNet ones 18-19 s with 10 (R2: 14).
  rounds=${OV_LEVEL_ROUNDS:-$([ -n "${QUICK:-}" ] && echo 6 || echo 14)}
  ov_levels cupti resnet 40 "${OV_LEVEL_STEPS:-12}" "$rounds"
  ov_levels cupti qwen 60 "${OV_LEVEL_QWEN_STEPS:-6}" "${OV_LEVEL_QWEN_ROUNDS:-8}"
  for wl in ${OV_LEVEL_EBPF:-resnet}; do ov_levels ebpf,cupti "$wl" 40 "${OV_LEVEL_STEPS:-12}" "$rounds"; done
  ov_residual resnet 30 192
  ov_residual qwen 35 96
fi

if [[ " ${OV_MODES:-levels} " == *" reuse "* ]]; then
  # Quick (under 60 s on the H200: ~15 s of imports and warm-up, 4 x 8 windows of 12 steps at
  # ~8-10 ms, 10 check steps). The agent alone (no host): its stream goes to a dump directory.
  rm -rf "$W/ov-reuse" && mkdir -p "$W/ov-reuse"
  start=$(date +%s)
  CUDA_INJECTION64_PATH=$AGENT XPUPROF_CUPTI_DUMP=$W/ov-reuse XPUPROF_CUPTI_OPTS=$AGENT_DEFAULT_OPTS \
    timeout 120 python3 "$ROOT/tests/workloads/torch/reuse_resnet.py" "${OV_REUSE_ROUNDS:-8}" "${OV_REUSE_STEPS:-12}" 10 \
    >"$OVL/reuse.out" 2>"$OVL/reuse.err"
  rc=$?
  row "overhead reuse resnet" "rc=$rc $(( $(date +%s) - start )) s"
  line=$(grep -h '^REUSE ' "$OVL/reuse.out")
  f() { echo "$line" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
  row "overhead reuse resnet collecting/paused, full capture" "$(f off_vs_paused) (paused $(f paused_ms) ms/step, $(f rounds) rounds)"
  row "overhead reuse resnet collecting/paused, native reuse / all reuse" "$(f native_vs_paused) / $(f on_vs_paused)"
  row "overhead reuse resnet vs full capture: native reuse / all reuse" "$(f native_vs_off) / $(f on_vs_off)"
  chk=$(grep -h '^REUSE_CHECK ' "$OVL/reuse.out")
  d=$(echo "$chk" | tr ' ' '\n' | sed -n 's/^differed=//p')
  [ -n "$d" ] && [ "$d" = 0 ] && v=PASS || v=FAIL
  row "overhead reuse resnet check (reused = full stacks)" "$v ${chk#REUSE_CHECK }"
  rm -rf "$W/ov-reuse"
fi

if [[ " ${OV_MODES:-levels} " == *" profile "* ]]; then
  rm -rf "$W/ov-profile"
  start=$(date +%s)
  $OVX --source ebpf,cupti -c "$W/ov-profile.toml" --sink folded,summary -o "$W/ov-profile" -- \
    python3 "$OVR" plain resnet 600 >"$OVL/profile.out" 2>"$OVL/profile.err"
  row "overhead profile resnet" "rc=$? $(( $(date +%s) - start )) s $(grep -h REAL "$OVL/profile.out")"
  cp "$W/ov-profile/summary.txt" "$OVL/profile-summary.txt" 2>/dev/null
  gzip -c "$W/ov-profile/profile.cpu.folded" >"$OVL/profile.cpu.folded.gz" 2>/dev/null
  python3 "$ROOT/scripts/gpu/profile_share.py" "$W/ov-profile/profile.cpu.folded" 15 | tee "$OVL/profile-agent.txt"
fi

if [[ " ${OV_MODES:-levels} " == *" range "* ]]; then
  ov_cfg() {  # config, workload
    local c=$1 wl=$2 prog r=(--capture-range cuda-profiler-api --capture-range-end repeat --sink summary -o "$W/ov-out/$c")
    if [ "$wl" = ddp ]; then prog="torchrun --standalone --nproc_per_node=2 $OVR range ddp ${OV_STEPS:-640}"
    else prog="python3 $OVR range $wl ${OV_STEPS:-640}"; fi
    rm -rf "$W/ov-out/$c"
    case $c in
      unprofiled) $prog ;;
      cupti) $OVX --source cupti "${r[@]}" -- $prog ;;
      cupti_nostacks) $OVX --source cupti -c "$W/ov-nostacks.toml" "${r[@]}" -- $prog ;;
      cupti_nopython) $OVX --source cupti -c "$W/ov-nopython.toml" "${r[@]}" -- $prog ;;
      ebpf_cupti) $OVX --source ebpf,cupti "${r[@]}" -- $prog ;;
    esac
  }
  for wl in ${OV_WORKLOADS:-resnet qwen}; do
    : >"$OVL/range-$wl-lines.txt"
    for r in $(seq 1 "${OV_ROUNDS:-1}"); do
      for c in ${OV_CFGS:-unprofiled cupti_nostacks cupti_nopython cupti ebpf_cupti}; do
        line=$(ov_cfg $c $wl 2>>"$OVL/range-$wl-$c.err" | grep '^REAL')
        echo "$r $c $line" >>"$OVL/range-$wl-lines.txt"
      done
    done
    pairs_summary "range-$wl" "$OVL/range-$wl-lines.txt"
  done
fi
