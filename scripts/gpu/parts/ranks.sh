# Part `ranks` of run-all.sh (issue 26): a 2-rank DDP job over NCCL with an injected straggler
# (rank 1 sleeps 20 ms in Python every 10 steps: tests/workloads/torch/ddp_straggler.py),
# recorded as a multi-host job is: each "host" (here a GPU of its own, CUDA_VISIBLE_DEVICES)
# runs its own torchrun node under its own `xpuprof --source ebpf,cupti --sink archive` (off-CPU
# samples on, so the sleep is seen); then
# `xpuprof report --merge` puts them on one timeline (perfetto, summary, chrome). Both hosts
# share this machine's clock, so the merge's shift should come out 0 within its stated error.
# The same job is also recorded whole (one xpuprof over `torchrun --nproc_per_node 2`), and
# with FSDP instead of DDP. scripts/gpu/check_ranks.py checks each output against the ranks'
# own records (dump sink): both ranks named, every NCCL collective matched, rank 1 found late
# at the collectives of the steps it slept in, at the line it slept on. What the recordings
# hold about NCCL (kernel names, streams, NVTX ranges, long off-CPU stacks) goes to the logs,
# with the records themselves (gzipped) for CI replay.
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

# rk_check LABEL OUT DUMP...: the checker's rows as summary rows.
rk_check() {
  local label=$1 out=$2
  shift 2
  python3 "$ROOT/scripts/gpu/check_ranks.py" check "$out" "$RWL" "$@" >"$RK/check-$label.txt" 2>&1
  grep '^CHECK' "$RK/check-$label.txt" | while read -r _ name verdict detail; do
    row "ranks $label $name" "$verdict $(echo "$detail" | cut -c1-150)"
  done
  grep -q '^CHECK' "$RK/check-$label.txt" || row "ranks $label check" "FAIL $(tail -1 "$RK/check-$label.txt")"
  if [ -f "$out/trace.perfetto-trace" ] && [ -d "$W/ranks-py/perfetto" ]; then
    PYTHONPATH=$W/ranks-py PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python timeout 300 \
      python3 "$ROOT/plugins/perfetto/tests/check_trace.py" "$out/trace.perfetto-trace" >"$RK/perfetto-$label.json" 2>&1 \
      && row "ranks $label perfetto check_trace" "PASS (flows: one start and one end each)" \
      || row "ranks $label perfetto check_trace" "FAIL $(tail -1 "$RK/perfetto-$label.json" | cut -c1-150)"
  fi
}

# rk_dump LABEL ARCHIVE_DIR: the recording's records (dump sink), what they hold about NCCL.
rk_dump() {
  $RX report "$2" --sink dump -o "$RK/dump$1" >/dev/null 2>"$RK/dump$1.err"
  python3 "$ROOT/scripts/gpu/check_ranks.py" dump "$RK/dump$1/records.jsonl" >"$RK/nccl-$1.txt" 2>&1
}

if [ ! -x "$CARRY/xpuprof" ]; then
  row "ranks" "skipped: no $CARRY/xpuprof"
elif [ "$rk_ngpu" -lt 2 ]; then
  row "ranks" "skipped: $rk_ngpu GPU(s), needs 2"
else
  export NCCL_DEBUG=WARN
  # Perfetto's Python protos (carry.sh's readers) for plugins/perfetto/tests/check_trace.py.
  [ -f "$CARRY/readers/python.tar.gz" ] && mkdir -p "$W/ranks-py" && tar xzf "$CARRY/readers/python.tar.gz" -C "$W/ranks-py"
  # 1. Two "hosts", each recording its own node of the job.
  rk_pids=""
  for k in 0 1; do
    CUDA_VISIBLE_DEVICES=$(seq -s, $(( k * rk_half )) $(( k * rk_half + rk_half - 1 ))) timeout 300 \
      $RX --set source.ebpf.offcpu=true --source ebpf,cupti --sink archive -o "$RK/host$k" -- \
      torchrun --nnodes 2 --node_rank $k --nproc_per_node $rk_half --master_addr 127.0.0.1 --master_port 29531 \
      "$RWL" >"$RK/host$k.out" 2>"$RK/host$k.err" &
    rk_pids="$rk_pids $!"
  done
  for p in $rk_pids; do wait "$p"; echo "rc=$?" >>"$RK/hosts.rc"; done
  row "ranks job" "$rk_n ranks on $rk_ngpu GPUs, two hosts of $rk_half"
  row "ranks hosts recorded" "$(tr '\n' ' ' <"$RK/hosts.rc") $(cat "$RK"/host?.out | grep -c '^done rank') ranks done"
  rk_time=""
  [ -x /usr/bin/time ] && rk_time="/usr/bin/time -v"
  $rk_time $RX report --merge "$RK/host0" "$RK/host1" --sink perfetto,summary,chrome -o "$RK/merged" \
    >"$RK/merge.out" 2>"$RK/merge.err"
  row "ranks merge" "rc=$? $(grep -m1 'Maximum resident' "$RK/merge.err" | sed 's/.*: /peak RSS KiB /')"
  grep 'shifted by\|reference clock\|not merged\|damaged' "$RK/merge.err" | sed 's/^ *//' | while read -r l; do
    row "ranks merge clock" "$(echo "$l" | cut -c1-220)"
  done
  # Both "hosts" run on this machine's one clock: the merge must keep them 0 apart (the pairs'
  # alignment) and say how far the collectives' ends put them, within the bound it states.
  python3 - "$RK/merge.err" >"$RK/align.txt" 2>&1 <<'PY'
import re, sys
said = open(sys.argv[1]).read()
m = re.search(r"shifted by (\d+) ns by the wall-clock pairs.*?one clock; the ends of the (\d+) collectives they share put it "
              r"(-?\+?\d+) ns off \(within ±(\d+) ns\)", said)
if not m:
    print("FAIL no same-host line: " + " | ".join(l.strip()[:160] for l in said.splitlines() if "shifted" in l))
else:
    ok = int(m[1]) < 1000 and abs(int(m[3])) <= int(m[4])
    print(f"{'PASS' if ok else 'FAIL'} kept {m[1]} ns apart (true 0: one clock); the ends of {m[2]} collectives put it "
          f"{m[3]} ns off, within the stated ±{m[4]} ns")
PY
  row "ranks merge fine alignment" "$(tail -1 "$RK/align.txt")"
  rk_dump host0 "$RK/host0"
  rk_dump host1 "$RK/host1"
  head -40 "$RK/nccl-host0.txt"
  rk_check merged "$RK/merged" "$RK/dumphost0/records.jsonl" "$RK/dumphost1/records.jsonl"
  sed -n '/^Collectives/,/^Launch-bound/p' "$RK/merged/summary.txt" | head -30
  # 2. The whole job under one xpuprof, DDP and FSDP.
  for mode in ddp fsdp; do
    flag=""
    [ "$mode" = fsdp ] && flag=--fsdp
    timeout 300 $RX --set source.ebpf.offcpu=true --source ebpf,cupti --sink archive,summary,perfetto,chrome -o "$RK/one-$mode" -- \
      torchrun --standalone --nproc_per_node $rk_n "$RWL" $flag >"$RK/one-$mode.out" 2>"$RK/one-$mode.err"
    row "ranks one recording $mode" "rc=$? $(grep -c '^done rank' "$RK/one-$mode.out") ranks done"
    rk_dump "one-$mode" "$RK/one-$mode"
    rk_check "one-$mode" "$RK/one-$mode" "$RK/dumpone-$mode/records.jsonl"
  done
  head -30 "$RK/nccl-one-fsdp.txt"
  # 3. The merge at scale (core/benches/merge_scale.rs): 8 ranks x 100k launches/s, 2, 6 and 20 s
  # of recording, merged on one core (taskset), its CPU time and peak memory.
  if [ -x "$CARRY/bench-merge-scale" ]; then
    XPUPROF_BENCH_BIN=$CARRY/xpuprof timeout 240 taskset -c 3 "$CARRY/bench-merge-scale" 8 100000 2 6 20 \
      >"$RK/merge-scale.txt" 2>&1
    grep '^merge_scale' "$RK/merge-scale.txt" | while read -r l; do row "ranks merge scale" "$(echo "$l" | cut -c13-230)"; done
    grep -q '^merge_scale' "$RK/merge-scale.txt" || row "ranks merge scale" "FAIL $(tail -1 "$RK/merge-scale.txt")"
  else
    row "ranks merge scale" "skipped: no $CARRY/bench-merge-scale (carry.sh --release builds it)"
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
