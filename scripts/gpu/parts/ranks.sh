# Part `ranks` of run-all.sh (issue 26): a 2-rank DDP job over NCCL with an injected straggler
# (rank 1 sleeps 20 ms in Python every 10 steps: tests/workloads/torch/ddp_straggler.py),
# recorded as a multi-host job is: each "host" (here a GPU of its own, CUDA_VISIBLE_DEVICES)
# runs its own torchrun node under its own `xpuprof record --source ebpf,cupti --sink archive`;
# then `xpuprof report --merge` puts them on one timeline (perfetto, summary, chrome). The same
# job is also recorded whole (one xpuprof over `torchrun --nproc_per_node 2`). What the
# recordings hold about NCCL (kernel names, streams, NVTX ranges, long off-CPU stacks) is dumped
# to the logs, with the records themselves (dump sink, gzipped) for CI replay.
RK=$W/logs/ranks
mkdir -p "$RK"
RX="$CARRY/xpuprof --plugin-dir $CARRY"
RWL=$ROOT/tests/workloads/torch/ddp_straggler.py
rk_ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
if [ ! -x "$CARRY/xpuprof" ]; then
  row "ranks" "skipped: no $CARRY/xpuprof"
elif [ "$rk_ngpu" -lt 2 ]; then
  row "ranks" "skipped: $rk_ngpu GPU(s), needs 2"
else
  export NCCL_DEBUG=WARN
  # 1. Two "hosts", each recording its own node of the job.
  rk_pids=""
  for k in 0 1; do
    CUDA_VISIBLE_DEVICES=$k timeout 300 $RX --source ebpf,cupti --sink archive -o "$RK/host$k" -- \
      torchrun --nnodes 2 --node_rank $k --nproc_per_node 1 --master_addr 127.0.0.1 --master_port 29531 \
      "$RWL" >"$RK/host$k.out" 2>"$RK/host$k.err" &
    rk_pids="$rk_pids $!"
  done
  for p in $rk_pids; do wait "$p"; echo "rc=$?" >>"$RK/hosts.rc"; done
  row "ranks hosts recorded" "$(tr '\n' ' ' <"$RK/hosts.rc") $(grep -h -c '^done rank' "$RK"/host?.out | tr '\n' ' ')ranks done"
  $RX report --merge "$RK/host0" "$RK/host1" --sink perfetto,summary,chrome -o "$RK/merged" \
    >"$RK/merge.out" 2>"$RK/merge.err"
  row "ranks merge" "rc=$? $(grep -c 'shifted by\|reference clock' "$RK/merge.err") clock lines"
  sed 's/^/merge: /' "$RK/merge.err" | tail -8
  for k in 0 1; do
    $RX report "$RK/host$k" --sink dump -o "$RK/dump$k" >/dev/null 2>"$RK/dump$k.err"
    python3 "$ROOT/scripts/gpu/check_ranks.py" dump "$RK/dump$k/records.jsonl" >"$RK/nccl-host$k.txt" 2>&1
    head -60 "$RK/nccl-host$k.txt"
  done
  # 2. The whole job under one xpuprof.
  timeout 300 $RX --source ebpf,cupti --sink archive,summary,perfetto -o "$RK/one" -- \
    torchrun --standalone --nproc_per_node 2 "$RWL" >"$RK/one.out" 2>"$RK/one.err"
  row "ranks one recording" "rc=$? $(grep -c '^done rank' "$RK/one.out") ranks done"
  $RX report "$RK/one" --sink dump -o "$RK/dumpone" >/dev/null 2>"$RK/dumpone.err"
  python3 "$ROOT/scripts/gpu/check_ranks.py" dump "$RK/dumpone/records.jsonl" >"$RK/nccl-one.txt" 2>&1
  head -40 "$RK/nccl-one.txt"
  # Records for CI replay (kept small), then the bulky outputs out of the logs.
  for d in dump0 dump1 dumpone; do
    f=$RK/$d/records.jsonl
    [ -f "$f" ] && [ "$(stat -c %s "$f")" -lt 40000000 ] && gzip -c "$f" >"$RK/$d.jsonl.gz"
    rm -rf "${RK:?}/$d"
  done
  for d in host0 host1 one; do
    [ -f "$RK/$d/summary.txt" ] && cp "$RK/$d/summary.txt" "$RK/$d-summary.txt"
  done
  [ -f "$RK/merged/summary.txt" ] && cp "$RK/merged/summary.txt" "$RK/merged-summary.txt"
  mkdir -p "$W/ranks-out" && mv "$RK/host0" "$RK/host1" "$RK/one" "$RK/merged" "$W/ranks-out/" 2>/dev/null
  du -sh "$RK" | sed 's/^/ranks logs: /'
fi
