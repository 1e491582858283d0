#!/usr/bin/env bash
# CPython 3.12's perf trampolines (`-X perf`): what they cost a pure-Python CPU-bound program,
# measured side by side (interleaved rounds, medians and per-round ratios), and how big the
# /tmp/perf-PID.map they write gets. The option a profiler would rely on to name Python functions
# in native samples without reading the interpreter's memory.
#   scripts/bench-python-perf-trampoline.sh [PYTHON3.12] [ROUNDS]
set -euo pipefail
PY=${1:-python3.12}
ROUNDS=${2:-5}
"$PY" -c 'import sys; assert sys.version_info >= (3, 12), "needs CPython 3.12 or later"'
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
cat >"$W/work.py" <<'PY'
import os, sys, time
def leaf(n):
    return sum(i * i for i in range(n))
def mid(k):
    return [leaf(200) for _ in range(k)]
def top():
    t = time.perf_counter()
    for _ in range(400):
        mid(20)
    print(f"{time.perf_counter() - t:.4f} {os.getpid()} {sys.is_stack_trampoline_active()}")
top()
PY
for r in $(seq "$ROUNDS"); do
  read -r plain _ _ < <("$PY" "$W/work.py")
  read -r perf pid active < <("$PY" -X perf "$W/work.py")
  lines=$(wc -l <"/tmp/perf-$pid.map" 2>/dev/null || echo 0)
  rm -f "/tmp/perf-$pid.map"
  echo "$r $plain $perf $active $lines"
done | python3 -c '
import sys, statistics
rows = [l.split() for l in sys.stdin]
plain = [float(r[1]) for r in rows]; perf = [float(r[2]) for r in rows]
ratios = [p / q for p, q in zip(perf, plain)]
print("rounds:", " ".join(f"{r:.3f}" for r in ratios), "(-X perf / plain)")
print(f"median plain {statistics.median(plain):.3f}s, -X perf {statistics.median(perf):.3f}s, ratio {statistics.median(ratios):.3f}x; trampoline active: {rows[0][3]}; perf map lines: {rows[0][4]}")
'
