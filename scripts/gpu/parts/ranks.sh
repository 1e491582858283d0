# Part `ranks` of run-all.sh (issue 26): a DDP job over NCCL, one rank per GPU (2 or 4), with an
# injected straggler (rank 1 sleeps 20 ms in Python every 10 steps:
# tests/workloads/torch/ddp_straggler.py),
# recorded as a multi-host job is: each "host" (here a GPU of its own, CUDA_VISIBLE_DEVICES)
# runs its own torchrun node under its own `xpuprof --source ebpf,cupti --sink archive` (off-CPU
# samples on, so the sleep is seen); then
# `xpuprof report --merge` puts them on one timeline (perfetto, summary, chrome). Both hosts
# share this machine's clock, so the merge's shift should come out 0 within its stated error.
# The same job is also recorded whole (one xpuprof over `torchrun --nproc_per_node N`), and
# with FSDP instead of DDP. scripts/gpu/check_ranks.py checks each output against the ranks'
# own records (dump sink): every rank named, every NCCL collective matched, rank 1 found late
# at the collectives of the steps it slept in, at the line it slept on. What the recordings
# hold about NCCL (kernel names, streams, NVTX ranges, long off-CPU stacks) goes to the logs,
# with the records themselves (gzipped) for CI replay. Every row says PASS or FAIL (INFO rows
# only report what the merge said).
#
# Time budget: at most 150 s of the round (R1 of 2026-11-28 took 95 s on 2 H200s). Each step
# runs under `timeout` within what is left of RANKS_BUDGET_S (default 150); a step that no
# longer fits is not started and its row says so. RANKS_SCALE_SECS (default "2 6") are the
# recording lengths of the merge's scale benchmark (empty: not run; the 60 s case runs on the
# development machine: docs/benchmarks.md). Needs 2 or more GPUs; on one GPU it writes one row and stops.
# RANKS_FROM=DIR checks the CPU side without a GPU: DIR/host0 and DIR/host1 (e.g.
# tests/fixtures/ranks, R1's recordings) are merged and checked as if just recorded, and the
# GPU-only steps (the recordings, the whole-job runs) are left out.
RK=$W/logs/ranks
mkdir -p "$RK"
RX="$CARRY/xpuprof --plugin-dir $CARRY"
RWL=$ROOT/tests/workloads/torch/ddp_straggler.py
rk_ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
# Ranks of the job: every GPU of the machine (RANKS_NPROC overrides), an even number, split over
# the two "hosts" (half each).
rk_n=${RANKS_NPROC:-$rk_ngpu}
rk_n=$(( rk_n / 2 * 2 ))
rk_half=$(( rk_n / 2 ))
rk_t0=$(date +%s)
# rk_left: seconds of the part's budget left.
rk_left() { echo $(( ${RANKS_BUDGET_S:-150} - ($(date +%s) - rk_t0) )); }
# rk_fits LABEL SECONDS: whether a step that may take SECONDS still fits; if not, says so in a row.
rk_fits() {
  [ "$(rk_left)" -ge "$2" ] && return 0
  row "ranks $1" "FAIL not run: $(rk_left) s left of the part's ${RANKS_BUDGET_S:-150} s, it needs up to $2 s"
  return 1
}
# rk_verdict OK TEXT: PASS or FAIL before TEXT.
rk_verdict() { if [ "$1" = 1 ]; then echo "PASS $2"; else echo "FAIL $2"; fi; }

# rk_check LABEL OUT DUMP...: the checker's rows as summary rows.
rk_check() {
  local label=$1 out=$2
  shift 2
  python3 "$ROOT/scripts/gpu/check_ranks.py" check "$out" "$RWL" "$@" >"$RK/check-$label.txt" 2>&1
  grep '^CHECK' "$RK/check-$label.txt" | while read -r _ name verdict detail; do
    row "ranks $label $name" "$verdict $(echo "$detail" | cut -c1-150)"
  done
  grep -q '^CHECK' "$RK/check-$label.txt" || row "ranks $label check" "FAIL $(tail -1 "$RK/check-$label.txt")"
  if [ -f "$out/trace.perfetto-trace" ] && { [ -d "$W/ranks-py/perfetto" ] || python3 -c 'import perfetto' 2>/dev/null; }; then
    PYTHONPATH=$W/ranks-py PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python timeout 60 \
      python3 "$ROOT/plugins/perfetto/tests/check_trace.py" "$out/trace.perfetto-trace" >"$RK/perfetto-$label.json" 2>&1 \
      && row "ranks $label perfetto check_trace" "PASS (Perfetto's protos: flows chained in time order, slices nested)" \
      || row "ranks $label perfetto check_trace" "FAIL $(tail -1 "$RK/perfetto-$label.json" | cut -c1-150)"
  fi
}

# rk_dump LABEL ARCHIVE_DIR: the recording's records (dump sink), what they hold about NCCL.
rk_dump() {
  $RX report "$2" --sink dump -o "$RK/dump$1" >/dev/null 2>"$RK/dump$1.err"
  python3 "$ROOT/scripts/gpu/check_ranks.py" dump "$RK/dump$1/records.jsonl" >"$RK/nccl-$1.txt" 2>&1
}

if [ ! -x "$CARRY/xpuprof" ]; then
  row "ranks" "FAIL no $CARRY/xpuprof (run scripts/gpu/carry.sh)"
elif [ "$rk_ngpu" -lt 2 ] && [ -z "${RANKS_FROM:-}" ]; then
  row "ranks" "SKIP needs ≥ 2 GPUs ($rk_ngpu here): not run"
else
  export NCCL_DEBUG=WARN
  # Perfetto's Python protos (carry.sh's readers) for plugins/perfetto/tests/check_trace.py.
  [ -f "$CARRY/readers/python.tar.gz" ] && mkdir -p "$W/ranks-py" && tar xzf "$CARRY/readers/python.tar.gz" -C "$W/ranks-py"
  if [ -n "${RANKS_FROM:-}" ]; then
    rm -rf "$RK/host0" "$RK/host1" "$RK/merged" "$W/ranks-out"
    for k in 0 1; do mkdir -p "$RK/host$k" && cp -r "$RANKS_FROM/host$k/archive" "$RK/host$k/"; done
    row "ranks job" "INFO replay of $RANKS_FROM (no GPU run)"
  else
    # 1. Two "hosts", each recording its own node of the job.
    rk_pids=""
    rm -rf "$RK/hosts.rc" "$RK/host0" "$RK/host1" "$RK/merged" "$RK/one-ddp" "$RK/one-fsdp" "$W/ranks-out"
    for k in 0 1; do
      CUDA_VISIBLE_DEVICES=$(seq -s, $(( k * rk_half )) $(( k * rk_half + rk_half - 1 ))) timeout 70 \
        $RX --set source.ebpf.offcpu=true --source ebpf,cupti --sink archive -o "$RK/host$k" -- \
        torchrun --nnodes 2 --node_rank $k --nproc_per_node $rk_half --master_addr 127.0.0.1 --master_port 29531 \
        "$RWL" >"$RK/host$k.out" 2>"$RK/host$k.err" &
      rk_pids="$rk_pids $!"
    done
    for p in $rk_pids; do wait "$p"; echo "rc=$?" >>"$RK/hosts.rc"; done
    row "ranks job" "INFO $rk_n ranks on $rk_ngpu GPUs, two hosts of $rk_half"
    rk_done=$(cat "$RK"/host?.out | grep -c '^done rank')
    rk_ok=0
    [ "$(grep -c '^rc=0$' "$RK/hosts.rc")" = 2 ] && [ "$rk_done" = "$rk_n" ] && rk_ok=1
    row "ranks hosts recorded" "$(rk_verdict $rk_ok "$(tr '\n' ' ' <"$RK/hosts.rc")$rk_done of $rk_n ranks done (rc 124: cut at 70 s)")"
  fi
  rk_time=""
  [ -x /usr/bin/time ] && rk_time="/usr/bin/time -v"
  timeout 60 $rk_time $RX report --merge "$RK/host0" "$RK/host1" --sink perfetto,summary,chrome -o "$RK/merged" \
    >"$RK/merge.out" 2>"$RK/merge.err"
  rk_rc=$?
  row "ranks merge" "$(rk_verdict $(( rk_rc == 0 )) "rc=$rk_rc $(grep -m1 'Maximum resident' "$RK/merge.err" | sed 's/.*: /peak RSS KiB /')")"
  grep 'shifted by\|reference clock\|not merged\|damaged' "$RK/merge.err" | sed 's/^ *//' | while read -r l; do
    row "ranks merge clock" "INFO $(echo "$l" | cut -c1-220)"
  done
  # Both "hosts" run on this machine's one clock: the merge must keep them 0 apart (the pairs'
  # alignment) and say how far the collectives' ends put them, within the bound it states.
  python3 "$ROOT/scripts/gpu/check_ranks.py" align "$RK/merge.err" >"$RK/align.txt" 2>&1
  grep '^CHECK' "$RK/align.txt" | while read -r _ _ verdict detail; do
    row "ranks merge fine alignment" "$verdict $(echo "$detail" | cut -c1-180)"
  done
  grep -q '^CHECK' "$RK/align.txt" || row "ranks merge fine alignment" "FAIL $(tail -1 "$RK/align.txt")"
  rk_dump host0 "$RK/host0"
  rk_dump host1 "$RK/host1"
  head -40 "$RK/nccl-host0.txt"
  rk_check merged "$RK/merged" "$RK/dumphost0/records.jsonl" "$RK/dumphost1/records.jsonl"
  sed -n '/^Collectives/,/^Launch-bound/p' "$RK/merged/summary.txt" | head -30
  # 2. The whole job under one xpuprof, DDP and FSDP.
  for mode in ddp fsdp; do
    [ -n "${RANKS_FROM:-}" ] && break
    # R1: 15-17 s each, then its dump and checks; cut at 60 s or where the budget ends.
    rk_fits "one recording $mode" 45 || continue
    rk_cut=$(( $(rk_left) - 15 ))
    [ "$rk_cut" -gt 60 ] && rk_cut=60
    flag=""
    [ "$mode" = fsdp ] && flag=--fsdp
    timeout "$rk_cut" $RX --set source.ebpf.offcpu=true --source ebpf,cupti --sink archive,summary,perfetto,chrome -o "$RK/one-$mode" -- \
      torchrun --standalone --nproc_per_node $rk_n "$RWL" $flag >"$RK/one-$mode.out" 2>"$RK/one-$mode.err"
    rk_rc=$?
    rk_done=$(grep -c '^done rank' "$RK/one-$mode.out")
    row "ranks one recording $mode" "$(rk_verdict $(( rk_rc == 0 && rk_done == rk_n )) "rc=$rk_rc, $rk_done of $rk_n ranks done (rc 124: cut at $rk_cut s)")"
    rk_dump "one-$mode" "$RK/one-$mode"
    rk_check "one-$mode" "$RK/one-$mode" "$RK/dumpone-$mode/records.jsonl"
  done
  [ -f "$RK/nccl-one-fsdp.txt" ] && head -30 "$RK/nccl-one-fsdp.txt"
  # 3. The merge at scale (core/benches/merge_scale.rs): 8 ranks x 100k launches/s for
  # RANKS_SCALE_SECS seconds of recording each, merged on one core (taskset), its CPU time and
  # peak memory; PASS at >= 1M records per CPU second (issue 26's target).
  rk_secs=${RANKS_SCALE_SECS-2 6}
  rk_need=5
  for rk_s in $rk_secs; do rk_need=$(( rk_need + rk_s * 3 + 3 )); done
  if [ -z "$rk_secs" ]; then
    row "ranks merge scale" "SKIP RANKS_SCALE_SECS is empty"
  elif [ ! -x "$CARRY/bench-merge-scale" ]; then
    row "ranks merge scale" "FAIL no $CARRY/bench-merge-scale (carry.sh --release builds it)"
  elif rk_fits "merge scale" "$rk_need"; then
    # shellcheck disable=SC2086
    XPUPROF_BENCH_BIN=$CARRY/xpuprof timeout "$(rk_left)" taskset -c 3 "$CARRY/bench-merge-scale" 8 100000 $rk_secs \
      >"$RK/merge-scale.txt" 2>&1
    grep '^merge_scale' "$RK/merge-scale.txt" | while read -r l; do
      rate=$(echo "$l" | sed -n 's/.*records_per_cpu_s=\([0-9]*\).*/\1/p')
      rk_ok=0
      [ -n "$rate" ] && [ "$rate" -ge 1000000 ] && echo "$l" | grep -q 'rc=0$' && rk_ok=1
      row "ranks merge scale" "$(rk_verdict $rk_ok "$(echo "$l" | cut -c13-230)")"
    done
    grep -q '^merge_scale' "$RK/merge-scale.txt" || row "ranks merge scale" "FAIL $(tail -1 "$RK/merge-scale.txt")"
  fi
  # Records for CI replay (kept small), the summaries; the bulky outputs out of the logs.
  for d in host0 host1 one-ddp one-fsdp; do
    f=$RK/dump$d/records.jsonl
    [ -f "$f" ] && [ "$(stat -c %s "$f")" -lt 40000000 ] && gzip -c "$f" >"$RK/dump-$d.jsonl.gz"
    rm -rf "${RK:?}/dump$d"
    [ -f "$RK/$d/summary.txt" ] && cp "$RK/$d/summary.txt" "$RK/$d-summary.txt"
  done
  # The two hosts' archives themselves, when small, as CI fixtures of a real NCCL job.
  for k in 0 1; do
    f=$RK/host$k/archive/trace.xpa
    [ -f "$f" ] && [ "$(stat -c %s "$f")" -lt 3000000 ] && cp "$f" "$RK/host$k.xpa"
  done
  cp "$RK/merged/summary.txt" "$RK/merged-summary.txt" 2>/dev/null
  cp "$RK/merged/summary.json" "$RK/merged-summary.json" 2>/dev/null
  mkdir -p "$W/ranks-out" && mv "$RK/host0" "$RK/host1" "$RK"/one-ddp "$RK"/one-fsdp "$RK/merged" "$W/ranks-out/" 2>/dev/null
  du -sh "$RK" | sed 's/^/ranks logs: /'
  unset NCCL_DEBUG
fi
