#!/usr/bin/env bash
# The one device script: builds the CUDA test programs, captures CUPTI fixtures, runs every
# program under `xpuprof --source cupti --sink folded,chrome` with exact checks, and runs the
# launch-bound benchmark. Run from the repository root on the GPU machine:
#
#   scripts/gpu/run-all.sh [capture] [test] [graphs] [agree] [stacks] [bench] [outputs] [attach] [e2e] [real]
#   (default: all but e2e and real, the benchmarks, which run on their own)
#
# Needs: nvcc and CUPTI (CUDA_HOME, default /usr/local/cuda-13.0), python3, and the Rust parts
# built on the development machine and carried in .device-carry/ (xpuprof, the plugins and
# libxpuprof_cupti_agent.so; see docs/gpu-test-notes.md). Logs go to $OUT (or /tmp/xpuprof-gpu);
# a summary table is printed last.
set -u
ROOT=$(pwd)
OUT=${OUT:-/tmp/xpuprof-gpu-out}
W=/tmp/xpuprof-gpu
CARRY=$ROOT/.device-carry
export CUDA_HOME=${CUDA_HOME:-/usr/local/cuda-13.0}
INC=$CUDA_HOME/targets/x86_64-linux/include
LIB=$CUDA_HOME/targets/x86_64-linux/lib
AGENT=$CARRY/libxpuprof_cupti_agent.so
# The agent's options as `xpuprof --source cupti` sets them, for runs of the agent alone (writing files).
AGENT_DEFAULT_OPTS=kernels=1,memcpy=1,memset=1,sync=0,memory=1,nvtx=1,devices=1,overhead=1,api=launches,stacks=agent
BENCH_N=${BENCH_N:-200000}
ROUNDS=${ROUNDS:-7}
STEPS=${*:-capture test graphs agree stacks bench outputs attach}   # e2e (issue 6) and real (issue 29) benchmarks: run them on their own
mkdir -p "$OUT" "$W/bin" "$W/fixtures" "$W/logs"
SUMMARY=$W/summary.txt
: >"$SUMMARY"
row() { printf '%-34s %s\n' "$1" "$2" | tee -a "$SUMMARY"; }

echo "== machine" | tee "$W/logs/machine.txt"
{ date -u; echo "clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)"; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; "$CUDA_HOME/bin/nvcc" --version | tail -2; ls "$LIB"/libcupti.so*; lscpu -e 2>/dev/null | head -20; } 2>&1 | tee -a "$W/logs/machine.txt"

# Medians and per-round ratios of "round config value" lines: bench_summary FILE N LABEL.
cat >"$W/bench_summary.py" <<'PY'
import sys, statistics, collections
path, n, label = sys.argv[1], int(sys.argv[2]), sys.argv[3]
unit = sys.argv[4] if len(sys.argv) > 4 else "us/launch"
t = collections.defaultdict(dict)
for line in open(path):
    r, c, s = line.split()
    if s != "nan" and float(s) >= 0: t[c][int(r)] = float(s)
med = {c: statistics.median(v.values()) for c, v in t.items() if v}
base, alone = med.get("unprofiled"), med.get("cupti_alone")
for c, m in med.items():
    a = f"{m/base:.3f}x unprofiled" if base else ""
    b = f"{m/alone:.3f}x cupti_alone" if alone else ""
    print(f"bench[{label}] {c:<20} median {m*1e6/n:7.3f} {unit}  {a}  {b}")
for c in [c for c in med if c not in ("unprofiled", "cupti_alone")]:
    rs = sorted(set(t[c]) & set(t.get("unprofiled", {})) & set(t.get("cupti_alone", {})))
    ra = [t[c][r] / t["unprofiled"][r] for r in rs]
    rb = [t[c][r] / t["cupti_alone"][r] for r in rs]
    if rs:
        print(f"bench[{label}] per-round {c}: vs unprofiled " + " ".join(f"{x:.2f}" for x in ra)
              + f" (median {statistics.median(ra):.3f}); vs cupti_alone " + " ".join(f"{x:.2f}" for x in rb)
              + f" (median {statistics.median(rb):.3f})")
PY
bench_summary() { python3 "$W/bench_summary.py" "$@"; }

# Summary of a file of "round config BENCH2AB|BENCH2RES|REAL k=v..." lines (round 0 is the warm-up):
# per configuration, the median of the processes' median pair ratio and of all pairs; for
# `ab`, also the paused windows' ms and loops per step against the unprofiled processes'.
pairs_summary() {  # label, file
  python3 - "$1" "$2" <<'PY' | tee -a "$SUMMARY"
import statistics, sys
label = sys.argv[1]
per, pooled, off, loops = {}, {}, {}, {}
for ln in open(sys.argv[2]):
  f = ln.split()
  if len(f) < 2 or f[0] == "0":
      continue
  kv = dict(x.split("=", 1) for x in f[3:] if "=" in x)
  if "ratio_median" not in kv:
      print(f"bench[{label}] {f[1]} round {f[0]}: no result")
      continue
  per.setdefault(f[1], []).append(float(kv["ratio_median"]))
  pooled.setdefault(f[1], []).extend(float(v) for v in kv["ratios"].split(","))
  if "off_ms_median" in kv:
      off.setdefault(f[1], []).append(float(kv["off_ms_median"]))
      loops.setdefault(f[1], []).append(float(kv.get("off_loops_median", "nan")))
base = statistics.median(loops["unprofiled"]) if "unprofiled" in loops else None
for c in per:
  q = sorted(pooled[c])
  line = (f"bench[{label}] {c:<22} on/off median of processes {statistics.median(per[c]):.3f} "
          f"(processes {' '.join(f'{v:.3f}' for v in per[c])}); all pairs median {statistics.median(q):.3f} "
          f"[{q[len(q) // 4]:.3f}-{q[3 * len(q) // 4]:.3f}] n={len(q)}")
  if c in off:
      line += (f"; paused windows {statistics.median(off[c]):.3f} ms/step, {statistics.median(loops[c]):.4f} loops/step"
               + (f" ({statistics.median(loops[c]) / base:.3f}x unprofiled's)" if base else ""))
  print(line)
PY
}

# ---- build ---------------------------------------------------------------------------------
NVCC="$CUDA_HOME/bin/nvcc -g -O2 -std=c++17 -arch=sm_90 -Xcompiler -fno-omit-frame-pointer -I$INC"
PROGS="basic multi_stream multi_thread driver_launch graph_launch graph_stacks launch_bench markers"
# (A program built by an earlier call on the same machine, newer than its source, is kept.)
for p in $PROGS; do
  if [ "$W/bin/$p" -nt "plugins/cupti/tests/workloads/$p.cu" ]; then row "build $p" kept; continue; fi
  extra=""
  [ "$p" = driver_launch ] && extra="-lcuda"
  $NVCC -o "$W/bin/$p" "plugins/cupti/tests/workloads/$p.cu" $extra -ldl -lpthread >"$W/logs/build-$p.log" 2>&1 \
    && row "build $p" ok || { row "build $p" FAILED; cat "$W/logs/build-$p.log"; }
done
$NVCC -o "$W/bin/other_subscriber" plugins/cupti/tests/workloads/other_subscriber.cu -L"$LIB" -lcupti -Xlinker -rpath,"$LIB" \
  >"$W/logs/build-other_subscriber.log" 2>&1 && row "build other_subscriber" ok || row "build other_subscriber" FAILED
g++ -O2 -shared -fPIC -o "$W/bin/libcupti_alone.so" plugins/cupti/tests/workloads/cupti_alone.cpp -I"$INC" -L"$LIB" -lcupti \
  -Wl,-rpath,"$LIB" >"$W/logs/build-cupti_alone.log" 2>&1 && row "build cupti_alone" ok || row "build cupti_alone" FAILED

# Small sizes for fixtures, larger ones for the checks.
declare -A SMALL=([basic]=3 [multi_stream]=4 [multi_thread]=4 [driver_launch]=3 [graph_launch]=2 [graph_stacks]=2 [launch_bench]=50)
declare -A SIZE=([basic]=50 [multi_stream]=200 [multi_thread]=500 [driver_launch]=100 [graph_launch]=100 [graph_stacks]=50 [launch_bench]=20000)

# ---- capture: raw agent streams for the CI decoder tests ---------------------------------------
if [[ " $STEPS " == *" capture "* ]]; then
  for p in basic multi_stream multi_thread driver_launch graph_launch graph_stacks launch_bench; do
    d=$W/fixtures/$p; rm -rf "$d"; mkdir -p "$d"
    opts="verbose=1"; [ "$p" = basic ] && opts="verbose=1,api=all"
    CUDA_INJECTION64_PATH=$AGENT NVTX_INJECTION64_PATH=$AGENT XPUPROF_CUPTI_DUMP=$d XPUPROF_CUPTI_OPTS=$opts \
      "$W/bin/$p" "${SMALL[$p]}" >"$d/stdout.txt" 2>"$d/stderr.txt"
    rc=$?
    n=$(ls "$d"/cupti-*.bin 2>/dev/null | wc -l)
    row "capture $p" "rc=$rc dumps=$n $(grep -h 'launch sites' "$d/stderr.txt" | sed 's/.*): //' | head -1)"
    # Function symbols (address size type name) let CI tests name launch-site frames without
    # the binary: these programs map their code at file offset == virtual address.
    nm -C -S --defined-only "$W/bin/$p" | awk '$3 ~ /^[tTwW]$/' >"$d/$p.syms"
    readelf -lW "$W/bin/$p" | grep LOAD >"$d/$p.loads"
  done
  (cd "$W" && tar czf "$OUT/fixtures.tar.gz" fixtures)
fi

# ---- test: every program under xpuprof, checked ------------------------------------------------
if [[ " $STEPS " == *" test "* ]]; then
  if [ -x "$CARRY/xpuprof" ]; then
    for p in basic multi_stream multi_thread driver_launch graph_launch graph_stacks launch_bench; do
      o=$W/out/$p; rm -rf "$o"
      "$CARRY/xpuprof" --plugin-dir "$CARRY" --source cupti --sink folded,chrome -o "$o" -- "$W/bin/$p" "${SIZE[$p]}" \
        >"$W/logs/test-$p.out" 2>"$W/logs/test-$p.err"
      rc=$?
      res=$(python3 scripts/gpu/check_profile.py "$o" "$W/logs/test-$p.out" "$W/logs/test-$p.err" 2>&1 | tail -1)
      row "test $p" "rc=$rc $res"
    done
    # Two CUDA processes in one job (bash starts both): one agent connection each.
    o=$W/out/twoproc; rm -rf "$o"
    "$CARRY/xpuprof" --plugin-dir "$CARRY" --source cupti --sink folded,chrome -o "$o" -- \
      bash -c "'$W/bin/multi_stream' 50 & '$W/bin/graph_launch' 20; wait" >"$W/logs/test-twoproc.out" 2>"$W/logs/test-twoproc.err"
    rc=$?
    echo "EXPECT kernels=160 launchers=launch_on_streams,launch_graph" >"$W/logs/test-twoproc.expect"
    res=$(python3 scripts/gpu/check_profile.py "$o" "$W/logs/test-twoproc.expect" "$W/logs/test-twoproc.err" 2>&1 | tail -1)
    # A kernel's launching process: the API call at its arrow's start (v2 arrows: the same bind_id,
    # flow_out), or args.pid for a kernel without an arrow (as tests/workloads/torch/check_e2e.py).
    pids=$(python3 -c "import json; e=json.load(open('$o/trace.json')); e=e.get('traceEvents',e) if isinstance(e,dict) else e; l={x['bind_id']: x.get('pid') for x in e if x.get('flow_out') and 'bind_id' in x}; print(len({x.get('args',{}).get('pid', l.get(x.get('bind_id'))) for x in e if x.get('cat')=='kernel'} - {None}))" 2>/dev/null)
    row "test two processes" "rc=$rc kernel_pids=${pids:-?} $res"
    # PyTorch (dynamically linked libcudart from the wheel: the agent finds the wheel's CUPTI).
    o=$W/out/torch; rm -rf "$o"
    "$CARRY/xpuprof" --plugin-dir "$CARRY" --source cupti --sink folded,chrome -o "$o" -- python3 plugins/cupti/tests/workloads/torch_smoke.py \
      >"$W/logs/test-torch.out" 2>"$W/logs/test-torch.err"
    rc=$?
    res=$(python3 scripts/gpu/check_profile.py "$o" "$W/logs/test-torch.out" "$W/logs/test-torch.err" 2>&1 | tail -1)
    row "test torch" "rc=$rc $res"
    # Ctrl+C: the agent flushes on SIGINT, so an interrupted run still has its kernels.
    o=$W/out/sigint; rm -rf "$o"
    timeout -s INT 4 "$CARRY/xpuprof" --plugin-dir "$CARRY" --source cupti --sink folded,chrome -o "$o" -- \
      "$W/bin/launch_bench" 100000000 >"$W/logs/test-sigint.out" 2>"$W/logs/test-sigint.err"
    rc=$?
    k=$(grep -c '\[GPU_Kernel\]' "$o/profile.folded" 2>/dev/null)
    u=$(grep -c 'unknown launch site' "$o/profile.folded" 2>/dev/null)
    row "test sigint (Ctrl+C after 4 s)" "rc=$rc folded_kernel_lines=${k:-0} unknown_site_lines=${u:-0} $(grep -o 'device ops: .*' "$W/logs/test-sigint.err" | head -1)"
    # Another CUPTI client in the process: one clear message, the program unharmed.
    "$CARRY/xpuprof" --plugin-dir "$CARRY" --source cupti --sink folded -o "$W/out/other" -- "$W/bin/other_subscriber" \
      >"$W/logs/test-other.out" 2>"$W/logs/test-other.err"
    rc=$?
    row "test other CUPTI client" "rc=$rc $(grep -o 'cuptiSubscribe failed[^;]*; another CUPTI client' "$W/logs/test-other.err" | head -1) | $(cat "$W/logs/test-other.out")"
    # No xpuprof host listening: the agent must switch itself off and the program run unharmed.
    CUDA_INJECTION64_PATH=$AGENT XPUPROF_CUPTI_SOCKET=/nonexistent/sock "$W/bin/basic" 2 >"$W/logs/test-nohost.out" 2>"$W/logs/test-nohost.err"
    row "test no host" "rc=$? $(head -c 200 "$W/logs/test-nohost.err" | tr '\n' ' ')"
    (cd "$W" && tar czf "$OUT/profiles.tar.gz" --exclude=out/sigint/trace.json --exclude=out/launch_bench/trace.json out)
  else
    row "test" "skipped: no $CARRY/xpuprof"
  fi
fi

# ---- graphs: CUDA-graph kernels under their replay and capture stacks (#13.3) ---------------------
# graph_stacks captures a graph in capture_graph, builds one node by node in add_nodes (with the
# first as a child graph), instantiates them three times and replays all from replay: in each
# folded mode every replayed kernel must sit where check_graph_stacks.py says. Then a PyTorch
# torch.cuda.CUDAGraph captured in capture_model and replayed from replay_steps (default mode).
if [[ " $STEPS " == *" graphs "* ]]; then
  if [ -x "$CARRY/xpuprof" ]; then
    for mode in both replay capture; do
      printf '[sink.folded]\ngraph_stacks = "%s"\n' "$mode" >"$W/graphs-$mode.toml"
      o=$W/out/graphs-$mode; rm -rf "$o"
      "$CARRY/xpuprof" --plugin-dir "$CARRY" -c "$W/graphs-$mode.toml" --source cupti --sink folded -o "$o" -- \
        "$W/bin/graph_stacks" "${SIZE[graph_stacks]}" >"$W/logs/graphs-$mode.out" 2>"$W/logs/graphs-$mode.err"
      rc=$?
      res=$(python3 scripts/gpu/check_graph_stacks.py "$o/profile.folded" "$W/logs/graphs-$mode.out" "$W/logs/graphs-$mode.err" "$mode" 2>&1 | tail -1)
      row "graphs graph_stacks $mode" "rc=$rc $res"
    done
    o=$W/out/graphs-torch; rm -rf "$o"
    "$CARRY/xpuprof" --plugin-dir "$CARRY" --source cupti --sink folded -o "$o" -- python3 tests/workloads/torch/cuda_graph.py \
      >"$W/logs/graphs-torch.out" 2>"$W/logs/graphs-torch.err"
    rc=$?
    res=$(python3 scripts/gpu/check_graph_stacks.py "$o/profile.folded" "$W/logs/graphs-torch.out" "$W/logs/graphs-torch.err" both 2>&1 | tail -1)
    row "graphs torch CUDAGraph" "rc=$rc $res"
    grep '\[recorded at\]' "$o/profile.folded" | sort -t' ' -k2 -nr | head -3 | cut -c1-600 >"$W/logs/graphs-torch.top"
    (cd "$W" && tar czf "$OUT/graphs.tar.gz" out/graphs-* logs/graphs-*)
  else
    row "graphs" "skipped: no $CARRY/xpuprof"
  fi
fi

# ---- agree: agent stacks vs eBPF trampoline stacks for the same launches (needs root) ----------
# Carried: libxpuprof_plugin_ebpf.so. The host compares the two stacks of every launch itself and
# prints the verdict in its end summary ("launch stacks from two sources: ...").
if [[ " $STEPS " == *" agree "* ]]; then
  if [ -f "$CARRY/libxpuprof_plugin_ebpf.so" ]; then
    # The eBPF plugin links libelf; use the carried copy where the machine has none.
    ldconfig -p | grep -q 'libelf.so.1 ' || export LD_LIBRARY_PATH=$CARRY/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    uname -r >"$W/logs/kernel.txt"; ls -la /sys/kernel/btf/vmlinux >>"$W/logs/kernel.txt" 2>&1
    # No launch_stacks_from_trampoline: the eBPF source's default finds the agent's trampoline.
    printf '[source.cupti]\nlaunch_stacks = "both"\n[source.ebpf]\nsample_hz = 0\n' >"$W/both.toml"
    for p in basic multi_stream multi_thread driver_launch graph_launch launch_bench; do
      o=$W/agree/$p; rm -rf "$o"
      "$CARRY/xpuprof" --plugin-dir "$CARRY" --source ebpf,cupti --sink folded -c "$W/both.toml" -o "$o" -- \
        "$W/bin/$p" "${SMALL[$p]}" >"$W/logs/agree-$p.out" 2>"$W/logs/agree-$p.err"
      rc=$?
      row "agree $p" "rc=$rc $(grep -o 'launch stacks from two sources: .*' "$W/logs/agree-$p.err" || echo 'no launch had stacks from two sources')"
    done
    grep -h -i "error\|warn" "$W"/logs/agree-*.err | sort | uniq -c | head -5
  else
    row "agree" "skipped: carry libxpuprof_plugin_ebpf.so"
  fi
fi

# ---- stacks: launch stacks through host code without frame pointers (#13.1) --------------------
# frameless.cu is built with -fomit-frame-pointer and launches from main -> level1..level4 ->
# launch_kernels: every kernel must sit under that full path, rooted at _start (agent stacks:
# CFI unwind in the agent), and with the eBPF source too (copied stack unwound by the host from
# the agent's caller-side registers), where both stacks of every launch must agree.
# ---- stacks: what the launch stacks show (Python frames, CFI through libtorch) -----------------
# Python rows: GPU time under a frame `function (workload.py:LINE)` of the workload's own file and
# rooted at a thread start (check_python_stacks.py: py / rooted / both >= 95%), the GPU time with
# no Python frame by its root frames (autograd's device threads run the backward kernels), and for
# torch.compile the Triton kernels under the line that calls the compiled function.
if [[ " $STEPS " == *" stacks "* ]]; then
  # Native frames (#13.1, unwind):
  $CUDA_HOME/bin/nvcc -g -O2 -std=c++17 -arch=sm_90 -Xcompiler -fomit-frame-pointer -I"$INC" -o "$W/bin/frameless" \
    plugins/cupti/tests/workloads/frameless.cu -ldl -lpthread >"$W/logs/build-frameless.log" 2>&1 \
    && row "build frameless" ok || { row "build frameless" FAILED; cat "$W/logs/build-frameless.log"; }
  if [ -x "$CARRY/xpuprof" ]; then
    o=$W/out/stacks-agent; rm -rf "$o"
    "$CARRY/xpuprof" --plugin-dir "$CARRY" --source cupti --sink folded -o "$o" -- "$W/bin/frameless" 50 \
      >"$W/logs/stacks-agent.out" 2>"$W/logs/stacks-agent.err"
    rc=$?
    row "stacks frameless (agent)" "rc=$rc $(python3 scripts/gpu/check_stacks.py "$o" "$W/logs/stacks-agent.out" 2>&1 | tail -1)"
    if [ -f "$CARRY/libxpuprof_plugin_ebpf.so" ]; then
      ldconfig -p | grep -q 'libelf.so.1 ' || export LD_LIBRARY_PATH=$CARRY/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
      printf '[source.cupti]\nlaunch_stacks = "both"\n[source.ebpf]\nsample_hz = 0\n' >"$W/stacks-both.toml"
      o=$W/out/stacks-both; rm -rf "$o"
      "$CARRY/xpuprof" --plugin-dir "$CARRY" --source ebpf,cupti --sink folded -c "$W/stacks-both.toml" -o "$o" -- \
        "$W/bin/frameless" 50 >"$W/logs/stacks-both.out" 2>"$W/logs/stacks-both.err"
      rc=$?
      row "stacks frameless (agent+eBPF)" "rc=$rc $(python3 scripts/gpu/check_stacks.py "$o" "$W/logs/stacks-both.out" 2>&1 | tail -1)"
      row "stacks frameless agree" "$(grep -o 'launch stacks from two sources: .*' "$W/logs/stacks-both.err" || echo 'no launch had stacks from two sources')"
      # eBPF stacks alone (the agent walks nothing): the same full path from the copied stack.
      printf '[source.cupti]\nlaunch_stacks = "ebpf"\n[source.ebpf]\nsample_hz = 0\n' >"$W/stacks-ebpf.toml"
      o=$W/out/stacks-ebpf; rm -rf "$o"
      "$CARRY/xpuprof" --plugin-dir "$CARRY" --source ebpf,cupti --sink folded -c "$W/stacks-ebpf.toml" -o "$o" -- \
        "$W/bin/frameless" 50 >"$W/logs/stacks-ebpf.out" 2>"$W/logs/stacks-ebpf.err"
      rc=$?
      row "stacks frameless (eBPF stacks)" "rc=$rc $(python3 scripts/gpu/check_stacks.py "$o" "$W/logs/stacks-ebpf.out" 2>&1 | tail -1)"
    else
      row "stacks eBPF" "skipped: carry libxpuprof_plugin_ebpf.so"
    fi
    (cd "$W" && tar czf "$OUT/stacks-native.tar.gz" out/stacks-* logs/stacks-*)
  else
    row "stacks" "skipped: no $CARRY/xpuprof"
  fi
  # Python frames (#13.2, python):
  if [ -x "$CARRY/xpuprof" ]; then
    mkdir -p "$W/stacks"
    for mode in infer train; do
      o=$W/stacks/torch-$mode; rm -rf "$o"
      "$CARRY/xpuprof" --plugin-dir "$CARRY" -v --source cupti --sink folded -o "$o" -- \
        python3 tests/workloads/torch/workload.py --mode $mode --steps 20 >"$W/logs/stacks-torch-$mode.out" 2>"$W/logs/stacks-torch-$mode.err"
      rc=$?
      row "stacks python torch $mode" "rc=$rc $(python3 scripts/gpu/check_python_stacks.py "$o" tests/workloads/torch/workload.py 2>&1 | tail -1)"
      row "stacks python torch $mode agent" "$(grep -o 'python frames on .*\|[0-9]* launch stacks of Python processes have native frames only' "$W/logs/stacks-torch-$mode.err" | tr '\n' ' ')"
    done
    o=$W/stacks/torch-compile; rm -rf "$o"
    "$CARRY/xpuprof" --plugin-dir "$CARRY" -v --source cupti --sink folded -o "$o" -- \
      python3 tests/workloads/torch/compiled.py --steps 50 >"$W/logs/stacks-torch-compile.out" 2>"$W/logs/stacks-torch-compile.err"
    rc=$?
    row "stacks python torch.compile" "rc=$rc $(python3 scripts/gpu/check_python_stacks.py "$o" tests/workloads/torch/compiled.py --call-marker '# CALL' 2>&1 | tail -1)"
    # CPU samples with Python frames (eBPF, read in BPF at each sample; #13.2): of the on-CPU time
    # of the threads that run Python (main thread), the share under a workload.py line and rooted
    # at a thread start (pythreads=; OpenBLAS/OpenMP/driver threads run no Python: nopy=); the
    # same share while the script runs (script=, what must reach 90: the interpreter's start-up
    # and shutdown run no line of it); the source's own counts, with how each run of Python
    # frames was placed (by its eval call's frame on the C stack, or by symbol as a fallback).
    if [ -f "$CARRY/libxpuprof_plugin_ebpf.so" ]; then
      printf '[source.ebpf]\nsample_hz = 499\n' >"$W/stacks-cpu.toml"
      o=$W/stacks/torch-cpu; rm -rf "$o"
      "$CARRY/xpuprof" --plugin-dir "$CARRY" -v --source ebpf,cupti --sink folded -c "$W/stacks-cpu.toml" -o "$o" -- \
        python3 tests/workloads/torch/workload.py --mode infer --steps 20 >"$W/logs/stacks-torch-cpu.out" 2>"$W/logs/stacks-torch-cpu.err"
      rc=$?
      row "stacks python torch cpu samples (eBPF)" "rc=$rc $(python3 scripts/gpu/check_python_stacks.py "$o" tests/workloads/torch/workload.py --cpu --min 90 2>&1 | tail -1) | $(grep -o 'ebpf: python frames on [^;]*' "$W/logs/stacks-torch-cpu.err" | tail -1) | $(grep -o 'runs of Python frames placed.*' "$W/logs/stacks-torch-cpu.err" | tail -1) | $(grep -o 'lost [0-9]*: Python[^(]*' "$W/logs/stacks-torch-cpu.err" | tr '\n' ' ')"
      # The same placement on a stdlib-only program 12 imports deep, with this machine's python3
      # (the interpreter torch runs on): rooted= >= 90 and exact= (the whole path in order) >= 90.
      row "stacks python nested imports (eBPF, $(python3 -c 'import platform; print(platform.python_version())'))" \
        "$(scripts/python-import-stacks.sh python3 "$CARRY/xpuprof" "$CARRY" 2>&1 | tr '\n' ' ')"
    else
      row "stacks python torch cpu samples (eBPF)" "skipped: carry libxpuprof_plugin_ebpf.so"
    fi
    # The agent's Python cost per launch (criterion, the machine's own libpython: 15 frames + merge).
    lp=$(ldconfig -p | awk '/libpython3\.[0-9]+\.so\.1\.0 / {print $NF; exit}')
    if [ -x "$CARRY/bench-python-capture" ] && [ -n "$lp" ]; then
      XPUPROF_BENCH_LIBPYTHON=$lp "$CARRY/bench-python-capture" --bench --warm-up-time 1 --measurement-time 3 \
        >"$W/logs/stacks-bench-python.out" 2>&1
      row "stacks python bench ($(basename "$lp"))" "$(grep -A1 '^python capture' "$W/logs/stacks-bench-python.out" | grep -o 'time: .*' | tr '\n' ' ')"
    else
      row "stacks python bench" "skipped: carry bench-python-capture (scripts/gpu/carry.sh) and a libpython3.X.so.1.0"
    fi
    # The agent's native launch-stack cost per launch (criterion; #13 B1 and the 40-frame CFI target):
    # launch site with a 40-frame stack built with / without frame pointers, and the walks alone;
    # then #13's budget case: a launch with 40 native frames through the CFI under 15 live Python
    # frames of the machine's libpython, captured and merged as the agent does (target <= 1 us).
    if [ -x "$CARRY/bench-launch-site" ]; then
      XPUPROF_BENCH_DEEP_C=sdk/unwind/tests/fixtures/deep.c XPUPROF_BENCH_LIBPYTHON=${lp:-libpython3.11.so.1.0} \
        "$CARRY/bench-launch-site" --bench --warm-up-time 1 --measurement-time 2 >"$W/logs/stacks-bench-native.out" 2>&1
      row "stacks budget bench ($(basename "${lp:-none}"))" "$(grep -A1 -E '^budget/launch_40_cfi_frames_15_python_frames( |$)' "$W/logs/stacks-bench-native.out" | grep -o 'time: .*' | head -1) | $(grep -o 'budget stack: .*' "$W/logs/stacks-bench-native.out" | head -1)"
      for b in launch_site/enter_exit_api_only launch_site/enter_exit_with_stack_40_frames_fp \
               launch_site/enter_exit_with_stack_40_frames_fp_framehop_only launch_site/enter_exit_with_stack_40_frames_cfi \
               walk/fast_path_fp_built_40 walk/framehop_only_fp_built_40 walk/fast_path_cfi_only_40 walk/frame_pointers_fp_built_40; do
        row "stacks native bench $b" "$(grep -A1 -E "^$b( |\$)" "$W/logs/stacks-bench-native.out" | grep -o 'time: .*' | head -1)"
      done
    else
      row "stacks native bench" "skipped: carry bench-launch-site (scripts/gpu/carry.sh, release)"
    fi
    (cd "$W" && tar czf "$OUT/stacks.tar.gz" stacks)
  else
    row "stacks" "skipped: no $CARRY/xpuprof"
  fi
fi

# ---- bench: launch-bound, configurations interleaved, medians and per-round ratios ------------
# Every configuration runs the same binary on the same CPU set (taskset, when present); the
# program times its own launch loop (first launch to final synchronize), so start-up and the
# host's post-processing are not in the figure.
if [[ " $STEPS " == *" bench "* ]]; then
  B=$W/bin/launch_bench
  # Every process on CPUs 3-9; the launch loop alone on CPU 2 (BENCH_CPU, set by the program
  # after start-up), so neither CUPTI's threads nor the profiler share the launching CPU.
  PIN=""; command -v taskset >/dev/null && PIN="taskset -c 3-9" && export BENCH_CPU=2
  # Metrics of the BENCH line: the loop's wall time, the median and the fastest 10k batch, the
  # launching thread's CPU time and its instructions (the one figure the machine's noise does
  # not move; -1 where the VM has no counter).
  METRICS="seconds batch_median_us batch_min_us thread_cpu_us instructions_per_launch"
  for m in $METRICS lines; do : >"$W/logs/bench-$m.txt"; done
  dump() { rm -rf "$W/dump" && mkdir -p "$W/dump"; }
  KONLY=stacks=off,api=off,memcpy=0,memset=0,sync=0,memory=0,nvtx=0,devices=0,overhead=0
  printf '[source.cupti]\nmemcpy = false\nmemset = false\n' >"$W/no-copies.toml"
  printf '[source.cupti]\nmemcpy = false\nmemset = false\nmemory = false\nnvtx = false\ndevices = false\noverhead = false\n' >"$W/kernels-only.toml"
  run_cfg() {
    case $1 in
      unprofiled) $PIN "$B" "$BENCH_N" ;;
      cupti_alone) CUDA_INJECTION64_PATH=$W/bin/libcupti_alone.so $PIN "$B" "$BENCH_N" ;;
      # CUPTI kernel tracing plus no-op callbacks on the driver's launch calls: CUPTI's own cost
      # of the callbacks any launch-site tracer needs.
      cupti_alone_cb) CUDA_INJECTION64_PATH=$W/bin/libcupti_alone.so CUPTI_ALONE_CALLBACKS=1 $PIN "$B" "$BENCH_N" ;;
      agent_kernels_only) dump; CUDA_INJECTION64_PATH=$AGENT XPUPROF_CUPTI_DUMP=$W/dump $PIN env \
        XPUPROF_CUPTI_OPTS=$KONLY,monotonic=0 "$B" "$BENCH_N" ;;
      agent_kernels_mono) dump; CUDA_INJECTION64_PATH=$AGENT XPUPROF_CUPTI_DUMP=$W/dump $PIN env \
        XPUPROF_CUPTI_OPTS=$KONLY "$B" "$BENCH_N" ;;
      # Kernel records with launch sites, every other kind off.
      agent_kernels_stacks) dump; CUDA_INJECTION64_PATH=$AGENT XPUPROF_CUPTI_DUMP=$W/dump $PIN env \
        XPUPROF_CUPTI_OPTS=${KONLY/stacks=off,api=off/stacks=agent,api=launches} "$B" "$BENCH_N" ;;
      # k_<kind>[+<kind>...]: kernel records plus the named record kinds (memcpy, memset, sync,
      # memory, nvtx, devices, overhead), no callbacks.
      k_*|cb_noop|kernels_cb_noop)
        local o=$KONLY
        case $1 in
          k_*) for k in ${1#k_}; do o="$o,${k//+/=1,}=1"; done ;;
          cb_noop) o="api=launches,stacks=off,callback_noop=1" ;;
          kernels_cb_noop) o="${KONLY/api=off/api=launches},callback_noop=1" ;;
        esac
        dump; CUDA_INJECTION64_PATH=$AGENT XPUPROF_CUPTI_DUMP=$W/dump $PIN env XPUPROF_CUPTI_OPTS=$o "$B" "$BENCH_N" ;;
      # The agent exactly as `xpuprof --source cupti` configures it, writing to files instead
      # of the host's socket: what the host costs the program.
      agent_default) dump; CUDA_INJECTION64_PATH=$AGENT XPUPROF_CUPTI_DUMP=$W/dump $PIN env \
        XPUPROF_CUPTI_OPTS=$AGENT_DEFAULT_OPTS "$B" "$BENCH_N" ;;
      agent_nocallbacks) dump; CUDA_INJECTION64_PATH=$AGENT XPUPROF_CUPTI_DUMP=$W/dump XPUPROF_CUPTI_OPTS=stacks=off,api=off $PIN "$B" "$BENCH_N" ;;
      agent_nostacks) dump; CUDA_INJECTION64_PATH=$AGENT XPUPROF_CUPTI_DUMP=$W/dump XPUPROF_CUPTI_OPTS=stacks=off $PIN "$B" "$BENCH_N" ;;
      xpuprof) $PIN "$CARRY/xpuprof" --plugin-dir "$CARRY" --source cupti --sink folded -o "$W/bench-out" -- "$B" "$BENCH_N" ;;
      # Kernel records and launch sites only, through the host: what the other kinds cost.
      xpuprof_kernels_only) $PIN "$CARRY/xpuprof" --plugin-dir "$CARRY" --source cupti -c "$W/kernels-only.toml" --sink folded \
        -o "$W/bench-out" -- "$B" "$BENCH_N" ;;
      xpuprof_no_copies) $PIN "$CARRY/xpuprof" --plugin-dir "$CARRY" --source cupti -c "$W/no-copies.toml" --sink folded \
        -o "$W/bench-out" -- "$B" "$BENCH_N" ;;
    esac
  }
  if [ ! -f "$W/bin/libcupti_alone.so" ] || [ ! -x "$B" ]; then
    row "bench" "not run: the baseline injection or launch_bench did not build (see logs/build-*.log)"
    ROUNDS=0
  fi
  CFGS=${BENCH_CFGS:-"unprofiled cupti_alone cupti_alone_cb agent_nocallbacks agent_nostacks"}
  [ -x "$CARRY/xpuprof" ] && [ -z "${BENCH_CFGS:-}" ] && CFGS="$CFGS xpuprof"
  for r in $(seq 1 "$ROUNDS"); do
    for c in $CFGS; do
      line=$(run_cfg "$c" 2>>"$W/logs/bench-$c.err" | grep '^BENCH')
      echo "$r $c $line" >>"$W/logs/bench-lines.txt"
      for m in $METRICS; do
        v=$(echo "$line" | sed -n "s/.*$m=\([-0-9.]*\).*/\1/p")
        echo "$r $c ${v:-nan}" >>"$W/logs/bench-$m.txt"
      done
    done
  done
  bench_summary "$W/logs/bench-seconds.txt" "$BENCH_N" total | tee -a "$SUMMARY"
  bench_summary "$W/logs/bench-batch_median_us.txt" 1000000 batch | tee -a "$SUMMARY"
  bench_summary "$W/logs/bench-batch_min_us.txt" 1000000 fastest-batch | tee -a "$SUMMARY"
  bench_summary "$W/logs/bench-thread_cpu_us.txt" 1000000 thread-cpu | tee -a "$SUMMARY"
  bench_summary "$W/logs/bench-instructions_per_launch.txt" 1000000 instructions instr/launch | tee -a "$SUMMARY"
fi

# ---- outputs: real CUDA runs through the perfetto and pprof sinks, kept as fixtures ------------
if [[ " $STEPS " == *" outputs "* ]]; then
  if [ -x "$CARRY/xpuprof" ]; then
    scripts/gpu/capture-outputs.sh "$W/bin" "$CARRY" "$W" 2>&1 | tee -a "$SUMMARY"
    (cd "$W" && tar czf "$OUT/outputs.tar.gz" outputs)
  else
    row "outputs" "skipped: no $CARRY/xpuprof"
  fi
fi

# ---- attach: capture windows and attach on a running job (#25) ----------------------------------
# 1. markers.cu: --capture-range cuda-profiler-api and nvtx:window select exactly the kernels between
#    the markers (stop: 7 inside_kernel, repeat: 11; never an outside_kernel).
# 2. attach_train.py (PyTorch training): the kernels per step come from a calibration run
#    (--capture-range cuda-profiler-api around 50 steps); a run under `record --delay 12s
#    --duration 3s` must hold every step of its window; then a loop started without xpuprof is
#    attached after ATTACH_DELAY s for ATTACH_DUR s, twice in a row (the second reuses the loaded
#    agent): check_attach.py wants every step inside each window with exactly its kernels, the
#    first record within 2 s of the attach, and prints the step time before/during/after;
#    check_python_stacks.py wants >= 99% of the GPU time under the workload's Python lines.
# xpuprof attach needs ptrace rights on the loop (root, or the same user with Yama ptrace_scope 0).
if [[ " $STEPS " == *" attach "* ]]; then
  if [ -x "$CARRY/xpuprof" ]; then
    A=$W/attach; rm -rf "$A"; mkdir -p "$A"
    # Kernel names are demangled or not (inside_kernel(float*), _Z13inside_kernelPf): by substring.
    count_kernels() { python3 -c "import json,sys; t=json.load(open(sys.argv[1])); e=t.get('traceEvents',t) if isinstance(t,dict) else t; n=[str(x.get('name')) for x in e if x.get('cat')=='kernel']; print(' '.join(f'{k}={sum(k in m for m in n)}' for k in ('inside_kernel','outside_kernel')))" "$1" 2>/dev/null; }
    for range in cuda-profiler-api nvtx:window; do
      mode=profiler; [ "$range" = nvtx:window ] && mode=nvtx
      for end in stop repeat; do
        o=$A/markers-$mode-$end
        "$CARRY/xpuprof" --plugin-dir "$CARRY" record --capture-range "$range" --capture-range-end $end --source cupti --sink chrome,folded -o "$o" -- \
          "$W/bin/markers" $mode >"$A/markers-$mode-$end.out" 2>"$A/markers-$mode-$end.err"
        rc=$?
        want="inside_kernel=7 outside_kernel=0"; [ $end = repeat ] && want="inside_kernel=11 outside_kernel=0"
        got=$(count_kernels "$o/trace.json")
        [ "$got" = "$want" ] && v=PASS || v=FAIL
        row "attach markers $range $end" "rc=$rc $v $got (want $want)"
      done
    done
    T=plugins/cupti/tests/workloads/attach_train.py
    "$CARRY/xpuprof" --plugin-dir "$CARRY" record --capture-range cuda-profiler-api --source cupti --sink chrome -o "$A/calib" -- \
      python3 "$T" --calibrate 50 --step-log "$A/calib-steps.log" >"$A/calib.out" 2>"$A/calib.err"
    rc=$?
    n=$(python3 -c "import json; t=json.load(open('$A/calib/trace.json')); e=t.get('traceEvents',t) if isinstance(t,dict) else t; print(sum(1 for x in e if x.get('cat')=='kernel'))" 2>/dev/null)
    KPS=$(( ${n:-0} / 50 )); row "attach calibrate" "rc=$rc kernels=${n:-?} of 50 steps: $KPS per step (remainder $(( ${n:-0} % 50 )))"
    D=${ATTACH_DELAY:-20}; L=${ATTACH_DUR:-5}
    # A window of a run started under xpuprof: dormant (CUPTI detached) for --delay, then --duration.
    "$CARRY/xpuprof" --plugin-dir "$CARRY" record --delay 12s --duration 3s --source cupti --sink chrome,folded -o "$A/delayed" -- \
      python3 "$T" --seconds 20 --step-log "$A/delayed-steps.log" >"$A/delayed.out" 2>"$A/delayed.err"
    rc=$?
    row "attach record --delay 12s --duration 3s" \
      "rc=$rc $(python3 scripts/gpu/check_attach.py "$A/delayed/trace.json" "$A/delayed-steps.log" "$KPS" 3 2>&1 | tail -1)"
    python3 "$T" --seconds $((D + 2 * L + 40)) --step-log "$A/steps.log" >"$A/train.out" 2>"$A/train.err" &
    TP=$!
    for _ in $(seq 1 120); do grep -q '^ready' "$A/train.out" && break; sleep 1; done
    sleep "$D"
    for k in 1 2; do
      o=$A/attach$k; t0=$(python3 -c 'import time; print(time.monotonic_ns())')
      "$CARRY/xpuprof" --plugin-dir "$CARRY" attach "$TP" --source cupti --sink chrome,folded,summary --duration ${L}s -v -o "$o" \
        >"$A/attach$k.out" 2>"$A/attach$k.err"
      rc=$?
      echo "$rc $t0" >"$A/attach$k.rc"
      sleep 10
    done
    wait "$TP"; rc=$?
    # Checked once the loop ended: the step time after each window needs the steps after it.
    for k in 1 2; do
      read -r arc t0 <"$A/attach$k.rc"
      row "attach $k ($(grep -o 'loaded the agent into\|reused the agent already loaded in' "$A/attach$k.err" | head -1))" \
        "rc=$arc $(python3 scripts/gpu/check_attach.py "$A/attach$k/trace.json" "$A/steps.log" "$KPS" "$L" "$t0" 2>&1 | tail -1)"
      row "attach $k python lines" "$(python3 scripts/gpu/check_python_stacks.py "$A/attach$k" "$T" --min 99 2>&1 | tail -1)"
    done
    row "attach training loop after both" "rc=$rc $(tail -1 "$A/train.out") $(grep -c -i 'error\|Traceback' "$A/train.err") error lines"
    # --tree on a 2-GPU torchrun launcher: every rank under it is recorded (2 or more GPUs only).
    if [ "$(nvidia-smi -L 2>/dev/null | wc -l)" -ge 2 ]; then
      python3 -m torch.distributed.run --nproc_per_node 2 "$T" --seconds 60 --step-log "$A/ranks.log" >"$A/tree.out" 2>"$A/tree.err" &
      TR=$!
      for _ in $(seq 1 120); do [ "$(grep -c '^ready' "$A/tree.out")" -ge 2 ] && break; sleep 1; done
      sleep 5
      "$CARRY/xpuprof" --plugin-dir "$CARRY" attach "$TR" --tree --source cupti --sink chrome,summary --duration ${L}s -v -o "$A/tree" \
        >"$A/tree-attach.out" 2>"$A/tree-attach.err"
      rc=$?
      pids=$(python3 -c "import json; t=json.load(open('$A/tree/trace.json')); e=t.get('traceEvents',t) if isinstance(t,dict) else t; l={x['bind_id']: x.get('pid') for x in e if x.get('flow_out') and 'bind_id' in x}; print(len({x.get('args',{}).get('pid', l.get(x.get('bind_id'))) for x in e if x.get('cat')=='kernel'} - {None}))" 2>/dev/null)
      wait "$TR"
      [ "${pids:-0}" -ge 2 ] && v=PASS || v=FAIL
      row "attach --tree torchrun 2 ranks" "rc=$rc $v kernel_pids=${pids:-?} $(grep -c 'loaded the agent into' "$A/tree-attach.err") agents loaded"
    fi
    (cd "$W" && tar czf "$OUT/attach.tar.gz" attach)
  else
    row "attach" "skipped: no $CARRY/xpuprof"
  fi
fi

# ---- e2e: issue 6 on this machine: B1 with the eBPF source, B5 losses, B4 sizes, B2 PyTorch --------
if [[ " $STEPS " == *" e2e "* ]]; then
  ldconfig -p | grep -q 'libelf.so.1 ' || export LD_LIBRARY_PATH=$CARRY/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  B=$W/bin/launch_bench
  # As in `bench`: every process on CPUs 3-9, the launch loop alone on CPU 2.
  PIN=""; command -v taskset >/dev/null && PIN="taskset -c 3-9"
  PIN=${E2E_PIN-$PIN}   # E2E_PIN="taskset -c 4-7" pins every run to other CPUs; E2E_PIN= pins nothing
  printf '[source.cupti]\nlaunch_stacks = "ebpf"\n' >"$W/ebpf-stacks.toml"
  X="$CARRY/xpuprof --plugin-dir $CARRY"
  e2e_cfg() {  # config, program + args...
    local c=$1; shift
    case $c in
      unprofiled) $PIN "$@" ;;
      cupti_alone) CUDA_INJECTION64_PATH=$W/bin/libcupti_alone.so $PIN "$@" ;;
      xpuprof_cupti) $PIN $X --source cupti --sink folded -o "$W/e2e-out/$c" -- "$@" ;;
      xpuprof_default) $PIN $X --source ebpf,cupti --sink folded -o "$W/e2e-out/$c" -- "$@" ;;
      xpuprof_uprobe) $PIN $X --source ebpf,cupti -c "$W/ebpf-stacks.toml" --sink folded -o "$W/e2e-out/$c" -- "$@" ;;
      torch_profiler|torch_profiler_stack) $PIN "$@" ;;
      # The breakdown of xpuprof's cost (B2_CFGS picks them): CUPTI with no-op callbacks on the
      # driver's launch calls; then the agent as `--source cupti` configures it, writing files
      # instead of the host's socket, with its callbacks returning at once, with launch stacks
      # off, with Python frames off, and whole; agent_kinds_<k>[+<k>...] is the whole agent with
      # kernel records plus only the named record kinds (memcpy memset memory nvtx devices
      # overhead; `none` for kernels alone): what each kind costs a launch-bound program.
      cupti_alone_cb) CUDA_INJECTION64_PATH=$W/bin/libcupti_alone.so CUPTI_ALONE_CALLBACKS=1 $PIN "$@" ;;
      agent_*)
        local o=$AGENT_DEFAULT_OPTS
        case $c in
          agent_cb_noop) o="$o,callback_noop=1" ;;
          agent_nostacks) o="${o/stacks=agent/stacks=off}" ;;
          agent_nopython) o="$o,python=off" ;;
          # agent_with_<opt>=<v>[+<opt>=<v>...]: the whole agent with these options changed.
          agent_with_*) o="$o,$(echo "${c#agent_with_}" | tr + ,)" ;;
          agent_kinds_*)
            o=kernels=1,memcpy=0,memset=0,sync=0,memory=0,nvtx=0,devices=0,overhead=0,api=launches,stacks=agent
            local k
            for k in $(echo "${c#agent_kinds_}" | tr + ' '); do [ "$k" = none ] || o="$o,$k=1"; done ;;
        esac
        rm -rf "$W/e2e-out/dump" && mkdir -p "$W/e2e-out/dump"
        CUDA_INJECTION64_PATH=$AGENT XPUPROF_CUPTI_DUMP=$W/e2e-out/dump XPUPROF_CUPTI_OPTS=$o $PIN "$@" ;;
    esac
  }
  # Parts (E2E_PARTS, default all but ab): b1 = B1 + B5, b4 = B4 sizes, b2 = B2 PyTorch, ab = B2
  # small paused/collecting in one process, residual = CUPTI attached idle vs detached; B2 knobs:
  # B2_SIZES (small large), B2_CFGS (all six), B2_STEPS (timed steps; the workload's default), ROUNDS_B2 (2).
  PARTS=" ${E2E_PARTS:-b1 b4 b2} "
  # B1 + B5
  if [[ $PARTS == *" b1 "* ]]; then
    : >"$W/logs/b1.txt"; : >"$W/logs/b1-batch.txt"
    for r in $(seq 1 "${ROUNDS_E2E:-5}"); do
      for c in unprofiled cupti_alone xpuprof_cupti xpuprof_default xpuprof_uprobe; do
        line=$(BENCH_CPU=${PIN:+2} e2e_cfg $c "$B" "$BENCH_N" 2>"$W/logs/b1-$c.err" | grep '^BENCH')
        echo "$r $c $(echo "$line" | sed -n 's/.*seconds=\([0-9.]*\).*/\1/p')" >>"$W/logs/b1.txt"
        echo "$r $c $(echo "$line" | sed -n 's/.*batch_median_us=\([0-9.]*\).*/\1/p')" >>"$W/logs/b1-batch.txt"
      done
    done
    bench_summary "$W/logs/b1.txt" "$BENCH_N" B1-total | tee -a "$SUMMARY"
    bench_summary "$W/logs/b1-batch.txt" 1000000 B1-batch | tee -a "$SUMMARY"
    for c in xpuprof_cupti xpuprof_default xpuprof_uprobe; do
      row "B5 $c (last round)" "$(grep -h 'device ops:\|losses:' "$W/logs/b1-$c.err" | tr -s ' ' | tr '\n' ' ')"
    done
  fi
  # B4: archive and chrome bytes per launch for the B1 program
  if [[ $PARTS == *" b4 "* ]]; then
    rm -rf "$W/e2e-out/b4"
    $X --source cupti --sink archive,chrome -o "$W/e2e-out/b4" -- "$B" "$BENCH_N" >/dev/null 2>"$W/logs/b4.err"
    a=$(du -cb "$W/e2e-out/b4/archive" | tail -1 | cut -f1); j=$(stat -c %s "$W/e2e-out/b4/trace.json" 2>/dev/null)
    row "B4 bytes per launch (N=$BENCH_N+100)" "archive $(python3 -c "print(round($a/($BENCH_N+100),1))") chrome $(python3 -c "print(round(${j:-0}/($BENCH_N+100),1))")"
  fi
  T=plugins/cupti/tests/workloads/transformer_bench.py
  # B2 small, paused/collecting windows in one process (transformer_bench.py mode ab): part `ab`;
  # knobs AB_CFGS (unprofiled = the method's own spread), ROUNDS_AB (4), AB_STEPS (2000), AB_PAIRS (20).
  if [[ $PARTS == *" ab "* ]]; then
    : >"$W/logs/b2ab-lines.txt"
    for r in $(seq 0 "${ROUNDS_AB:-4}"); do
      for c in ${AB_CFGS:-unprofiled xpuprof_default xpuprof_cupti}; do
        line=$(BENCH_CPU=${PIN:+2} e2e_cfg $c python3 "$T" ab small "${AB_STEPS:-2000}" 2>>"$W/logs/b2ab-$c.err" | grep '^BENCH2AB')
        echo "$r $c $line" >>"$W/logs/b2ab-lines.txt"
      done
    done
    pairs_summary B2-small-ab "$W/logs/b2ab-lines.txt"
  fi
  # What the agent's paused state leaves (mode residual: CUPTI attached and idle = "on",
  # detached = "off"): part `residual`, ROUNDS_AB rounds.
  if [[ $PARTS == *" residual "* ]]; then
    : >"$W/logs/b2res-lines.txt"
    for r in $(seq 0 "${ROUNDS_AB:-4}"); do
      line=$(BENCH_CPU=${PIN:+2} e2e_cfg unprofiled python3 "$T" residual small "${AB_STEPS:-2000}" 2>>"$W/logs/b2res.err" | grep '^BENCH2RES')
      echo "$r residual $line" >>"$W/logs/b2res-lines.txt"
    done
    pairs_summary B2-small-residual "$W/logs/b2res-lines.txt"
  fi
  # B2: PyTorch inference, small and large
  if [[ $PARTS == *" b2 "* ]]; then
    B2_SIZES=${B2_SIZES:-small large}
    for size in $B2_SIZES; do : >"$W/logs/b2-$size.txt"; : >"$W/logs/b2-$size-median.txt"; : >"$W/logs/b2-$size-loops.txt"; : >"$W/logs/b2-$size-lines.txt"; done
    # Round 0 warms the machine (page cache, GPU clocks, compiled kernels) and is not counted:
    # the first round of each configuration ran up to 2x slower than the rest (third session).
    for r in $(seq 0 "${ROUNDS_B2:-2}"); do
      for size in $B2_SIZES; do
        for c in ${B2_CFGS:-unprofiled torch_profiler torch_profiler_stack cupti_alone xpuprof_cupti xpuprof_default}; do
          mode=plain; [ $c = torch_profiler ] && mode=profiler; [ $c = torch_profiler_stack ] && mode=profiler_stack
          # As in B1: the launching thread alone on CPU 2 (after the warm-up), everything else on $PIN's CPUs.
          line=$(BENCH_CPU=${PIN:+2} e2e_cfg $c python3 "$T" $mode $size ${B2_STEPS:-} 2>>"$W/logs/b2-$c.err" | grep '^BENCH2')
          v=$(echo "$line" | sed -n 's/.*ms_per_step=\([0-9.]*\).*/\1/p')
          m=$(echo "$line" | sed -n 's/.*ms_per_step_median=\([0-9.]*\).*/\1/p')
          l=$(echo "$line" | sed -n 's/.*loops_per_step_median=\([0-9.]*\).*/\1/p')
          echo "$r $c $line" >>"$W/logs/b2-$size-lines.txt"
          if [ "$r" -gt 0 ]; then
            echo "$r $c ${v:-nan}" >>"$W/logs/b2-$size.txt"; echo "$r $c ${m:-nan}" >>"$W/logs/b2-$size-median.txt"
            echo "$r $c ${l:-nan}" >>"$W/logs/b2-$size-loops.txt"
          fi
        done
      done
    done
    for size in $B2_SIZES; do
      bench_summary "$W/logs/b2-$size.txt" 1000000 "B2-$size" ms/step | tee -a "$SUMMARY"
      bench_summary "$W/logs/b2-$size-median.txt" 1000000 "B2-$size-window-median" ms/step | tee -a "$SUMMARY"
      # Step time in calibration loops (transformer_bench.py's calibration_ms): the host's clock phases cancel.
      bench_summary "$W/logs/b2-$size-loops.txt" 1000000 "B2-$size-loops" loops/step | tee -a "$SUMMARY"
    done
  fi
fi

# ---- real: issue 29's real workloads (third-party model code) ----------------------------------
# tests/workloads/torch/real_bench.py in one process: the agent paused and collecting in adjacent
# windows (mode ab, as B2 small), per configuration, plus the paused state's residual (CUPTI
# attached idle vs detached). REAL_WORKLOADS (resnet qwen ddp), REAL_CFGS, ROUNDS_REAL (2
# processes per configuration), REAL_STEPS (640), AB_PAIRS (16). ddp runs under torchrun on 2 GPUs.
if [[ " $STEPS " == *" real "* ]]; then
  ldconfig -p | grep -q 'libelf.so.1 ' || export LD_LIBRARY_PATH=$CARRY/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  X="$CARRY/xpuprof --plugin-dir $CARRY"
  R=tests/workloads/torch/real_bench.py
  printf '[source.cupti]\npython = "off"\n' >"$W/real-nopython.toml"
  printf '[source.cupti]\nlaunch_stacks = "off"\n' >"$W/real-nostacks.toml"
  real_cfg() {  # config, workload, mode: runs one process, prints its REAL line
    local c=$1 wl=$2 mode=$3 prog
    if [ "$wl" = ddp ]; then prog="torchrun --standalone --nproc_per_node=2 $R $mode ddp ${REAL_STEPS:-640}"
    else prog="python3 $R $mode $wl ${REAL_STEPS:-640}"; fi
    rm -rf "$W/real-out/$c"
    case $c in
      unprofiled|residual) $prog ;;
      xpuprof_default) $X --source ebpf,cupti --sink summary -o "$W/real-out/$c" -- $prog ;;
      xpuprof_cupti) $X --source cupti --sink summary -o "$W/real-out/$c" -- $prog ;;
      xpuprof_nopython) $X --source cupti -c "$W/real-nopython.toml" --sink summary -o "$W/real-out/$c" -- $prog ;;
      xpuprof_nostacks) $X --source cupti -c "$W/real-nostacks.toml" --sink summary -o "$W/real-out/$c" -- $prog ;;
    esac
  }
  for wl in ${REAL_WORKLOADS:-resnet qwen ddp}; do
    : >"$W/logs/real-$wl-lines.txt"
    for r in $(seq 1 "${ROUNDS_REAL:-2}"); do
      for c in ${REAL_CFGS:-unprofiled xpuprof_default xpuprof_cupti xpuprof_nostacks}; do
        line=$(real_cfg $c $wl ab 2>>"$W/logs/real-$wl-$c.err" | grep '^REAL')
        echo "$r $c $line" >>"$W/logs/real-$wl-lines.txt"
      done
      line=$(real_cfg residual $wl residual 2>>"$W/logs/real-$wl-residual.err" | grep '^REAL')
      echo "$r residual $line" >>"$W/logs/real-$wl-lines.txt"
    done
    pairs_summary "real-$wl" "$W/logs/real-$wl-lines.txt"
    grep -h 'autograd\|device ops\|losses' "$W/logs/real-$wl-xpuprof_default.err" | tail -4 | sed "s/^/real-$wl last xpuprof_default: /" | tee -a "$SUMMARY"
  done
fi

# Parts kept in files of their own (scripts/gpu/parts/NAME.sh, sourced here with every helper
# above defined: ROOT, OUT, W, CARRY, AGENT, INC, LIB, row, pairs_summary): run when named.
for part in $STEPS; do
  if [ -f "$ROOT/scripts/gpu/parts/$part.sh" ]; then
    echo "== part $part"
    part_t0=$(date +%s)
    # shellcheck source=/dev/null
    . "$ROOT/scripts/gpu/parts/$part.sh"
    row "part $part took" "$(( $(date +%s) - part_t0 )) s"
  fi
done

(cd "$W" && tar czf "$OUT/logs.tar.gz" logs summary.txt)
echo "================ summary"
cat "$SUMMARY"
