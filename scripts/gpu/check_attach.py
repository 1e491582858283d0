#!/usr/bin/env python3
"""Checks a capture window of plugins/cupti/tests/workloads/attach_train.py (issue 25).

usage: check_attach.py TRACE_JSON STEP_LOG KERNELS_PER_STEP WINDOW_S [ATTACH_START_NS]

KERNELS_PER_STEP `auto` takes the most common count of the window's interior steps (for windows
checked without a calibration run: a step with a kernel missing still stands out).

TRACE_JSON is the chrome sink's trace.json of the window (`ts` is the session clock, CLOCK_MONOTONIC,
in microseconds); STEP_LOG the workload's `step I T0 T1` lines (CLOCK_MONOTONIC ns). Each kernel is
given to the step whose [T0, T1] holds its start (every kernel of a step runs inside it: the step
synchronizes). Prints one line, PASS or FAIL, then:
- steps=N: steps with kernels in the profile; every step strictly between the first and the last
  of them must have exactly KERNELS_PER_STEP kernels (interior=OK/N), the first and last at most
  that many (a window edge cuts them): a missing kernel inside the window fails;
- span=S s: from the first recorded step's start to the last one's end, which must cover
  WINDOW_S less 0.25 s (the agent starts collecting a little after the host opens the window: the
  injection and CUPTI's subscription, first_record below), and at most WINDOW_S + 0.5 s (nothing
  recorded outside the window but the edges' steps);
- stray=K: kernels outside every step (must be 0);
- first_record=D s: from ATTACH_START_NS (when `xpuprof attach` was started) to the first kernel
  (the budget is 2 s);
- step ms before/during/after: median step time in the 10 s before the window, in it, and from 1 s
  after it to 10 s after.
"""
import bisect
import json
import statistics
import sys


def kernels(path):
    with open(path) as f:
        t = json.load(f)
    ev = t.get("traceEvents", t) if isinstance(t, dict) else t
    return sorted(int(float(e["ts"]) * 1000) for e in ev if e.get("cat") == "kernel" and "ts" in e)


def main():
    trace, log, kps, window = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
    attach_ns = int(sys.argv[5]) if len(sys.argv) > 5 else 0
    steps = []
    for line in open(log):
        p = line.split()
        if len(p) == 4 and p[0] == "step":
            steps.append((int(p[2]), int(p[3])))
    steps.sort()
    starts = [s for s, _ in steps]
    per = {}
    stray = 0
    ks = kernels(trace)
    for k in ks:
        i = bisect.bisect_right(starts, k) - 1
        if i >= 0 and k <= steps[i][1]:
            per[i] = per.get(i, 0) + 1
        else:
            stray += 1
    if not per:
        print(f"FAIL no kernel of the workload's steps in the window (kernels={len(ks)} stray={stray})")
        return 1
    first, last = min(per), max(per)
    interior = range(first + 1, last)
    if kps == "auto":  # the most common count of the interior steps
        counts = [per.get(i, 0) for i in interior] or [per[first]]
        kps = max(set(counts), key=counts.count)
    kps = int(float(kps))
    ok = sum(1 for i in interior if per.get(i, 0) == kps)
    bad = [(i, per.get(i, 0)) for i in interior if per.get(i, 0) != kps][:5]
    span = (steps[last][1] - steps[first][0]) / 1e9
    step_s = statistics.median(e - s for s, e in steps) / 1e9
    med = lambda sel: statistics.median(sel) / 1e6 if sel else float("nan")
    w0, w1 = steps[first][0], steps[last][1]
    before = med([e - s for s, e in steps if w0 - 10e9 <= s and e < w0])
    during = med([e - s for s, e in steps[first:last + 1]])
    after = med([e - s for s, e in steps if w1 + 1e9 <= s <= w1 + 11e9])
    edges = (per[first], per[last])
    passed = (
        ok == len(interior)
        and stray == 0
        and max(edges) <= kps
        and window - 0.25 <= span <= window + 0.5
    )
    first_record = f" first_record={(ks[0] - attach_ns) / 1e9:.2f}s" if attach_ns else ""
    print(
        f"{'PASS' if passed else 'FAIL'} steps={last - first + 1} interior={ok}/{len(interior)} kps={kps} "
        f"edges={edges} kernels={len(ks)} stray={stray} span={span:.2f}s{first_record} "
        f"step_ms before={before:.2f} during={during:.2f} after={after:.2f}"
        + (f" bad={bad}" if bad else "")
    )
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
