#!/usr/bin/env python3
"""Checks that replayed CUDA-graph kernels sit under their replay and capture stacks.

usage: check_graph_stacks.py PROFILE_FOLDED PROGRAM_STDOUT XPUPROF_STDERR MODE

MODE is the folded sink's `graph_stacks` ("replay", "capture" or "both"). The program prints
`EXPECT ... launchers=f,g capture_launchers=h,i [recorded=kernel:function,...]`. Asserted, as a
user reading the flame graph would see it:
- xpuprof's summary counts device ops run from recordings, every one of them under the call that
  recorded it (none unmatched, none unknown);
- both: every line with `[recorded at]` has a replaying function above the marker and a building
  function below it (for `recorded=` kernels, exactly that kernel's building function), and
  every line of a recorded kernel has the marker;
- replay: no marker, the replaying function above the kernel;
- capture: no marker, for `recorded=` kernels their building function and no replaying function.
Python frames (`function (file.py:line)`) are matched by function name like native frames. With
`python_builders=1` (the builders are Python functions) and no Python frame in the whole profile
(Python frames not available), the builder names are not required; the line says so.
Prints one line: PASS ... or FAIL: reasons.
"""
import re
import sys


def expect_of(path):
    for line in open(path, errors="replace"):
        if line.startswith("EXPECT "):
            return dict(kv.split("=", 1) for kv in line.split()[1:])
    return {}


def has(frames, names):
    return any(n and any(n in f for f in frames) for n in names)


def main():
    folded, prog_out, err, mode = sys.argv[1:5]
    e = expect_of(prog_out)
    if not e:
        print("FAIL: program printed no EXPECT line")
        return 1
    replayers = [x for x in e.get("launchers", "").split(",") if x]
    builders = [x for x in e.get("capture_launchers", "").split(",") if x]
    recorded = dict(p.split(":", 1) for p in e.get("recorded", "").split(",") if ":" in p)
    text = open(folded, errors="replace").read()
    native_only = e.get("python_builders") == "1" and ".py:" not in text
    if native_only:
        builders, recorded = [], {}
    fails = []
    summary = open(err, errors="replace").read()
    m = re.search(r"device ops run from recordings[^:]*: (\d+) \((\d+) under the call that recorded them, (\d+) whose "
                  r"recording call was not seen, (\d+) whose", summary)
    if not m:
        fails.append("no 'device ops run from recordings' line in xpuprof's summary")
        total = joined = 0
    else:
        total, joined, unseen, unknown = map(int, m.groups())
        if total == 0 or joined != total:
            fails.append(f"{joined}/{total} replayed ops under their recording call ({unseen} unseen, {unknown} unknown)")
    lines = with_marker = 0
    for line in text.splitlines():
        stack = line.rstrip("\n").rpartition(" ")[0]
        frames = stack.split(";")
        if "[GPU_Kernel]" not in frames[-1]:
            continue
        kernel = frames[-1]
        want = next((f for k, f in recorded.items() if k in kernel), None)
        if "[recorded at]" in frames:
            with_marker += 1
            i = frames.index("[recorded at]")
            above, below = frames[:i], frames[i + 1:-1]
            if mode != "both":
                fails.append(f"{mode}: marker in {stack[-160:]}")
            if not has(above, replayers):
                fails.append(f"replayer {replayers} not above the marker: {stack[-200:]}")
            if not below or (builders and not has(below, [want] if want else builders)):
                fails.append(f"builder {want or builders} not below the marker: {stack[-200:]}")
        elif want:
            if mode == "both":
                fails.append(f"recorded kernel without [recorded at]: {stack[-160:]}")
            elif mode == "replay" and not has(frames, replayers):
                fails.append(f"replay: {replayers} missing: {stack[-160:]}")
            elif mode == "capture" and (not has(frames, [want]) or has(frames, replayers)):
                fails.append(f"capture: want {want} without {replayers}: {stack[-160:]}")
        lines += 1
    if mode == "both" and with_marker == 0:
        fails.append("no line with [recorded at]")
    if fails:
        print(f"FAIL ({mode}): " + "; ".join(fails[:4]))
        return 1
    note = " (no Python frames: builder names not checked)" if native_only else ""
    print(f"PASS ({mode}) replayed_ops={total} joined={joined} kernel_lines={lines} with_capture_stack={with_marker}{note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
