#!/usr/bin/env python3
"""Checks the Python frames of a `xpuprof --source cupti --sink folded` run of a Python program.

usage: check_python_stacks.py OUT_DIR SCRIPT.py [--min PCT] [--call-marker TEXT] [--cpu]

Reads OUT_DIR/profile.folded (folded values: GPU time; with --cpu: OUT_DIR/profile.cpu.folded,
the eBPF source's on-CPU samples, and the percentages are of CPU time) and prints one line:
PASS/FAIL, then
- py=X%: GPU time under a stack that has a frame `function (SCRIPT.py:LINE)` of the script;
- rooted=Y%: GPU time whose stack starts at a thread start (_start, start_thread, clone3, __clone);
- both=Z%: both at once (what must reach --min, default 95);
- nopy=W% (top roots): GPU time without any Python frame, by the root..5 frames of its stack
  (autograd's device threads run backward kernels: they show the engine's C++ frames only);
- with --call-marker TEXT: triton=T% of the Triton kernels' GPU time sits under the script line
  that contains TEXT.
"""
import collections
import re
import sys

ROOTS = ("_start", "start_thread", "clone3", "__clone", "__clone3", "thread_start")


def main():
    args = sys.argv[1:]
    out, script = args[0], args[1]
    minimum = float(args[args.index("--min") + 1]) if "--min" in args else 95.0
    marker = args[args.index("--call-marker") + 1] if "--call-marker" in args else None
    cpu = "--cpu" in args
    call_line = None
    if marker:
        for i, text in enumerate(open(script), 1):
            if marker in text:
                call_line = i
    name = script.rsplit("/", 1)[-1]
    own = re.compile(r"\(([^()]*/)?" + re.escape(name) + r":\d+\)")
    any_py = re.compile(r"\([^()]*\.py:\d+\)")
    total = py = rooted = both = triton = triton_at = 0
    nopy = collections.Counter()
    for line in open(f"{out}/profile.cpu.folded" if cpu else f"{out}/profile.folded", errors="replace"):
        stack, _, value = line.rstrip("\n").rpartition(" ")
        if not value.isdigit():
            continue
        if cpu and ("[GPU_" in stack or stack.startswith("[off-cpu]")):
            continue
        if not cpu and "[GPU_" not in stack:
            continue
        v = int(value)
        frames = stack.split(";")
        total += v
        has_py = bool(own.search(stack))
        is_rooted = frames[0] in ROOTS
        py += v * has_py
        rooted += v * is_rooted
        both += v * (has_py and is_rooted)
        if not any_py.search(stack):
            nopy[";".join(frames[:5])] += v
        if "[GPU_Kernel]triton" in stack:
            triton += v
            if call_line and f"{name}:{call_line})" in stack:
                triton_at += v
    if total == 0:
        print("FAIL: no " + ("on-CPU sample" if cpu else "GPU time") + " in the folded profile")
        return 1
    pct = lambda x: 100.0 * x / total  # noqa: E731
    parts = [f"py={pct(py):.1f}%", f"rooted={pct(rooted):.1f}%", f"both={pct(both):.1f}%"]
    nopy_total = sum(nopy.values())
    if nopy_total:
        top = ", ".join(f"{k} {100.0 * v / total:.1f}%" for k, v in nopy.most_common(3))
        parts.append(f"nopy={pct(nopy_total):.1f}% ({top})")
    ok = pct(both) >= minimum
    if marker:
        t = 100.0 * triton_at / triton if triton else 0.0
        parts.append(f"triton={t:.1f}% of {triton} under line {call_line}")
        ok = ok and triton > 0 and t >= minimum
    print(("PASS " if ok else "FAIL ") + " ".join(parts))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
