#!/usr/bin/env bash
# One device call, several parts of run-all.sh in a row, each under its own time limit, so a part
# that overruns is cut without losing the others. The logs are packed into $OUT/logs.tar.gz after
# every part (what a cut call leaves under $OUT still comes back), with each part's summary table
# kept as logs/summary-PART.txt. Run from the repository root on the GPU machine:
#
#   scripts/gpu/round.sh SECONDS:PART[+PART...][:VAR=VALUE,VAR=VALUE] ...
#   e.g. scripts/gpu/round.sh 60:nccl_bytes 150:xla:XLA_QUICK=0 200:capture+test+graphs+agree
#
# Parts joined by '+' run in one run-all.sh call (its built-in steps need that: `capture` builds
# what `test` runs).
# Values may not contain ',' or ':'. A part's time limit covers run-all.sh's own start (the machine
# table). The last line printed is each part's status and seconds.
set -u
OUT=${OUT:-/tmp/xpuprof-gpu-out}
W=/tmp/xpuprof-gpu
mkdir -p "$OUT" "$W/logs"
status=()
for spec in "$@"; do
  IFS=: read -r limit part vars <<<"$spec"
  envs=()
  if [ -n "${vars:-}" ]; then IFS=, read -r -a envs <<<"$vars"; fi
  echo "================ part $part (limit ${limit}s) ${envs[*]:-}"
  t0=$(date +%s)
  # shellcheck disable=SC2046
  env "${envs[@]}" OUT="$OUT" timeout -k 5 "$limit" bash scripts/gpu/run-all.sh $(tr + ' ' <<<"$part")
  rc=$?
  took=$(( $(date +%s) - t0 ))
  [ -f "$W/summary.txt" ] && cp "$W/summary.txt" "$W/logs/summary-$part.txt"
  status+=("$part:rc=$rc:${took}s")
  (cd "$W" && tar czf "$OUT/logs.tar.gz" logs)
done
echo "================ round: ${status[*]}"
