#!/usr/bin/env python3
"""Dormancy, detach and attach-time budgets of issue 25, on tests/workloads/torch/dormant_bench.py.

usage: check_dormant.py run MODE WORKLOAD OUT_DIR XPUPROF PLUGIN_DIR [PIN...]
       check_dormant.py summary LINES_FILE

`run` starts one dormant_bench.py process (PIN, e.g. `taskset -c 3-9`, prefixes it) and, while
it waits between its two timed phases ("before" and "after"), does what MODE says:
  control  nothing for GAP seconds (the same pause as the others): the method's own drift
  attach   `xpuprof attach PID --source cupti --sink chrome --duration WINDOW`: before = no agent
           in the process, after = the agent loaded and dormant (CUPTI detached)
  paused   the process runs under `xpuprof record --start-paused --source cupti`; an
           `xpuprof trigger --duration WINDOW` opens one window: before = agent loaded and
           dormant from the start, after = dormant again after a window
and prints one `DORMANTRUN mode=... workload=... <the DORMANT fields>` line with, for attach,
  first_record_s  from starting `xpuprof attach` to the first kernel in its trace (budget 2 s)
  done_s          from the --duration expiry (the `attached to process` line's time + WINDOW)
                  to `xpuprof attach` having exited, outputs written (budget 1 s)
  detached_s      from the same expiry to the agent's cuptiFinalize (`xpuprof_cupti_detached_ns`)
and for paused, detached_s from the trigger + WINDOW (an upper bound: the window opens at
xpuprof's next tick after the trigger).

`summary` reads those lines (several rounds) and prints one row per figure, medians over rounds:
  dormant after detach = median(attach ratio) / median(control ratio)   (ratio = after/before
  loops per step in one process: the control cancels what the process's own run-in does);
  start-paused dormant vs unprofiled = median(paused before_loops) / median(control before_loops)
  (two processes each, steps in calibration-loop units); start-paused after a window =
  median(paused ratio) / median(control ratio). Budget: <= 1.01 each.
Then the same figures counted, not timed (dormant_bench.py's perf counters; what one process
measures): user-mode instructions per step after/before in each process (`iu_ratio`), the attach
and start-paused processes' over the control processes' (whose own iu_ratio is the method's drift:
the figure decides 1% only when the controls stay within DECIDE = 0.5%); start-paused before any
window against the control processes' before phase (across processes); kernel instructions,
CPU time and context switches per step; the agent threads' CPU time in the dormant phase. And for
time, a 95% bootstrap interval of the ratio of medians across processes (RESAMPLES, seeded), so
its width says what the rounds can decide.
GAP (3 s), WINDOW (1 s) and the timed windows per phase (15) come from the environment:
DORMANT_GAP, DORMANT_WINDOW, DORMANT_WINDOWS; DORMANT_SYNC_STEPS=1 passes --sync-steps (a
synchronize after every step: counted runs on a shared GPU).
"""
import random
import json
import os
import statistics
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(ROOT, "tests", "workloads", "torch", "dormant_bench.py")
GAP = float(os.environ.get("DORMANT_GAP", "3"))
WINDOW = float(os.environ.get("DORMANT_WINDOW", "1"))
WINDOWS = int(os.environ.get("DORMANT_WINDOWS", "15"))
SYNC_STEPS = os.environ.get("DORMANT_SYNC_STEPS") == "1"
DECIDE = 0.005
RESAMPLES = 2000


def stamped(proc, sink, log):
    """Reads `proc`'s stdout lines into `sink` as (CLOCK_MONOTONIC ns, line), copying them to `log`."""
    for line in proc.stdout:
        sink.append((time.monotonic_ns(), line))
        log.write(line)
        log.flush()


def wait_line(lines, exact, proc, timeout=300):
    """The time of the first line that is exactly `exact`; None when `proc` ended first."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        ended = proc.poll() is not None
        if ended:
            time.sleep(0.2)
        for t, line in list(lines):
            if line.strip() == exact:
                return t
        if ended:
            return None
        time.sleep(0.01)
    return None


def first_kernel_ns(trace):
    try:
        with open(trace) as f:
            t = json.load(f)
    except (OSError, ValueError):
        return None
    ev = t.get("traceEvents", t) if isinstance(t, dict) else t
    ks = [float(e["ts"]) for e in ev if e.get("cat") == "kernel" and "ts" in e]
    return int(min(ks) * 1000) if ks else None


def fields(line):
    return dict(x.split("=", 1) for x in line.split()[1:] if "=" in x)


def run(mode, workload, out, xpuprof, plugin_dir, pin):
    os.makedirs(out, exist_ok=True)
    go = os.path.join(out, "go")
    if os.path.exists(go):
        os.remove(go)
    bench = pin + [sys.executable, BENCH, workload, "--go", go, "--windows", str(WINDOWS)]
    if SYNC_STEPS:
        bench.append("--sync-steps")
    x = [xpuprof, "--plugin-dir", plugin_dir]
    if mode == "paused":
        cmd = x + ["-v", "record", "--start-paused", "--source", "cupti", "--sink", "chrome", "-o",
                   os.path.join(out, "rec"), "--"] + bench
    else:
        cmd = bench
    log = open(os.path.join(out, f"bench-{mode}-{workload}.log"), "w")
    # The same string hashes in every process: dict and set layouts, and so the instructions per
    # step, do not differ between processes by hash seed.
    env = dict(os.environ, PYTHONHASHSEED="0")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    lines = []
    reader = threading.Thread(target=stamped, args=(proc, lines, log), daemon=True)
    reader.start()
    extra = {}
    if wait_line(lines, "pause", proc) is None:
        proc.kill()
        print(f"DORMANTRUN mode={mode} workload={workload} error=no-pause-line")
        return 1
    ready = [l for _, l in lines if l.startswith("ready pid=")]
    if not ready:
        proc.kill()
        print(f"DORMANTRUN mode={mode} workload={workload} error=no-ready-line")
        return 1
    pid = int(ready[0].strip().split("=")[1])
    if mode == "control":
        time.sleep(GAP)
    elif mode == "attach":
        o = os.path.join(out, "attach")
        t0 = time.monotonic_ns()
        a = subprocess.Popen(x + ["-v", "attach", str(pid), "--source", "cupti", "--sink", "chrome",
                                  "--duration", f"{int(WINDOW * 1000)}ms", "-o", o],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        alines = []
        with open(os.path.join(out, f"xpuprof-attach-{workload}.log"), "w") as alog:
            stamped(a, alines, alog)
        rc = a.wait()
        done = time.monotonic_ns()
        opened = next((t for t, l in alines if "attached to process" in l), None)
        first = first_kernel_ns(os.path.join(o, "trace.json"))
        extra["attach_rc"] = rc
        extra["first_record_s"] = f"{(first - t0) / 1e9:.3f}" if first else "none"
        extra["expiry_ns"] = opened + int(WINDOW * 1e9) if opened else 0
        extra["done_s"] = f"{(done - extra['expiry_ns']) / 1e9:.3f}" if opened else "none"
        time.sleep(max(0.0, GAP - (done - t0) / 1e9))
    elif mode == "paused":
        t0 = time.monotonic_ns()
        r = subprocess.run(x + ["trigger", str(proc.pid), "--duration", f"{int(WINDOW * 1000)}ms"],
                           capture_output=True, text=True)
        extra["trigger_rc"] = r.returncode
        time.sleep(max(GAP, WINDOW + 2))
        # The window's nominal end: the trigger + WINDOW (the window opens at xpuprof's next
        # tick after the signal, so the detach time below is an upper bound).
        extra["expiry_ns"] = t0 + int(WINDOW * 1e9)
    with open(go, "w"):
        pass
    rc = proc.wait()
    reader.join(timeout=5)
    log.close()
    res = next((l for _, l in reversed(lines) if l.startswith("DORMANT ")), None)
    if res is None:
        print(f"DORMANTRUN mode={mode} workload={workload} error=no-result rc={rc}")
        return 1
    f = fields(res)
    det = int(f.get("detached_ns", "0"))
    if extra.get("expiry_ns") and det:
        extra["detached_s"] = f"{(det - extra['expiry_ns']) / 1e9:.3f}"
    extra.pop("expiry_ns", None)
    more = " ".join(f"{k}={v}" for k, v in extra.items())
    print(f"DORMANTRUN mode={mode} rc={rc} {res.split(' ', 1)[1].strip()} {more}".strip(), flush=True)
    return 0


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def summary(path):
    runs = [fields(l) | {"mode": fields(l).get("mode")} for l in open(path) if l.startswith("DORMANTRUN")]
    for wl in sorted({r.get("workload") for r in runs if r.get("workload")}):
        by = {m: [r for r in runs if r.get("workload") == wl and r.get("mode") == m and "ratio" in r]
              for m in ("control", "attach", "paused")}
        ratio = {m: [float(r["ratio"]) for r in v] for m, v in by.items()}
        show = lambda xs: " ".join(f"{v:.4f}" for v in xs)
        c = med(ratio["control"])
        for m, label in (("attach", "after attach+detach"), ("paused", "start-paused, after a window")):
            v = med(ratio[m]) / c
            states = ",".join(sorted({r.get("state_after", "?") for r in by[m]}))
            ok = "PASS" if v <= 1.01 and states == "detached" else "FAIL"
            print(f"dormant {wl} {label}: {ok} {v:.4f}x unprofiled (after/before {m} {show(ratio[m])}; "
                  f"control {show(ratio['control'])}; agent state after: {states})")
        pb = [float(r["before_loops"]) for r in by["paused"]]
        cb = [float(r["before_loops"]) for r in by["control"]]
        if pb and cb:
            v = med(pb) / med(cb)
            states = ",".join(sorted({r.get("state_before", "?") for r in by["paused"]}))
            ok = "PASS" if v <= 1.01 and states == "detached" else "FAIL"
            print(f"dormant {wl} start-paused, before any window: {ok} {v:.4f}x unprofiled (loops/step "
                  f"{show(pb)} vs unprofiled processes {show(cb)}; agent state: {states})")
        ms = {m: med([float(r["before_ms"]) for r in v]) for m, v in by.items()}
        print(f"dormant {wl} step ms (before phase, median): " + " ".join(f"{m}={v:.3f}" for m, v in ms.items()))
        for key, budget, label in (("first_record_s", 2.0, "attach to first record"),
                                   ("done_s", 1.0, "--duration expiry to xpuprof attach done"),
                                   ("detached_s", 1.0, "--duration expiry to CUPTI detached")):
            vals = [float(r[key]) for r in by["attach"] if r.get(key, "none") not in ("none", "")]
            if vals:
                ok = "PASS" if max(vals) <= budget and len(vals) == len(by["attach"]) else "FAIL"
                print(f"attach {wl} {label}: {ok} max {max(vals):.3f} s (runs {' '.join(f'{v:.3f}' for v in vals)}; budget {budget:g} s)")
            else:
                print(f"attach {wl} {label}: FAIL no figure")
        vals = [float(r["detached_s"]) for r in by["paused"] if "detached_s" in r]
        if vals:
            print(f"dormant {wl} trigger window end to CUPTI detached (start-paused): max {max(vals):.3f} s "
                  f"(runs {' '.join(f'{v:.3f}' for v in vals)}; from the trigger + --duration, an upper bound)")
        counted(wl, by)
    bad = [l.strip() for l in open(path) if l.startswith("DORMANTRUN") and "error=" in l]
    for b in bad:
        print(f"dormant run failed: {b}")


def interval(xs, ys):
    """95% bootstrap interval of median(xs) / median(ys), resampling processes; None below 3 each."""
    if len(xs) < 3 or len(ys) < 3:
        return None
    rng = random.Random(25)
    r = sorted(med(rng.choices(xs, k=len(xs))) / med(rng.choices(ys, k=len(ys))) for _ in range(RESAMPLES))
    return r[int(0.025 * RESAMPLES)], r[int(0.975 * RESAMPLES) - 1]


def counted(wl, by):
    """The counted figures of one workload (rows `counted ...`) and the time intervals."""
    num = lambda rs, k: [float(r[k]) for r in rs if k in r]
    show = lambda xs, f=".4f": " ".join(f"{v:{f}}" for v in xs)
    pmu = all(r.get("pmu") == "yes" for v in by.values() for r in v)
    if pmu:
        metric, before_key = "user instructions", "before_iu"
        ratio = lambda rs: num(rs, "iu_ratio")
    else:  # without hardware counters: CPU time per step, in-process (a time, so weaker)
        metric, before_key = "CPU time", "before_task"
        ratio = lambda rs: [float(r["after_task"]) / float(r["before_task"]) for r in rs
                            if float(r.get("before_task", 0)) > 0 and "after_task" in r]
        print(f"counted {wl}: no hardware counters in every process (pmu="
              f"{','.join(sorted({r.get('pmu', '?') for v in by.values() for r in v}))}; missing "
              f"{','.join(sorted({r.get('counters_missing', '?') for v in by.values() for r in v}))}): "
              f"figures by CPU time per step")
    c = ratio(by["control"])
    if c:
        drift = max(abs(x - 1) for x in c)
        for m, label in (("attach", "after attach+detach"), ("paused", "start-paused, after a window")):
            xs = ratio(by[m])
            if not xs:
                continue
            v = med(xs) / med(c)
            verdict = "undecided" if drift > DECIDE else ("PASS" if v <= 1.01 else "FAIL")
            spread = num(by[m], "iu_spread") + num(by["control"], "iu_spread")
            print(f"counted {wl} {label}: {verdict} {v:.4f}x unprofiled {metric} per step "
                  f"(after/before {m} {show(xs)}; control {show(c)}, drift max {drift:.4f}"
                  + (f"; window spread max {max(spread):.4f})" if spread else ")"))
        pb, cb = num(by["paused"], before_key), num(by["control"], before_key)
        if pb and cb:
            v = med(pb) / med(cb)
            spread = (max(cb) - min(cb)) / med(cb)
            verdict = "undecided" if spread > DECIDE else ("PASS" if v <= 1.01 else "FAIL")
            print(f"counted {wl} start-paused, before any window: {verdict} {v:.4f}x unprofiled {metric} "
                  f"per step, across processes ({show(pb, '.1f')} vs {show(cb, '.1f')}; control spread {spread:.4f})")
    for m in ("control", "attach", "paused"):
        rs = by[m]
        if not rs:
            continue
        parts = []
        for k, f in (("iu", ".0f"), ("ik", ".0f"), ("task", ".1f"), ("ctx", ".3f")):
            b, a = num(rs, f"before_{k}"), num(rs, f"after_{k}")
            if b and a:
                parts.append(f"{k} {med(b):{f}}->{med(a):{f}}")
        agent = num(rs, "agent_cpu_ms")
        names = ",".join(sorted({r.get("agent_threads", "?") for r in rs}))
        sync = ",".join(sorted({r.get("sync", "?") for r in rs}))
        print(f"counted {wl} {m} per step before->after (medians of {len(rs)}): {' '.join(parts) or 'none'}; "
              f"agent threads' CPU in the after phase {show(agent, '.3f')} ms ({names}); sync={sync}")
    c = [float(r["ratio"]) for r in by["control"]]
    for m in ("attach", "paused"):
        xs = [float(r["ratio"]) for r in by[m]]
        ci = interval(xs, c)
        if xs and c:
            span = f"95% interval {ci[0]:.3f}-{ci[1]:.3f}" if ci else "too few processes for an interval (3 each)"
            print(f"timed {wl} {m} after/before loops per step over control's: {med(xs) / med(c):.4f}x, {span} "
                  f"({len(xs)} and {len(c)} processes)")


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "summary":
        summary(sys.argv[2])
        return 0
    if len(sys.argv) >= 7 and sys.argv[1] == "run":
        return run(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6], sys.argv[7:])
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main())
