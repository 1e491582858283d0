#!/usr/bin/env python3
"""Checks one `xpuprof --source cupti --sink folded,chrome` run of a CUDA test program.

usage: check_profile.py OUT_DIR PROGRAM_STDOUT XPUPROF_STDERR

The program prints `EXPECT kernels=N launchers=f,g [...]`. Asserted, as a user would see it:
- every kernel is in trace.json (count == N);
- no kernel lacks its launch site (no "unknown launch site", every kernel has a launch flow);
- every folded [GPU_Kernel] line has one of the launching functions among its frames;
- graph kernels sit under the graph-launch call site (launch_graph);
- no loss events.
Prints one line: PASS ... or FAIL: reasons.
"""
import json, os, sys


def main():
    out, prog_out, err = sys.argv[1:4]
    expect = {}
    for line in open(prog_out, errors="replace"):
        if line.startswith("EXPECT "):
            for kv in line.split()[1:]:
                k, v = kv.split("=", 1)
                expect[k] = v
    fails = []
    if not expect:
        print("FAIL: program printed no EXPECT line")
        return 1
    trace = os.path.join(out, "trace.json")
    folded = os.path.join(out, "profile.folded")
    try:
        events = json.load(open(trace))
    except Exception as e:  # noqa: BLE001
        print(f"FAIL: cannot read {trace}: {e}")
        return 1
    if isinstance(events, dict):
        events = events.get("traceEvents", [])
    kernels = [e for e in events if e.get("cat") == "kernel" and e.get("ph") == "X"]
    unknown = [e for e in kernels if e.get("args", {}).get("launch") == "unknown launch site"]
    losses = [e for e in events if e.get("cat") == "loss"]
    if expect["kernels"] == "any":
        if not kernels:
            fails.append("no kernels recorded")
    elif len(kernels) != int(expect["kernels"]):
        fails.append(f"kernels {len(kernels)} != expected {expect['kernels']}")
    if unknown:
        fails.append(f"{len(unknown)} kernels without launch site")
    if losses:
        fails.append(f"{len(losses)} loss events: {[l.get('name') for l in losses][:3]}")
    launchers = expect.get("launchers", "").split(",")
    gpu_lines = bad = 0
    weight_missing = []
    for line in open(folded, errors="replace") if os.path.exists(folded) else []:
        stack, _, _w = line.rstrip("\n").rpartition(" ")
        frames = stack.split(";")
        if not frames or "[GPU_Kernel]" not in frames[-1]:
            continue
        gpu_lines += 1
        if not any(any(l in f for f in frames) for l in launchers):
            bad += 1
            weight_missing.append(stack[-200:])
        if "graph_k" in frames[-1] and not any("launch_graph" in f for f in frames):
            fails.append("graph kernel not under launch_graph: " + stack[-160:])
    if gpu_lines == 0:
        fails.append("no [GPU_Kernel] lines in profile.folded")
    if bad:
        fails.append(f"{bad}/{gpu_lines} folded kernel stacks lack the launching function; e.g. {weight_missing[0]}")
    if fails:
        print("FAIL: " + "; ".join(fails[:4]))
        return 1
    print(f"PASS kernels={len(kernels)} folded_kernel_stacks={gpu_lines} launchers={','.join(launchers)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
