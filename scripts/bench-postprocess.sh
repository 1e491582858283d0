#!/usr/bin/env bash
# B3/B4 without a GPU: records a large scripted session (the test double source, same record
# shapes as a CUDA run: API call + launch stack + device op per launch) into an archive, then
# replays it into folded+chrome, then into perfetto+pprof, each on one core. Prints launches/s
# (wall and CPU time), peak memory, and bytes per launch of the archive next to the chrome JSON
# and the Perfetto trace.
#
# Usage: scripts/bench-postprocess.sh [ROUNDS] [BEFORE_DIR] [REPEATS]
#   ROUNDS      rounds of the script (each = 6 launches causing 8 device operations); 170000
#               makes the 1.02M-launch run of docs/benchmarks.md
#   BEFORE_DIR  a directory holding another build's `xpuprof` and `libxpuprof_*.so` (e.g. main's
#               release build copied aside): every step then runs for both builds, interleaved,
#               REPEATS times (default 3), and the table shows them side by side with the ratio.
#               Both builds record from this build's scripted source (a plugin of a newer SDK
#               loads in an older host), so only the host and the sinks differ
# CARGO_TARGET_DIR, when set, is where this build goes (as cargo's own variable says).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-170000}
BEFORE=${2:-}
REPEATS=${3:-3}
cargo build -q --release -p xpuprof-core -p xpuprof-plugin-scripted -p xpuprof-plugin-archive \
  -p xpuprof-plugin-folded -p xpuprof-plugin-chrome -p xpuprof-plugin-perfetto -p xpuprof-plugin-pprof
AFTER=$(realpath -m "${CARGO_TARGET_DIR:-target}/release")
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
cat > "$D/xpuprof.toml" <<TOML
[source.scripted]
repeat = $ROUNDS
TOML
LAUNCHES=$((ROUNDS * 6))
# Prints "wall_s peak_kib cpu_s" of one command.
peak() { python3 - "$@" <<'PY'
import resource, subprocess, sys, time
t = time.perf_counter()
r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
dt = time.perf_counter() - t
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"{dt:.3f} {ru.ru_maxrss} {ru.ru_utime + ru.ru_stime:.3f}")
sys.exit(r.returncode)
PY
}
# One round of the three steps with the build in $1 (absolute), outputs under $D/$2; appends
# "build step wall peak cpu" lines to $D/results.
round() {
  local bin=$1 tag=$2 x="$1/xpuprof"
  # The scripted source is a test plugin (libxpuprof_test_*), found only where it is named.
  export XPUPROF_PLUGIN_PATH="$AFTER/libxpuprof_test_scripted.so"
  rm -rf "$D/$tag"
  mkdir -p "$D/$tag"
  echo "$tag record $(cd "$D" && peak taskset -c 0 "$x" --quiet --source scripted --sink archive -o "$tag/rec" -- true)" >> "$D/results"
  echo "$tag folded+chrome $(peak taskset -c 0 "$x" report "$D/$tag/rec" --sink folded,chrome -o "$D/$tag/rep")" >> "$D/results"
  echo "$tag perfetto+pprof $(peak taskset -c 0 "$x" report "$D/$tag/rec" --sink perfetto,pprof -o "$D/$tag/pp")" >> "$D/results"
}
for _ in $(seq "$REPEATS"); do
  if [ -n "$BEFORE" ]; then round "$(cd "$BEFORE" && pwd)" before; fi
  round "$AFTER" after
done
arch=$(du -b "$D/after/rec/archive" | tail -1 | cut -f1)
chrome=$(stat -c %s "$D/after/rep/trace.json")
perfetto=$(stat -c %s "$D/after/pp/trace.perfetto-trace")
python3 - "$LAUNCHES" "$D/results" "$arch" "$chrome" "$perfetto" <<'PY'
import statistics, sys
n, results, arch, chrome, perfetto = int(sys.argv[1]), sys.argv[2], *map(int, sys.argv[3:])
runs = {}
for line in open(results):
    build, step, wall, kib, cpu = line.split()
    runs.setdefault((build, step), []).append((float(wall), int(kib), float(cpu)))
builds = [b for b in ("before", "after") if any(k[0] == b for k in runs)]
print(f"launches {n}; medians of {len(runs[('after', 'record')])} interleaved runs, one core (taskset -c 0)")
print("wall and CPU time (user + system): on a shared machine CPU time is the steadier figure")
head = f"{'step':16}" + "".join(f"{b + ' M launches/s (CPU M/s)':>32}{'peak MiB':>10}" for b in builds)
print(head + ("   CPU ratio" if len(builds) == 2 else ""))
for step in ("record", "folded+chrome", "perfetto+pprof"):
    line, cpus = f"{step:16}", []
    for b in builds:
        r = runs[(b, step)]
        wall = statistics.median(x[0] for x in r)
        cpu = statistics.median(x[2] for x in r)
        peak = max(x[1] for x in r) / 1024
        cpus.append(cpu)
        line += f"{n / wall / 1e6:>20.2f} ({n / cpu / 1e6:5.2f})      {peak:>10.0f}"
    if len(cpus) == 2:
        line += f"   {cpus[0] / cpus[1]:8.2f}x"
    print(line)
print(f"archive          {arch / n:.1f} bytes/launch")
print(f"chrome JSON      {chrome / n:.1f} bytes/launch")
print(f"perfetto trace   {perfetto / n:.1f} bytes/launch")
PY
