#!/usr/bin/env python3
"""Issue 25's "Done when" run: a training loop that ran for minutes without xpuprof, attached
twice (scripts/gpu/parts/attach_long.sh). Three checks, one line each (PASS/FAIL first):

  check_attach_long.py outputs DIR
      the window's outputs exist and parse: flamegraph.svg (XML, the GPU view), summary.txt,
      summary.json (JSON, with its windows), trace.perfetto-trace (protobuf: a Trace of
      TracePackets, read to its last byte), trace.json (the Chrome trace: parsed by the other
      checks, here only found), profile.folded;
  check_attach_long.py same CAL_TRACE CAL_LOG TRACE STEP_LOG
      the same profile as `xpuprof record` for those steps: each interior step of the attach
      window (TRACE, the loop's STEP_LOG) launched the same kernels, by name and count, as every
      step of a `record --capture-range cuda-profiler-api` calibration run of the same loop
      (CAL_TRACE, CAL_LOG);
  check_attach_long.py stacks RECORD_DIR ATTACH_DIR
      the same stacks as `xpuprof record`: the share of the attach window's GPU time
      (profile.gpu.folded) whose whole stack, Python lines and native frames down to the kernel,
      is one the calibration run under `xpuprof record` also had (PASS at 99% or more), and the
      share of the record's stacks (by time) the window has;
  check_attach_long.py modules UNPROFILED_DIR DORMANT_DIR [WINDOW_DIR [DORMANT2_DIR]]
      where the process's CPU time goes, by module, from `xpuprof attach --source ebpf` CPU
      profiles (profile.pb.gz, pprof) taken while the process was unprofiled and while the cupti
      agent was dormant (the eBPF source puts nothing into the process): shares of CPU samples,
      which the VM's clock phases do not move as they move times. PASS when the dormant profile
      has no sample with a frame in CUPTI or in xpuprof's agent (`[xpuprof]`), and says the 95%
      upper bound of that share (3 / samples); per module, the share of samples whose innermost
      frame is in it, unprofiled against dormant (the driver's, libcuda, would grow if the
      dormant state left work in it). WINDOW_DIR (a cupti window's profile with ebpf samples)
      shows the same shares while collecting, where CUPTI and the agent must appear; DORMANT2_DIR
      is checked as DORMANT_DIR (dormant again after a second window);
  check_attach_long.py phases STEP_LOG TIMES QUIET
      what the process did per step (attach_train.py --counters lines) before the first attach
      (the QUIET seconds before it), in each window and in each dormant phase after a detach (from
      1 s after `xpuprof attach` returned to the next attach or the loop's end). TIMES has one
      `attach K T0 T1` line per attach (CLOCK_MONOTONIC ns of starting and of xpuprof having
      exited). Prints per phase the median user instructions per step (and the phase's spread
      over blocks), kernel instructions, CPU µs and context switches per step, the agent threads'
      CPU per step, the step time (blocks that overlap an `ebpf NAME T0 T1` line's eBPF-only
      window are left out); then the dormant phases' ratios to the unprofiled one, and the
      method's own drift: the unprofiled blocks before the quiet part against the quiet part
      (the other parts' processes shared the GPU then, which moves time, not instructions).
      Budget: dormant <= 1.01x unprofiled; decided when the drift is within 0.5%. Without
      hardware counters the same is done on CPU time per step (a time, so weaker).
"""
import collections
import json
import os
import statistics
import sys
import xml.etree.ElementTree as ET

from check_figures import varint  # the protobuf varint reader of the pprof checks beside it

DECIDE = 0.005
STATES = {-3: "unknown", -2: "none", -1: "not-running", 0: "detached", 1: "paused", 2: "collecting"}


def perfetto_packets(path):
    """Number of TracePackets (field 1, length-delimited) of a Trace; raises on a bad framing."""
    b = open(path, "rb").read()
    i = n = 0
    while i < len(b):
        key, i = varint(b, i)
        if key != (1 << 3 | 2):
            raise ValueError(f"field key {key} at byte {i}: not a Trace of TracePackets")
        size, i = varint(b, i)
        if i + size > len(b):
            raise ValueError(f"packet at byte {i} runs past the end ({size} bytes)")
        i += size
        n += 1
    return n


def outputs(d):
    problems, facts = [], []
    for f in ("flamegraph.svg", "summary.txt", "summary.json", "trace.perfetto-trace", "trace.json",
              "profile.folded"):
        p = os.path.join(d, f)
        if not os.path.isfile(p) or os.path.getsize(p) == 0:
            problems.append(f"no {f}")
    if problems:
        return problems, facts
    checks = (
        ("flamegraph.svg", lambda p: f"svg {len(ET.parse(p).getroot())} elements"),
        ("summary.json", lambda p: f"summary windows={len(json.load(open(p)).get('session', {}).get('windows', []))}"),
        ("trace.perfetto-trace", lambda p: f"perfetto packets={perfetto_packets(p)}"),
        ("profile.folded", lambda p: f"folded stacks={sum(1 for _ in open(p))}"),
    )
    for f, check in checks:
        try:
            facts.append(check(os.path.join(d, f)))
        except Exception as e:  # any parse error is the finding
            problems.append(f"{f} does not parse: {e}")
    return problems, facts


def chrome_events(path):
    t = json.load(open(path))
    return t.get("traceEvents", t) if isinstance(t, dict) else t


def steps_of(log):
    out = []
    for line in open(log):
        p = line.split()
        if len(p) == 4 and p[0] == "step":
            out.append((int(p[2]), int(p[3])))
    return sorted(out)


def names_per_step(trace, log):
    import bisect
    steps = steps_of(log)
    starts = [s for s, _ in steps]
    per = collections.defaultdict(collections.Counter)
    for e in chrome_events(trace):
        if e.get("cat") != "kernel" or "ts" not in e:
            continue
        t = int(float(e["ts"]) * 1000)
        i = bisect.bisect_right(starts, t) - 1
        if i >= 0 and t <= steps[i][1]:
            per[i][e.get("name")] += 1
    return per


def same(cal_trace, cal_log, trace, log):
    cal = names_per_step(cal_trace, cal_log)
    if not cal:
        return ["no kernel in the calibration run"], []
    ref = collections.Counter(frozenset(c.items()) for c in cal.values()).most_common(1)[0][0]
    agree = sum(1 for c in cal.values() if frozenset(c.items()) == ref)
    per = names_per_step(trace, log)
    if not per:
        return ["no kernel of a step in the window"], []
    interior = range(min(per) + 1, max(per))
    bad = [i for i in interior if frozenset(per.get(i, {}).items()) != ref]
    facts = [f"reference {sum(n for _, n in ref)} kernels/step of {len(set(k for k, _ in ref))} names "
             f"({agree}/{len(cal)} calibration steps alike)", f"interior steps alike {len(interior) - len(bad)}/{len(interior)}"]
    problems = [f"{len(bad)} interior steps differ from record's, e.g. step {bad[0]}"] if bad else []
    return problems, facts


def folded(d):
    path = os.path.join(d, "profile.gpu.folded")
    if not os.path.exists(path):
        path = os.path.join(d, "profile.folded")
    out = collections.Counter()
    for line in open(path, errors="replace"):
        stack, _, w = line.rstrip("\n").rpartition(" ")
        if stack and w.isdigit():
            out[stack] += int(w)
    return out


def stacks(record_dir, attach_dir):
    try:
        rec, att = folded(record_dir), folded(attach_dir)
    except OSError as e:
        return [f"cannot read a folded view: {e}"], []
    if not rec or not att:
        return [f"no GPU stacks (record {len(rec)}, attach {len(att)})"], []
    inside = sum(w for s, w in att.items() if s in rec)
    share = 100.0 * inside / sum(att.values())
    back = 100.0 * sum(w for s, w in rec.items() if s in att) / sum(rec.values())
    missing = sorted(((w, s) for s, w in att.items() if s not in rec), reverse=True)[:1]
    facts = [f"attach GPU time under record's stacks {share:.2f}% ({len(att)} stacks, record {len(rec)})",
             f"record's GPU time under the window's stacks {back:.2f}%"]
    if missing:
        facts.append(f"largest stack record lacks: {missing[0][1][-300:]}")
    return ([] if share >= 99.0 else [f"only {share:.2f}% of the window's GPU time under record's stacks"]), facts


def fields(b):
    """A protobuf message's fields: {number: [int or bytes]} (packed repeated varints stay bytes)."""
    out, i = collections.defaultdict(list), 0
    while i < len(b):
        key, i = varint(b, i)
        f, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(b, i)
        elif wt == 2:
            n, i = varint(b, i)
            v, i = b[i:i + n], i + n
        elif wt == 1:
            v, i = int.from_bytes(b[i:i + 8], "little"), i + 8
        elif wt == 5:
            v, i = int.from_bytes(b[i:i + 4], "little"), i + 4
        else:
            raise ValueError(f"wire type {wt} at byte {i}")
        out[f].append(v)
    return out


def ints(vals):
    """Repeated varints, packed (bytes) or not."""
    out = []
    for v in vals:
        if isinstance(v, bytes):
            i = 0
            while i < len(v):
                x, i = varint(v, i)
                out.append(x)
        else:
            out.append(v)
    return out


def cpu_samples(d):
    """[(innermost module, set of modules and names on the stack, weight)] of the CPU samples of
    d/profile.pb.gz."""
    import gzip
    p = fields(gzip.open(os.path.join(d, "profile.pb.gz")).read())
    strings = [b.decode("utf-8", "replace") for b in p[6]]
    types = [strings[fields(t)[1][0]] if fields(t)[1] else "" for t in p[1]]
    if "cpu_time" not in types:
        return [], 0
    slot = types.index("cpu_time")
    mapping = {}
    for m in p[3]:
        f = fields(m)
        mapping[f[1][0]] = os.path.basename(strings[f[5][0]]) if f.get(5) else "?"
    func = {}
    for fn in p[5]:
        f = fields(fn)
        func[f[1][0]] = strings[f[2][0]] if f.get(2) else ""
    loc = {}
    for l in p[4]:
        f = fields(l)
        names = {func.get(fields(line)[1][0], "") for line in f.get(4, []) if fields(line).get(1)}
        loc[f[1][0]] = (mapping.get(f[2][0], "?") if f.get(2) else "?", names)
    out = []
    for smp in p[2]:
        f = fields(smp)
        vals = [v - (1 << 64) if v >= 1 << 63 else v for v in ints(f.get(2, []))]
        w = vals[slot] if slot < len(vals) else 0
        if w <= 0:
            continue
        ids = ints(f.get(1, []))
        frames = [loc.get(i, ("?", set())) for i in ids]
        mods = {m for m, _ in frames} | {n for _, ns in frames for n in ns}
        out.append((frames[0][0] if frames else "?", mods, w))
    return out, (p[12][0] if p.get(12) else 0)


PROFILER = ("libcupti", "libxpuprof", "[xpuprof]")


def modules(dirs):
    names = ["unprofiled", "dormant", "window", "dormant2"]
    shares, facts, problems = {}, [], []
    for name, d in zip(names, dirs):
        try:
            smp, period = cpu_samples(d)
        except (OSError, ValueError, IndexError, KeyError) as e:
            problems.append(f"{name}: cannot read {d}/profile.pb.gz: {e}")
            continue
        total = sum(w for _, _, w in smp)
        if not total:
            problems.append(f"{name}: no CPU samples")
            continue
        n = round(total / period) if period else len(smp)
        prof = sum(w for _, mods, w in smp if any(any(p in m for p in PROFILER) for m in mods))
        leaf = collections.Counter()
        for m, _, w in smp:
            leaf[m] += w
        shares[name] = {m: 100.0 * w / total for m, w in leaf.items()}
        top = ", ".join(f"{m} {100.0 * w / total:.2f}%" for m, w in leaf.most_common(6))
        facts.append(f"{name}: {n} samples, CUPTI+agent on the stack {100.0 * prof / total:.3f}% of CPU; innermost: {top}")
        if name.startswith("dormant"):
            if prof:
                problems.append(f"{name}: {100.0 * prof / total:.3f}% of CPU samples with CUPTI or agent frames")
            else:
                facts.append(f"{name}: no sample in CUPTI or the agent of {n}: share < {300.0 / n:.3f}% (95%)")
    for name in ("dormant", "dormant2"):
        if "unprofiled" in shares and name in shares:
            u, dm = shares["unprofiled"], shares[name]
            diff = sorted(((dm.get(m, 0) - u.get(m, 0), m) for m in set(u) | set(dm)), key=lambda x: -abs(x[0]))[:5]
            facts.append(f"{name} - unprofiled, innermost share: " + ", ".join(f"{m} {d:+.2f} pts" for d, m in diff))
    return problems, facts


def phases(log, times, quiet):
    attaches, sampled = [], []
    for line in open(times):
        p = line.split()
        if len(p) >= 4 and p[0] == "attach":
            attaches.append((int(p[2]), int(p[3])))
        elif len(p) >= 4 and p[0] == "ebpf":  # eBPF-only windows: their blocks are left out
            sampled.append((int(p[2]), int(p[3])))
    blocks = []
    for line in open(log):
        p = line.split()
        if len(p) in (9, 10) and p[0] == "counters":
            i0, i1, t, iu, ik, task, ctx, agent = map(int, p[1:9])
            blocks.append((t, i1 - i0, iu, ik, task, ctx, agent, int(p[9]) if len(p) == 10 else -3))
    steps = steps_of(log)
    if not blocks or not attaches:
        return [f"no counter lines ({len(blocks)}) or attaches ({len(attaches)})"], []
    q = int(quiet * 1e9)
    a0 = attaches[0][0]
    named = [("early", lambda t0, t1: t1 < a0 - q), ("unprofiled", lambda t0, t1: a0 - q <= t0 and t1 < a0)]
    for k, (s, e) in enumerate(attaches):
        nxt = attaches[k + 1][0] if k + 1 < len(attaches) else float("inf")
        named.append((f"window{k + 1}", lambda t0, t1, s=s, e=e: s <= t0 and t1 <= e))
        named.append((f"dormant{k + 1}", lambda t0, t1, e=e, nxt=nxt: e + 1e9 <= t0 and t1 < nxt))
    # a block's start: the previous block's end (the first block starts at the first step)
    starts = [steps[0][0] if steps else 0] + [b[0] for b in blocks[:-1]]
    med = statistics.median
    stats, cpu, facts = {}, {}, []
    outside = lambda t0, t1: not any(t0 <= e and s <= t1 for s, e in sampled)
    for name, sel in named:
        bs = [b for t0, b in zip(starts, blocks) if sel(t0, b[0]) and outside(t0, b[0])]
        if not bs:
            facts.append(f"{name}: no block")
            continue
        iu = [b[2] / b[1] for b in bs]
        st = [(e - s) / 1e6 for s, e in steps if sel(s, e) and outside(s, e)]
        if bs[0][2] >= 0:
            stats[name] = med(iu)
        cpu[name] = med([b[4] / b[1] for b in bs]) / 1e3
        hw = f"iu={med(iu):.0f} spread={(max(iu) - min(iu)) / med(iu):.4f} ik={med([b[3] / b[1] for b in bs]):.0f} " \
            if bs[0][2] >= 0 else "iu=n/a (no hardware counters) "
        facts.append(f"{name}: blocks={len(bs)} {hw}cpu_us={cpu[name]:.1f} "
                     f"ctx={med([b[5] / b[1] for b in bs]):.2f} agent_cpu_us={sum(b[6] for b in bs) / sum(b[1] for b in bs) / 1e3:.3f} "
                     f"step_ms={med(st) if st else float('nan'):.3f} "
                     f"agent_states={','.join(STATES.get(x, '?') for x in sorted({b[7] for b in bs}))}")
        if name.startswith("dormant") and {b[7] for b in bs} != {0}:
            facts.append(f"{name}: CUPTI not detached in every block")
    # User instructions decide; without hardware counters, CPU time per step (time: weaker).
    metric, vals = ("user instructions", stats) if "unprofiled" in stats else ("CPU time", cpu)
    base = vals.get("unprofiled")
    if base is None:
        return ["no unprofiled figure (no quiet block before the first attach)"], facts
    drift = vals["early"] / base - 1 if vals.get("early") else float("nan")
    problems = []
    for name, v in vals.items():
        if name.startswith("dormant"):
            r = v / base
            verdict = "undecided" if not abs(drift) <= DECIDE else ("ok" if r <= 1.01 else "over")
            facts.append(f"{name}/unprofiled={r:.4f} by {metric} ({verdict})")
            if verdict != "ok":
                problems.append(f"{name} {r:.4f}x unprofiled by {metric} ({verdict}, drift {drift:+.4f})")
    facts.append(f"drift early/unprofiled={drift + 1:.4f} by {metric}")
    return problems, facts


def main():
    cmd = sys.argv[1] if len(sys.argv) > 1 else ""
    if cmd == "outputs" and len(sys.argv) == 3:
        problems, facts = outputs(sys.argv[2])
    elif cmd == "same" and len(sys.argv) == 6:
        problems, facts = same(*sys.argv[2:6])
    elif cmd == "modules" and len(sys.argv) in (4, 5, 6):
        problems, facts = modules(sys.argv[2:])
    elif cmd == "stacks" and len(sys.argv) == 4:
        problems, facts = stacks(sys.argv[2], sys.argv[3])
    elif cmd == "phases" and len(sys.argv) == 5:
        problems, facts = phases(sys.argv[2], sys.argv[3], float(sys.argv[4]))
    else:
        sys.exit(__doc__)
    print(("PASS" if not problems else "FAIL " + "; ".join(problems)) + " | " + " | ".join(facts))
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())
