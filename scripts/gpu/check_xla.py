#!/usr/bin/env python3
"""Checks a `xpuprof --source ebpf,cupti --sink folded,dump` run of a JAX (or torch.compile)
training loop against issue 33, and describes what the run recorded.

usage: check_xla.py OUT_DIR OPS_FILE|"" SCRIPT.py

OUT_DIR holds profile.gpu.folded (or profile.folded: GPU time per stack) and records.jsonl (the dump sink's records);
OPS_FILE is train.py's --ops output (`LINE OP name`, `LINE CALL`, `LINE COMPILE`); without one the
marked lines are read from SCRIPT.py. Prints what the run holds (NVTX ranges by domain and
prefix, threads, recordings, device ops), then one last line:

PASS/FAIL steady=S us compile=C% (of all GPU time; the folded views weigh device work in
microseconds) call=X% op=Y% unknown_rec=N mangled=M

- compile: GPU time under a `[compile]` frame (compile-time work);
- steady state: the device work after the first full step, not under `[compile]`. With
  records.jsonl (the dump sink) it is the device operations that start after the last one
  launched under the script's COMPILE line ends (that call compiles the step and runs it once;
  a script without a COMPILE line: from the first operation launched under its CALL line), so
  the initialisation's modules (random keys, the weights' scaling, each executed once) and the
  first step are left out by time, and work of the loop launched from elsewhere (a copy with a
  partial stack) still counts against the shares. Without records.jsonl only the folded GPU
  view is there, which has no time: the stacks under one of the script's own lines but not
  under CALL (the initialisation, the COMPILE call) are left out, and stacks under no line of
  the script (partial stacks) stay in;
- call: of the steady-state GPU time, the share under the script's CALL line;
- op: of the steady-state GPU time, the share under the CALL line with an `[xla] ` operation
  frame below it whose source line is one of the script's OP lines (JAX only);
- unknown_rec: stacks under `[recorded at unknown site]` (device ops whose recording call the
  source did not know), in folded lines; mangled: distinct frames still mangled (`_Z...`).
PASS needs call >= 95, op >= 95 (JAX), every compile-time launch marked (no kernel frame of a
known autotuning routine outside `[compile]`, and some compile-time work under it), unknown_rec = 0
and mangled = 0 (GPU and CPU views). Before the last line, one `check NAME FIGURE (bar BAR)
PASS|FAIL` line per check of issue 33.
"""
import collections
import gzip
import json
import os
import re
import sys

# Native frames of compile-time work (XLA's autotuners, its redzone checks): found outside a
# `[compile]` frame they mean compile-time work went unmarked.
# Kernels of matrix multiplies (cuBLAS, cuBLASLt's nvjet, CUTLASS, XLA's Triton gemm fusions).
GEMM = re.compile(r"gemm|nvjet|cutlass|xmma|matmul|_dot", re.I)
# torch.compile's: its benchmarking functions and modules (Python frames).
# (Inductor's CachingAutotuner.run is the steady state's launch path, not autotuning.)
AUTOTUNE = re.compile(r"xla::.*Autotun|Autotuner::|AutotunerUtil|RedzoneAllocator|AlgorithmPicker|fp_comparison|"
                      r"autotune_select|benchmark_|do_bench|benchmarking\.py|autotune_process\.py|"
                      r"CachingAutotuner\.(bench|autotune|coordinate)|speedup_by_fusion")


def runtime_demangle(name):
    """The C++ runtime's __cxa_demangle of `name` (what a fallback would show), or None."""
    import ctypes
    try:
        lib = ctypes.CDLL("libstdc++.so.6")
        f = lib.__cxa_demangle
        f.restype = ctypes.c_void_p
        st = ctypes.c_int(-1)
        core = name.split("@")[0].split(" ")[0]
        r = f(core.encode(), None, None, ctypes.byref(st))
        if not r:
            return None
        text = ctypes.string_at(r).decode(errors="replace")
        ctypes.CDLL(None).free(ctypes.c_void_p(r))
        return text if st.value == 0 else None
    except (OSError, AttributeError):
        return None


def marked(ops_file, script):
    out = []
    if ops_file and os.path.exists(ops_file):
        for ln in open(ops_file):
            f = ln.split()
            if len(f) >= 2:
                out.append((int(f[0]), f[1], f[2] if len(f) > 2 else ""))
        return out
    for n, line in enumerate(open(script), 1):
        m = re.search(r"#\s+(OP|CALL|COMPILE)(?:\s+(\w+))?\s*$", line)
        if m:
            out.append((n, m.group(1), m.group(2) or ""))
    return out


def folded(path):
    for ln in open(path, errors="replace"):
        stack, _, v = ln.rstrip("\n").rpartition(" ")
        if stack and v.isdigit():
            yield stack.split(";"), int(v)


def records(out):
    p = os.path.join(out, "records.jsonl")
    if not os.path.exists(p):
        return
    with open(p, errors="replace") as f:
        for ln in f:
            try:
                yield json.loads(ln)
            except ValueError:
                pass


def device_ops(out):
    """The kernels, copies and sets of records.jsonl as (start, end, stack): stack is the folded
    view's frames, outermost first (the launch stack, then `[recorded at]` and the recording's
    stack for work replayed from a recording, then the operation). None without records."""
    strs, frames, stacks, ops = {}, {}, {}, []
    for r in records(out):
        k = r.get("record")
        if k == "Str":
            strs[r.get("id")] = r.get("display") or r.get("text", "")
        elif k == "Frame":
            frames[r.get("id")] = r.get("name", 0)
        elif k == "Stack":
            stacks[r.get("id")] = r.get("frames", [])
        elif k == "DeviceOp" and r.get("kind") in ("Kernel", "Memcpy", "Memset"):
            ops.append(r)
    if not ops:
        return None

    def names(ref):
        if not isinstance(ref, dict) or not ref.get("stack"):
            return ["[unknown launch site]"]
        return [strs.get(frames.get(f), "") or "?" for f in reversed(stacks.get(ref["stack"], []))]

    out_ops = []
    for r in ops:
        st = names(r.get("launch"))
        if isinstance(r.get("recorded"), dict):
            st += ["[recorded at]"] + names(r["recorded"])
        st.append(f"[GPU_{r.get('kind')}]{strs.get(r.get('name'), '')}")
        out_ops.append((r.get("start", 0), r.get("end", 0), st))
    return out_ops


def under_line(st, base, lines):
    """True when a frame of `st`'s launch stack (not the recording's below `[recorded at]`) is
    at one of `lines` of script `base` (not an operation label)."""
    launch = st[:st.index("[recorded at]")] if "[recorded at]" in st else st
    return any(not f.startswith("[xla] ") and any(f.endswith(f"{base}:{n})") for n in lines) for f in launch)


def script_lines(st, base):
    """The lines of script `base` that frames of `st` are at (operation labels aside)."""
    out = set()
    for f in st:
        m = re.search(r"\(([^():]+):(\d+)\)\s*$", f)
        if m and not f.startswith("[xla] ") and os.path.basename(m.group(1)) == base:
            out.add(int(m.group(2)))
    return out


def describe(out):
    strs, ranges, marks, threads = {}, collections.Counter(), collections.Counter(), {}
    rtids, samples, kinds = collections.defaultdict(set), {}, collections.Counter()
    rec_sites, ops_graph, ops_rec = 0, 0, 0
    sub_unknown, sub_kinds = collections.Counter(), collections.Counter()
    api = collections.Counter()
    undemangled = []
    for r in records(out):
        k = r.get("record")
        kinds[k] += 1
        if k == "Str":
            strs[r.get("id")] = r.get("text", "")
            t = r.get("text", "")
            if t.startswith("_Z") and not r.get("display"):
                undemangled.append(t)
        elif k == "Thread":
            threads[r.get("tid")] = r.get("name")
        elif k in ("Range", "Marker"):
            name, dom = strs.get(r.get("name"), "?"), strs.get(r.get("domain"), "?")
            key = (k, dom, re.split(r"[:#(]", name, maxsplit=1)[0][:40])
            (ranges if k == "Range" else marks)[key] += 1
            rtids[key].add(r.get("tid"))
            samples.setdefault(key, []).append(name[:300]) if len(samples.get(key, [])) < 4 else None
        elif k == "LaunchSite" and r.get("recording"):
            rec_sites += 1
        elif k == "DeviceOp":
            ops_graph += r.get("graph") is not None
            ops_rec += r.get("recorded") is not None
            sub = r.get("submission")
            if isinstance(sub, dict):
                sub_kinds[(r.get("kind"), sub.get("record") is not None, r.get("recorded") is not None)] += 1
                if sub.get("record") is None:
                    sub_unknown[(r.get("kind"), strs.get(r.get("name"), "?")[:90])] += 1
        elif k == "ApiCall":
            api[(strs.get(r.get("name"), "?"), threads.get(r.get("tid"), r.get("tid")))] += 1
    print("records:", dict(kinds))
    for key, n in sorted({**ranges, **marks}.items(), key=lambda kv: -kv[1]):
        tn = sorted({str(threads.get(t, t)) for t in rtids[key]})[:6]
        print(f"{key[0]} domain={key[1]!r} prefix={key[2]!r} n={n} threads={tn}")
        for s in samples[key]:
            print("    ", repr(s))
    print(f"recording launch sites={rec_sites} device ops in graphs={ops_graph} with recorded stack={ops_rec}")
    for (kind, has_rec, joined), n in sub_kinds.most_common():
        print(f"submitted {kind} record_known={has_rec} recorded_stack={joined} n={n}")
    for (kind, name), n in sub_unknown.most_common(12):
        print(f"submitted without record: {kind} {name} n={n}")
    for (name, t), n in api.most_common(25):
        print(f"api {name} thread={t} n={n}")
    print(f"strings left mangled by the host: {len(undemangled)}")
    for t in undemangled[:30]:
        print("  undemangled", t, "| runtime demangler:", (runtime_demangle(t) or "-")[:160])


def main():
    out, ops_file, script = sys.argv[1], sys.argv[2], sys.argv[3]
    base = os.path.basename(script)
    try:
        describe(out)
    except OSError as e:
        print("records:", e)
    lines = marked(ops_file, script)
    call = [n for n, k, _ in lines if k == "CALL"]
    compile_lines = [n for n, k, _ in lines if k == "COMPILE"]
    oplines = {n for n, k, _ in lines if k == "OP"}
    fp = os.path.join(out, "profile.gpu.folded")
    if not os.path.exists(fp):
        fp = os.path.join(out, "profile.folded")
    if not os.path.exists(fp):
        print(f"FAIL no {fp}")
        return
    total = comp = steady = under_call = with_op = unknown = 0
    # The right operation: of the steady state's matrix-multiply kernels (by kernel name), the
    # GPU time whose operation frame points at a `dot_general` line; of its other kernels, at
    # another OP line.
    dot_lines = {n for n, k, name in lines if k == "OP" and name == "dot_general"}
    gemm_time = gemm_right = other_time = other_right = 0
    unmarked_autotune = 0
    mangled = set()
    nocall = collections.Counter()
    opshare = collections.Counter()
    is_compile = lambda st: any(f.startswith("[compile]") for f in st)
    dev_ops = device_ops(out)
    steady_stacks = []
    if dev_ops:
        first = [e for s, e, st in dev_ops if not is_compile(st) and under_line(st, base, compile_lines)]
        t0 = max(first) if first else min(
            (s for s, e, st in dev_ops if not is_compile(st) and under_line(st, base, call)), default=0)
        before = [e - s for s, e, st in dev_ops if s < t0 and not is_compile(st)]
        # In the folded views' unit, microseconds.
        steady_stacks = [(st, (e - s) / 1e3) for s, e, st in dev_ops if s >= t0 and not is_compile(st)]
        print(f"steady state from records.jsonl: {len(steady_stacks)} device ops after the first full step "
              f"(ends at {t0} ns); {len(before)} ops, {sum(before) / 1e3:.1f} us of GPU time before it left out")
    for st, v in folded(fp):
        total += v
        mangled.update(f for f in st if f.startswith("_Z"))
        if any(f == "[recorded at unknown site]" for f in st):
            unknown += 1
        if is_compile(st):
            comp += v
            continue
        if any(AUTOTUNE.search(f) for f in st):
            unmarked_autotune += v
        if not dev_ops and not under_line(st, base, call) and script_lines(st, base):
            continue
        if not dev_ops:
            steady_stacks.append((st, v))
    if not dev_ops:
        print("steady state from the folded view (no records.jsonl): stacks under the script's lines "
              "but not under CALL left out")
    for st, v in steady_stacks:
        steady += v
        at = [i for i, f in enumerate(st) if any(f.endswith(f"({base}:{c})") or f"{base}:{c})" in f for c in call)]
        if at:
            under_call += v
            below = st[at[-1] + 1:]
            ops = [f for f in below if f.startswith("[xla] ")]
            if ops:
                opshare[ops[0][:120]] += v
                m = re.search(r"\(([^():]+):(\d+)\)\s*$", ops[-1])
                if m and os.path.basename(m.group(1)) == base and int(m.group(2)) in oplines:
                    with_op += v
                kernel = st[-1] if st and st[-1].startswith("[GPU_Kernel]") else None
                at_line = int(m.group(2)) if m and os.path.basename(m.group(1)) == base else None
                if kernel and GEMM.search(kernel):
                    gemm_time += v
                    gemm_right += v if at_line in dot_lines else 0
                elif kernel:
                    other_time += v
                    other_right += v if at_line in oplines - dot_lines else 0
        else:
            nocall[";".join(st[:3] + ["..."] + st[-3:])[:300]] += v
    pct = lambda a, b: 100.0 * a / b if b else 0.0
    print(f"total GPU time {total / 1e3:.1f} ms; compile {comp / 1e3:.1f} ms; steady {steady / 1e3:.3f} ms")
    for s, v in nocall.most_common(12):
        print(f"steady not under CALL {pct(v, steady):5.1f}% {s}")
    for s, v in opshare.most_common(15):
        print(f"op {pct(v, steady):5.1f}% {s}")
    cpu = os.path.join(out, "profile.cpu.folded")
    cpu_mangled = set()
    if os.path.exists(cpu):
        for st, _ in folded(cpu):
            cpu_mangled.update(f for f in st if f.startswith("_Z"))
    print(f"mangled frames: gpu view {len(mangled)}, cpu view {len(cpu_mangled)}")
    for f in sorted(mangled | cpu_mangled)[:40]:
        print("mangled", f[:300], "| runtime demangler:", (runtime_demangle(f) or "-")[:160])
    trace = os.path.join(out, "trace.json")
    if os.path.exists(trace):
        try:
            t = json.load(open(trace))
            ev = t.get("traceEvents", t) if isinstance(t, dict) else t
            cats = collections.Counter()
            for e in ev:
                c = e.get("cat", "") if isinstance(e, dict) else ""
                if c.endswith("compile") or c in ("kernel", "memcpy", "memset"):
                    cats[c] += e.get("dur", 0)
            print("timeline categories (us): " + ", ".join(f"{c}={v:.0f}" for c, v in sorted(cats.items())))
        except (OSError, ValueError) as e:
            print("trace.json:", e)
    summ = os.path.join(out, "summary.json")
    if os.path.exists(summ):
        try:
            print("summary compile_time:", json.load(open(summ)).get("compile_time"))
        except (OSError, ValueError) as e:
            print("summary.json:", e)
    jax = bool(oplines)
    # Issue 33's Checks, one line each: `check NAME FIGURE (BAR) PASS|FAIL`.
    checks = [
        ("steady-under-call", f"{pct(under_call, steady):.1f}%", ">= 95%", pct(under_call, steady) >= 95 and steady > 0),
        ("compile-time-marked", f"{100 - pct(unmarked_autotune, comp + unmarked_autotune):.1f}% "
         f"({unmarked_autotune / 1e3:.2f} ms of autotuning frames outside [compile]; {comp / 1e3:.1f} ms marked)",
         "100%", unmarked_autotune == 0 and comp > 0),
        ("unknown-recording-site", f"{unknown} stacks", "0", unknown == 0),
        ("mangled-names", f"{len(mangled | cpu_mangled)} (gpu {len(mangled)}, cpu {len(cpu_mangled)})", "0",
         not (mangled | cpu_mangled)),
    ]
    if jax:
        checks.insert(1, ("steady-under-call-and-op", f"{pct(with_op, steady):.1f}%", ">= 95%", pct(with_op, steady) >= 95))
        # Kernel time under the right operation: gemm kernels at a dot_general line, the others
        # at one of the other OP lines (elementwise and reduction fusions).
        right = gemm_right + other_right
        checks.insert(2, ("steady-right-operation",
                          f"{pct(right, gemm_time + other_time):.1f}% of kernel time (gemms at dot_general "
                          f"{pct(gemm_right, gemm_time):.1f}% of {gemm_time / 1e3:.3f} ms, others at another OP line "
                          f"{pct(other_right, other_time):.1f}% of {other_time / 1e3:.3f} ms)",
                          ">= 95%", pct(right, gemm_time + other_time) >= 95))
    for name, fig, bar, good in checks:
        print(f"check {name} {fig} (bar {bar}) {'PASS' if good else 'FAIL'}")
    ok = all(c[3] for c in checks)
    print(f"{'PASS' if ok else 'FAIL'} steady={steady:.0f}us compile={pct(comp, total):.1f}% "
          f"call={pct(under_call, steady):.1f}% op={pct(with_op, steady):.1f}% "
          f"unmarked_autotune={pct(unmarked_autotune, total):.1f}% unknown_rec={unknown} mangled={len(mangled)}")


if __name__ == "__main__":
    main()
