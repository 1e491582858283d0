#!/usr/bin/env python3
"""Checks where the Python frames of `tests/workloads/python/imports.py` went in eBPF CPU samples.

usage: check_python_imports.py PROFILE.cpu.folded DEPTH

imports.py spends its CPU time in `burn`, called through `sorted` from the module `deep_{DEPTH-1}`
that `deep_{DEPTH-2}` imports, ... that `importlib.import_module` imports from `run`. Prints one
line with, of the on-CPU time of the interpreter's samples:
- rooted=X%: under the workload's own `<module> (imports.py:LINE)` frame (its `main(sys.argv)`
  line) and rooted at `_start` — the share the GPU check asks of `import torch` (>= 90);
- exact=Y%: of the time in `burn`, the share whose stack is exactly right: rooted, every Python
  frame of the import chain present in order (`<module>` of deep_0 .. deep_{DEPTH-1}, each under
  its importer's `_call_with_frames_removed`), no eval-loop frame left between them and no
  Python frame put at the outer end;
- evalleft=Z%: time on stacks that still show `_PyEval_EvalFrameDefault` (a run not placed).
Exits 1 when rooted < 90 or exact < 90.
"""
import re
import sys

PY = re.compile(r"\((<frozen [^>]*>|[^()]*\.py):\d+\)$")


def main():
    path, depth = sys.argv[1], int(sys.argv[2])
    total = rooted = burn = exact = evalleft = 0
    want = [f"deep_{i}.py" for i in range(depth)]
    for line in open(path, errors="replace"):
        stack, _, value = line.rstrip("\n").rpartition(" ")
        if not value.isdigit() or stack.startswith("[off-cpu]"):
            continue
        frames = stack.split(";")
        py = [f for f in frames if PY.search(f)]
        if not py and frames[0] != "_start":
            continue  # another process (the shell, ld.so before the interpreter)
        v = int(value)
        total += v
        ok_root = frames[0] == "_start" and bool(py) and re.match(r"<module> \(.*imports\.py:\d+\)$", py[0])
        rooted += v * bool(ok_root)
        evalleft += v * ("_PyEval_EvalFrameDefault" in frames)
        if not py or not py[-1].startswith("burn ("):
            continue
        burn += v
        modules = [re.search(r"(deep_\d+\.py)", f).group(1) for f in py if f.startswith("<module> (") and "deep_" in f]
        # Each deep module's frame follows its importer's _call_with_frames_removed (native
        # frames between: the builtin exec and PyEval_EvalCode).
        chained = all(
            before.startswith("_call_with_frames_removed (")
            for before, f in zip(py, py[1:])
            if f.startswith("<module> (") and "deep_" in f
        )
        good = ok_root and modules == want and chained and "_PyEval_EvalFrameDefault" not in frames
        exact += v * bool(good)
    if total == 0:
        print("FAIL: no sample of the interpreter")
        return 1
    pct = lambda x, of: 100.0 * x / of if of else 0.0  # noqa: E731
    ok = pct(rooted, total) >= 90 and pct(exact, burn) >= 90
    print(
        ("PASS" if ok else "FAIL")
        + f" rooted={pct(rooted, total):.1f}% exact={pct(exact, burn):.1f}% of {burn} µs in burn"
        + f" evalleft={pct(evalleft, total):.1f}% of {total} µs"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
