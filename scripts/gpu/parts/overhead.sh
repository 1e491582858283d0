# Part `overhead` (issue 29): real-workload overhead with every source switched, and where the
# agent's time goes. Sourced by run-all.sh (ROOT, W, CARRY, row, pairs_summary).
#   OV_MODES      "profile range" (default): `profile` records ResNet-18 training under
#                 `--source ebpf,cupti` with 999 Hz sampling and every frame kept, and prints the
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

if [[ " ${OV_MODES:-profile range} " == *" profile "* ]]; then
  rm -rf "$W/ov-profile"
  start=$(date +%s)
  $OVX --source ebpf,cupti -c "$W/ov-profile.toml" --sink folded,summary -o "$W/ov-profile" -- \
    python3 "$OVR" plain resnet 600 >"$OVL/profile.out" 2>"$OVL/profile.err"
  row "overhead profile resnet" "rc=$? $(( $(date +%s) - start )) s $(grep -h REAL "$OVL/profile.out")"
  cp "$W/ov-profile/summary.txt" "$OVL/profile-summary.txt" 2>/dev/null
  gzip -c "$W/ov-profile/profile.cpu.folded" >"$OVL/profile.cpu.folded.gz" 2>/dev/null
  python3 "$ROOT/scripts/gpu/profile_share.py" "$W/ov-profile/profile.cpu.folded" 15 | tee "$OVL/profile-agent.txt"
fi

if [[ " ${OV_MODES:-profile range} " == *" range "* ]]; then
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
