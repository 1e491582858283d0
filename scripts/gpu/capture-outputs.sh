#!/usr/bin/env bash
# Records real CUDA runs with the perfetto and pprof sinks and keeps their outputs under
# $OUT/outputs/<program>/ as fixtures (commit them as tests/fixtures/outputs/<program>/, where
# the perfetto and pprof tests decode and check them), then measures bytes per launch of
# perfetto, chrome and the archive side by side on one launch-bound run.
#
#   scripts/gpu/capture-outputs.sh BIN_DIR CARRY_DIR OUT_DIR     (run-all.sh's `outputs` step)
#
# BIN_DIR holds the CUDA test programs run-all.sh built; CARRY_DIR the xpuprof binary and
# plugins (scripts/gpu/carry.sh).
set -u
BIN=$1 CARRY=$2 OUT=$3
X="$CARRY/xpuprof --plugin-dir $CARRY"
mkdir -p "$OUT/outputs"
for p in multi_stream graph_launch; do
  d=$OUT/outputs/$p; rm -rf "$d" "$d.run"; mkdir -p "$d"
  n=20; [ "$p" = graph_launch ] && n=5
  $X --source cupti --sink perfetto,pprof,archive -o "$d.run" -- "$BIN/$p" $n >"$d/stdout.txt" 2>"$d/stderr.txt"
  rc=$?
  cp "$d.run/trace.perfetto-trace" "$d.run/profile.pb.gz" "$d/" 2>/dev/null
  # The size of the folded profile's GPU part, for the tests to compare with.
  printf 'program %s %s\nrc %s\n' "$p" "$n" "$rc" >"$d/capture.txt"
  echo "outputs $p: rc=$rc $(stat -c '%n %s' "$d"/trace.perfetto-trace "$d"/profile.pb.gz 2>&1 | tr '\n' ' ')"
done
# Bytes per launch, one run, three formats side by side.
N=${BENCH_N:-200000}
o=$OUT/outputs/size.run; rm -rf "$o"
$X --source cupti --sink perfetto,chrome,archive -o "$o" -- "$BIN/launch_bench" "$N" >/dev/null 2>"$OUT/outputs/size.err"
p=$(stat -c %s "$o/trace.perfetto-trace" 2>/dev/null || echo 0)
j=$(stat -c %s "$o/trace.json" 2>/dev/null || echo 0)
a=$(du -cb "$o/archive" 2>/dev/null | tail -1 | cut -f1)
python3 -c "n=$N; print(f'outputs bytes/launch over {n} launches: perfetto {$p/n:.1f}  chrome {$j/n:.1f}  archive {${a:-0}/n:.1f}')"
rm -rf "$o" "$OUT"/outputs/*.run
