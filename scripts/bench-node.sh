#!/usr/bin/env bash
# #16 item 1, "an 8-GPU node": a live session whose source delivers 8 devices' worth of kernel
# launches at RATE launches/s per device for SECONDS seconds, recorded by the host pinned to one
# core (taskset -c 0), into the sinks a long run uses: `archive`, then `archive,perfetto`.
# The source is the scripted test double (no GPU) in paced mode: it emits on its own thread (on
# the same core: its cost is counted in the host's CPU time) and, like an in-target agent whose
# buffer holds 0.5 s of work, drops what is due longer ago and counts it in a Loss record.
# Prints, per run: launches produced (due on the clock), recorded (in the archive), lost
# (counted), the host's CPU time and share of the core, peak memory, and how late the session
# ended (the backlog the host still had to drain when the source stopped).
#
# Usage: scripts/bench-node.sh [RATE...]   (default: 100000 150000; each RATE = launches/s/GPU)
# Env: DEVICES (8), SECONDS_RUN (10), CORE (the core to pin to, 0). CARGO_TARGET_DIR as cargo's own variable says.
set -euo pipefail
cd "$(dirname "$0")/.."
RATES=("${@:-100000}")
[ $# -eq 0 ] && RATES=(100000 150000)
DEVICES=${DEVICES:-8}
SECS=${SECONDS_RUN:-10}
cargo build -q --release -p xpuprof-core -p xpuprof-plugin-scripted -p xpuprof-plugin-archive \
  -p xpuprof-plugin-perfetto -p xpuprof-plugin-summary
BIN=$(realpath -m "${CARGO_TARGET_DIR:-target}/release")
export XPUPROF_PLUGIN_PATH="$BIN/libxpuprof_test_scripted.so"
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
printf '%-9s %-17s %10s %10s %9s %7s %7s %7s %7s %8s %7s\n' "rate/GPU" sinks produced recorded \
  "lost" "CPU s" "host s" "src s" "host %" "peak MiB" "drain s"
for rate in "${RATES[@]}"; do
  rounds=$((rate * SECS / 6))
  cat > "$D/xpuprof.toml" <<TOML
[source.scripted]
repeat = $rounds
devices = $DEVICES
rate = $rate
TOML
  for sinks in archive archive,perfetto; do
    rm -rf "$D/out" "$D/sum"
    # The session lasts SECS + 2 s (the command); the source's clock ends after SECS. Half a
    # second before the end, the CPU time of each thread is read from /proc: the source
    # thread's (the test double's encoding, which real agents do in the target) apart.
    python3 - "$D" "$BIN/xpuprof" "$sinks" "$SECS" > "$D/run" <<'PY'
import glob, os, resource, subprocess, sys, time
d, x, sinks, secs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
t = time.perf_counter()
p = subprocess.Popen(["taskset", "-c", os.environ.get("CORE", "0"), x, "--source", "scripted", "--sink", sinks, "-o",
                      "out", "--", "sleep", str(secs + 2)], cwd=d, stdout=subprocess.DEVNULL,
                     stderr=open(d + "/stderr", "w"))
time.sleep(secs + 1.5)
tick = os.sysconf("SC_CLK_TCK")
src = 0.0
for task in glob.glob(f"/proc/{p.pid}/task/*"):
    try:
        comm = open(task + "/comm").read().strip()
        f = open(task + "/stat").read().rsplit(")", 1)[1].split()
    except OSError:
        continue
    if comm == "scripted-paced":
        src += (int(f[11]) + int(f[12])) / tick
rc = p.wait()
wall = time.perf_counter() - t
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"{wall:.2f} {ru.ru_utime + ru.ru_stime:.2f} {src:.2f} {ru.ru_maxrss} {rc}")
PY
    read -r wall cpu src kib rc < "$D/run"
    [ "$rc" = 0 ] || { cat "$D/stderr" >&2; exit 1; }
    "$BIN/xpuprof" report "$D/out/archive" --sink summary -o "$D/sum" > /dev/null 2>&1
    python3 - "$rate" "$sinks" "$DEVICES" "$SECS" "$rounds" "$wall" "$cpu" "$src" "$kib" "$D" <<'PY'
import json, sys
rate, sinks = sys.argv[1], sys.argv[2]
devs, secs, rounds = map(int, sys.argv[3:6])
wall, cpu, src, kib, d = float(sys.argv[6]), float(sys.argv[7]), float(sys.argv[8]), int(sys.argv[9]), sys.argv[10]
produced = rounds * 6 * devs
x = json.load(open(d + "/sum/summary.json"))["xpuprof"]
# Every launch has a launch site; the script's epilogue adds 2 (its allocations).
recorded = x["records_by_kind"]["launch_site"] - 2
losses = {l["cause"]: l["count"] for l in x["losses"]}
lost = losses.pop("scripted agent buffer full (host behind)", 0)
# What the host itself reports: dropped/late records and losses other than the script's fixed ones.
err = open(d + "/stderr").read()
host = cpu - src
print(f"{rate:9} {sinks:17} {produced:10} {recorded:10} {lost:9} {cpu:7.2f} {host:7.2f} {src:7.2f} "
      f"{100 * host / secs:6.0f}% {kib / 1024:8.0f} {wall - secs - 2:7.2f}")
# The script's own fixed ones: its scripted loss and its one kernel matching no launch.
other = {k: v for k, v in losses.items()
         if k not in ("scripted ring buffer full", "device work without a launch site")}
if recorded + lost != produced or other:
    print(f"  MISMATCH: recorded + lost != produced, or other losses: {other}")
for line in err.splitlines():
    if any(w in line for w in ("late", "dropped", "losses", "lost")):
        print("  host:", line.strip())
PY
  done
done
echo "lost: launches the paced double dropped (its 0.5 s agent buffer overflowed) and counted in a Loss"
echo "record; host s = CPU time less the source thread's (src s), host % = host s / ${SECS} s of one core;"
echo "drain s = how long the session ran past the command's end (backlog written at stop)"
