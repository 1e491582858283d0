#!/usr/bin/env bash
# B3/B4 without a GPU: records a large scripted session (the test double source, same record
# shapes as a CUDA run: API call + launch stack + device op per launch) into an archive, then
# replays it into folded+chrome, then into perfetto+pprof, on one core. Prints launches/s, peak
# memory, and bytes per launch of the archive next to the chrome JSON and the Perfetto trace. Usage: scripts/bench-postprocess.sh [ROUNDS]
# (each round = 6 launches causing 8 device operations).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-170000}
cargo build -q --release -p xpuprof-core -p xpuprof-plugin-scripted -p xpuprof-plugin-archive \
  -p xpuprof-plugin-folded -p xpuprof-plugin-chrome -p xpuprof-plugin-perfetto -p xpuprof-plugin-pprof
X=target/release/xpuprof
# The scripted source is a test plugin (libxpuprof_test_*), found only where it is named.
export XPUPROF_PLUGIN_PATH="$PWD/target/release/libxpuprof_test_scripted.so"
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
cat > "$D/xpuprof.toml" <<TOML
[source.scripted]
repeat = $ROUNDS
TOML
LAUNCHES=$((ROUNDS * 6))
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
read -r rec_s rec_kb rec_cpu < <(cd "$D" && peak taskset -c 0 "$OLDPWD/$X" --quiet --source scripted --sink archive -o rec -- true)
read -r rep_s rep_kb rep_cpu < <(peak taskset -c 0 "$X" report "$D/rec" --sink folded,chrome -o "$D/rep")
read -r pp_s pp_kb pp_cpu < <(peak taskset -c 0 "$X" report "$D/rec" --sink perfetto,pprof -o "$D/pp")
arch=$(du -b "$D/rec/archive" | tail -1 | cut -f1)
chrome=$(stat -c %s "$D/rep/trace.json")
perfetto=$(stat -c %s "$D/pp/trace.perfetto-trace")
python3 - "$LAUNCHES" "$rec_s" "$rec_kb" "$rep_s" "$rep_kb" "$arch" "$chrome" "$pp_s" "$pp_kb" "$perfetto" "$rec_cpu" "$rep_cpu" "$pp_cpu" <<'PY'
import sys
n, rec_s, rec_kb, rep_s, rep_kb, arch, chrome, pp_s, pp_kb, perfetto, rec_cpu, rep_cpu, pp_cpu = sys.argv[1:]
n = int(n)
print(f"launches                       {n}")
# Wall time, and CPU time (user + system): on a shared machine the second is the steadier figure.
def rate(s, cpu):
    return f"{float(s):.2f} s  {n/float(s)/1e6:.2f} M launches/s  (CPU {float(cpu):.2f} s: {n/float(cpu)/1e6:.2f} M/s)"
print(f"record (pipeline + archive)    {rate(rec_s, rec_cpu)}  peak {int(rec_kb)/1024:.0f} MiB")
print(f"B3 replay -> folded+chrome     {rate(rep_s, rep_cpu)}  peak {int(rep_kb)/1024:.0f} MiB (one core)")
print(f"B4 archive                     {int(arch)/n:.1f} bytes/launch")
print(f"replay -> perfetto+pprof       {rate(pp_s, pp_cpu)}  peak {int(pp_kb)/1024:.0f} MiB (one core)")
print(f"B4 chrome JSON                 {int(chrome)/n:.1f} bytes/launch")
print(f"perfetto trace                 {int(perfetto)/n:.1f} bytes/launch")
PY
