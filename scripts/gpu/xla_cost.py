#!/usr/bin/env python3
"""What the annotations cost JAX's loop, from adjacent runs with them on and off (issue 33):
each run's train.py output (`step_ms=`) and, from its records.jsonl (dump sink), the median gap
between the step's command-buffer launches (`cuGraphLaunch`) and the median length of XLA's
per-step ranges (the module's and the command buffer's own, which CUPTI records either way),
so where the time goes shows.

usage: xla_cost.py LABEL=OUT_DIR:STDOUT_FILE ...   (LABEL on or off)
Prints one line per run, then `cost on/off: step_ms ratio R (medians of N and M runs)`.
"""
import json
import os
import re
import statistics
import sys


def run_figures(out, stdout):
    step = None
    if os.path.exists(stdout):
        m = re.search(r"step_ms=([\d.]+)", open(stdout).read())
        step = float(m.group(1)) if m else None
    strs, launches, ranges = {}, [], {}
    p = os.path.join(out, "records.jsonl")
    if os.path.exists(p):
        for ln in open(p, errors="replace"):
            try:
                r = json.loads(ln)
            except ValueError:
                continue
            k = r.get("record")
            if k == "Str":
                strs[r.get("id")] = r.get("text", "")
            elif k == "ApiCall" and strs.get(r.get("name")) == "cuGraphLaunch":
                launches.append(r.get("start", 0))
            elif k == "Range":
                name = strs.get(r.get("name"), "")
                key = "module" if name.startswith("XlaModule:#hlo_module=jit_train_step") else (
                    "command buffer" if name.startswith("Thunk:#hlo_op=command_buffer") else None)
                if key:
                    ranges.setdefault(key, []).append((r.get("end", 0) - r.get("start", 0)) / 1e3)
    launches.sort()
    gaps = [(b - a) / 1e3 for a, b in zip(launches, launches[1:])]
    med = lambda v: f"{statistics.median(v):.1f}" if v else "?"
    return step, (f"step_ms={step} cuGraphLaunch gap median {med(gaps)} us ({len(launches)} launches); "
                  + "; ".join(f"{k} range median {med(v)} us (n={len(v)})" for k, v in sorted(ranges.items())))


def main():
    steps = {"on": [], "off": []}
    for arg in sys.argv[1:]:
        label, _, rest = arg.partition("=")
        out, _, stdout = rest.partition(":")
        step, text = run_figures(out, stdout)
        print(f"{label}: {text}")
        if step is not None and label in steps:
            steps[label].append(step)
    if steps["on"] and steps["off"]:
        on, off = statistics.median(steps["on"]), statistics.median(steps["off"])
        print(f"cost on/off: step_ms {on:.3f} / {off:.3f} ratio {on / off:.3f} "
              f"(medians of {len(steps['on'])} and {len(steps['off'])} runs)")
    else:
        print("cost on/off: no figures")


if __name__ == "__main__":
    main()
