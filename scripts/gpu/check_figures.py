#!/usr/bin/env python3
"""What users read (issue 27), checked on one recording's outputs against each other:

  check_figures.py OUT_DIR [--pprof PPROF] [--perfetto-check CHECK_TRACE_PY] [--list REGEX]

OUT_DIR holds summary.json, summary.txt, trace.json (chrome), trace.perfetto-trace,
profile.pb.gz, profile.cpu.folded and profile.gpu.folded of one `xpuprof record`. Prints one
line per check, `PASS name: figures` or `FAIL name: why`, then `INFO` lines, and exits 1 when a
check failed:

- busy: per device, the summary's kernel_busy_ns against the exact union of that device's kernel
  slices in trace.json (devices matched by kernel count), and its largest idle gaps against the
  holes of that union (no kernel inside any gap, the same five longest);
- streams: where summary.json has `streams`, each stream's busy time against the union of its
  kernel slices;
- allocations: allocation records no API call caused are not in the allocation counts and
  summary.txt says what they are;
- own cost: no on-CPU stack of profile.cpu.folded shows xpuprof's own code (its libraries, its
  crates' functions) outside an `[xpuprof]` frame;
- user view: profile.gpu.folded holds no CPython internals or nn.Module call plumbing;
- pprof: profile.pb.gz decodes (a wire-level protobuf decoder, no dependency), its first
  mapping is the executable, every sample type has a non-zero value, Python functions are
  `Function{name, filename}` with lines; with --pprof, `pprof -top`, `-traces` and `-list` run
  on it (`-list` shows source lines);
- perfetto: with --perfetto-check (plugins/perfetto/tests/check_trace.py, Perfetto's own
  protos), the trace decodes, API slices carry launch stacks, no overlap lane without overlap.
"""
import argparse
import gzip
import json
import os
import re
import subprocess
import sys

DEVICE_PID = 5_000_000  # chrome sink: device tracks are pids from here (plugins/chrome/src/tracks.rs)
STREAM_TID, LANE_STEP = 6_000_000, 100_000
OWN = re.compile(r"libxpuprof|(^|[<;])xpuprof_|xpuprof_python::|xpuprof_agent_kit::")
INTERNALS = re.compile(r"(^|;)(_PyEval_EvalFrameDefault|PyObject_Call|_PyObject_Call|_PyFunction_Vectorcall|"
                       r"Module\._call_impl|Module\._wrapped_call_impl|python3\.\d+\+0x)")
results = []


def check(name, ok, detail):
    results.append(("PASS" if ok else "FAIL", name, detail))


def info(name, detail):
    results.append(("INFO", name, detail))


def union(intervals):
    out = []
    for s, e in sorted(intervals):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def ns(us):
    return round(float(us) * 1000)


def trace_kernels(path):
    """Kernel slices by device pid and by (device pid, stream base tid): [(start_ns, end_ns)]."""
    with open(path) as f:
        t = json.load(f)
    events = t["traceEvents"] if isinstance(t, dict) else t
    by_dev, by_stream = {}, {}
    for e in events:
        if e.get("ph") != "X" or e.get("cat") != "kernel" or e.get("pid", 0) < DEVICE_PID:
            continue
        iv = (ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]))
        by_dev.setdefault(e["pid"], []).append(iv)
        tid = e["tid"]
        base = STREAM_TID + (tid - STREAM_TID) % LANE_STEP if STREAM_TID <= tid < 0x4000_0000 else tid
        by_stream.setdefault((e["pid"], base), []).append(iv)
    return by_dev, by_stream


def busy(out, summary):
    by_dev, by_stream = trace_kernels(os.path.join(out, "trace.json"))
    free = dict(by_dev)
    for d in summary.get("devices", []):
        label = f"device {d['device_index']}"
        # Devices with as many kernels (DDP's ranks): the one whose union is the summary's, if any.
        cands = [p for p, ks in free.items() if len(ks) == d["kernels"]]
        exact_of = lambda p: sum(e - s for s, e in union(free[p]))
        pid = next((p for p in cands if exact_of(p) == d["kernel_busy_ns"]), cands[0] if cands else None)
        if pid is None:
            counts = {p: len(k) for p, k in free.items()}
            check(f"busy {label}", False, f"no device track of trace.json has {d['kernels']} kernels: {counts}")
            continue
        u = union(free.pop(pid))
        exact = sum(e - s for s, e in u)
        got = d["kernel_busy_ns"]
        check(f"busy {label}", abs(got - exact) <= 1,
              f"summary {got / 1e6:.3f} ms ({d['busy_pct']}%), union of {d['kernels']} trace kernels "
              f"{exact / 1e6:.3f} ms, {len(u)} pieces (summary {d['busy_intervals']}), late_ops {d['late_ops']}")
        gaps = d.get("largest_gaps", [])
        inside = 0
        for g in gaps:
            inside += sum(1 for s, e in u if s < g["end_ns"] and e > g["start_ns"])
        threshold = d.get("idle_gap_threshold_ns", 0)
        holes = sorted(((b[0] - a[1], a[1]) for a, b in zip(u, u[1:]) if b[0] - a[1] >= threshold),
                       key=lambda h: (-h[0], h[1]))
        want = [h[0] for h in holes[:len(gaps)]]
        have = [g["duration_ns"] for g in gaps]
        check(f"idle gaps {label}", inside == 0 and want == have and d["idle_gaps"] == len(holes),
              f"{len(gaps)} largest gaps {[round(x / 1e6, 3) for x in have]} ms hold {inside} kernels; "
              f"union holes {[round(x / 1e6, 3) for x in want]} ms; gaps {d['idle_gaps']} vs {len(holes)}")
        # The CPU before a gap is the user's: no xpuprof frame, raw or collapsed into [xpuprof]
        # (the profiler's samples are counted apart, xpuprof_samples_before).
        own_gaps, shown = [], None
        for g in gaps:
            cpu = g.get("cpu_before") or {}
            stack = cpu.get("stack") or []
            own = [f for f in stack if OWN.search(f) or f == "[xpuprof]"]
            own_gaps += [own[:2]] if own else []
            shown = shown or (' < '.join(cpu.get('display_stack') or stack)[:160] or 'none')
        apart = sum(g.get("xpuprof_samples_before", 0) for g in gaps)
        check(f"gap cpu_before {label}", not own_gaps,
              f"largest gap's CPU before: {shown}; xpuprof's samples counted apart before the "
              f"{len(gaps)} gaps: {apart}"
              + (f"; xpuprof's own frames shown as the user's: {own_gaps[:2]}" if own_gaps else ""))
    streams = summary.get("streams")
    if streams is None:
        info("streams", "summary.json has no per-stream busy time")
        return
    for s in streams:
        cands = [k for k, v in by_stream.items() if len(v) == s.get("kernels")]
        exacts = sorted(sum(e - a for a, e in union(by_stream[k])) for k in cands)
        ok = s.get("kernel_busy_ns") in exacts
        check(f"busy stream {s.get('stream')} device {s.get('device_index')}", ok,
              f"summary {s.get('kernel_busy_ns')} ns over {s.get('kernels')} kernels; unions of trace streams "
              f"with that many kernels: {exacts[:4]}")


def allocations(out, summary):
    mem = summary.get("memory") or {}
    text = open(os.path.join(out, "summary.txt")).read()
    for d in mem.get("devices", []):
        runtime = d.get("runtime_allocations", 0) + d.get("runtime_frees", 0)
        said = runtime == 0 or "that no API call of the program caused" in text
        check(f"allocations device {d['device_index']}", "runtime_allocations" in d and said,
              f"{d.get('allocations')} allocations / {d.get('frees')} frees by API calls; "
              f"{d.get('runtime_allocations')} / {d.get('runtime_frees')} without one "
              f"({'explained' if said else 'NOT explained'} in summary.txt)")
    for w in mem.get("without_api_call", [])[:4]:
        info("memory without API call", f"device {w['device_index']} {w['kind']} {w['name']!r}: "
             f"{w['records']} records, {w['bytes']} bytes")


def own_cost(out, summary):
    weight = shown = 0
    example = ""
    for line in open(os.path.join(out, "profile.cpu.folded")):
        stack, _, n = line.rstrip("\n").rpartition(" ")
        if not n.isdigit():
            continue
        weight += int(n)
        frames = stack.split(";")
        if "[xpuprof]" in frames:
            frames = frames[:frames.index("[xpuprof]")]
        if any(OWN.search(f) for f in frames):
            shown += int(n)
            example = example or stack[-200:]
    agent = (summary.get("xpuprof") or {}).get("agent_cpu", {})
    check("own cost apart", shown == 0,
          f"{shown} of {weight} on-CPU weight shows xpuprof's code as the user's"
          + (f", e.g. ...{example}" if example else "")
          + f"; summary agent_cpu {agent.get('on_cpu_pct')}% of on-CPU")


def user_view(out):
    lines = open(os.path.join(out, "profile.gpu.folded")).read().splitlines()
    bad = [l for l in lines if INTERNALS.search(l.rpartition(" ")[0])]
    depth = max((l.count(";") + 1 for l in lines), default=0)
    check("user view gpu folded", not bad and lines,
          f"{len(lines)} stacks, deepest {depth} frames, {len(bad)} with interpreter internals"
          + (f", e.g. {bad[0][:160]}" if bad else ""))


# ---- pprof: a wire-level reader of perftools.profiles.Profile ----

def varint(b, i):
    v = s = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << s
        s += 7
        if c < 0x80:
            return v, i


def fields(b):
    i = 0
    while i < len(b):
        key, i = varint(b, i)
        n, ty = key >> 3, key & 7
        if ty == 0:
            v, i = varint(b, i)
        elif ty == 2:
            ln, i = varint(b, i)
            v, i = b[i:i + ln], i + ln
        elif ty == 1:
            v, i = b[i:i + 8], i + 8
        elif ty == 5:
            v, i = b[i:i + 4], i + 4
        else:
            raise ValueError(f"wire type {ty}")
        yield n, ty, v


def packed(ty, v):
    if ty == 0:
        return [v]
    out, i = [], 0
    while i < len(v):
        x, i = varint(v, i)
        out.append(x)
    return out


def message(b, repeated=()):
    m = {}
    for n, ty, v in fields(b):
        if n in repeated:
            m.setdefault(n, []).extend(packed(ty, v))
        else:
            m[n] = v
    return m


def pprof(out, args):
    raw = gzip.open(os.path.join(out, "profile.pb.gz")).read()
    strings, types, samples, mappings, functions, locations = [], [], [], [], [], []
    for n, ty, v in fields(raw):
        if n == 6:
            strings.append(v.decode("utf-8", "replace"))
        elif n == 1:
            types.append(message(v))
        elif n == 2:
            samples.append(message(v, repeated=(1, 2)))
        elif n == 3:
            mappings.append(message(v))
        elif n == 5:
            functions.append(message(v))
        elif n == 4:
            locations.append(v)
    s = lambda i: strings[i] if i < len(strings) else f"<bad string {i}>"
    check("pprof strings", strings[:1] == [""], f"{len(strings)} strings, first {strings[:1]!r}")
    totals = [0] * len(types)
    for smp in samples:
        for k, v in enumerate(smp.get(2, [])):
            totals[k] += v if v < 1 << 63 else v - (1 << 64)
    empty = [s(t.get(1, 0)) for t, tot in zip(types, totals) if tot == 0]
    check("pprof sample types", types and not empty,
          ", ".join(f"{s(t.get(1, 0))}/{s(t.get(2, 0))}={tot}" for t, tot in zip(types, totals))
          + (f"; empty: {empty}" if empty else ""))
    first = s(mappings[0].get(5, 0)) if mappings else ""
    zero = sum(1 for m in mappings if m.get(3, 0) <= m.get(2, 0))
    main = os.path.basename(first)
    # The command's executable when a mapping is (`python3` runs python3.12), else any executable.
    command = os.path.basename((args.command or [""])[0])
    files = [os.path.basename(s(m.get(5, 0))) for m in mappings]
    want = command if command and any(f.startswith(command) for f in files) else ""
    check("pprof main mapping",
          main and main.startswith(want) and not main.startswith(("libcuda", "libcupti", "libxpuprof")) and zero == 0,
          f"first of {len(mappings)} mappings: {first} (command {command}); {zero} without a range")
    py = [f for f in functions if s(f.get(4, 0)).endswith(".py")]
    named_with_place = [s(f.get(2, 0)) for f in py if " (" in s(f.get(2, 0))]
    started = sum(1 for f in py if f.get(5, 0) > 0)
    native_files = sum(1 for f in functions if f.get(4) and not s(f.get(4, 0)).endswith(".py"))
    lines = 0
    for loc in locations:
        lm = [message(v) for n, ty, v in fields(loc) if n == 4]
        lines += sum(1 for x in lm if x.get(2, 0) > 0)
    check("pprof python functions", (py or not args.python) and not named_with_place,
          f"{len(py)} of {len(functions)} functions are Python with a filename ({started} with start_line); "
          f"{len(named_with_place)} named with their place; {native_files} native functions with a file; "
          f"{lines} lines with a line number")
    if args.pprof:
        for mode in (["-top"], ["-traces"], ["-list", args.list]):
            cmd = [args.pprof, "-symbolize=none"] + mode + [os.path.join(out, "profile.pb.gz")]
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
            if mode[0] == "-list" and "no matches" in p.stderr:  # not in GPU stacks: CPU samples
                cmd.insert(2, "-sample_index=cpu_time")
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
            text = p.stdout
            ok = p.returncode == 0 and text.strip() != ""
            if mode[0] == "-list":
                src = [l for l in text.splitlines() if re.match(r"\s+\S+\s+\S+\s+\d+:\s*\S", l)]
                ok = ok and bool(src)
                detail = f"{len(src)} source lines shown for {args.list!r}"
            else:
                detail = (text.splitlines()[0:4] or ["(empty)"])[-1][:160]
            check(f"go pprof {mode[0]}", ok, f"rc {p.returncode}: {detail} {p.stderr.strip()[:160]}")
            with open(os.path.join(out, f"pprof{mode[0]}.txt"), "w") as f:
                f.write(text[:20000])


def perfetto(out, args):
    p = subprocess.run([sys.executable, "-S", args.perfetto_check, os.path.join(out, "trace.perfetto-trace")],
                       capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        check("perfetto decode", False, (p.stderr.strip().splitlines() or ["no output"])[-1][:200])
        return
    t = json.loads(p.stdout)
    check("perfetto decode", True, f"{t['packets']} packets, {t['samples']} CPU samples, {t['flows']} flows")
    check("perfetto launch stacks", t["api_slices_with_stack"] > 0,
          f"{t['api_slices_with_stack']} of {t['api_slices']} API slices carry a launch stack; "
          f"flows from {t.get('flow_places')}")
    check("perfetto lanes", t["lanes_without_overlap"] == 0,
          f"{t['lanes_without_overlap']} slices on a lane no overlap needed; lanes {dict(t['lanes'])}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--pprof")
    ap.add_argument("--perfetto-check")
    ap.add_argument("--list", default="forward")
    ap.add_argument("--python", action="store_true", help="a Python program: expect Python functions")
    args = ap.parse_args()
    summary = json.load(open(os.path.join(args.out, "summary.json")))
    args.command = summary.get("session", {}).get("command") or []
    for step in (lambda: busy(args.out, summary), lambda: allocations(args.out, summary),
                 lambda: own_cost(args.out, summary), lambda: user_view(args.out), lambda: pprof(args.out, args),
                 lambda: perfetto(args.out, args) if args.perfetto_check else None):
        try:
            step()
        except Exception as e:  # one broken output must not hide the others' checks
            check("checker", False, f"{type(e).__name__}: {e}")
    py = summary.get("python") or {}
    for row in py.get("by_line", [])[:3]:
        info("by line", f"{row['location']} {row['gpu_pct']}%")
    for row in py.get("by_module", [])[:3]:
        info("by module", f"{row['module']} self {row['self_pct']}%")
    for row in summary.get("launch_bound", []):
        info("launch bound", f"device {row['device_index']}: {row['verdict']}: {row['evidence'][:160]}")
    for status, name, detail in results:
        print(f"{status} {name}: {detail}")
    sys.exit(1 if any(r[0] == "FAIL" for r in results) else 0)


if __name__ == "__main__":
    main()
