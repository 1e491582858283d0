"""What a multi-rank recording holds about its collectives (scripts/gpu/parts/ranks.sh).

usage: check_ranks.py dump RECORDS.jsonl     the dump sink's records: processes and ranks, the
                                              collective kernels (names, streams, per process),
                                              NVTX ranges by domain, long off-CPU samples' stacks
       check_ranks.py check OUT WORKLOAD DUMP.jsonl...
                                              checks a merged (or whole-job) output OUT (summary.json,
                                              trace.json) against the ranks' own records (the dumps):
                                              both ranks named, every collective matched, rank 1 found
                                              late at the collectives of the steps it slept in, at the
                                              workload's STRAGGLER LINE. Prints `CHECK name PASS|FAIL ...`
       check_ranks.py align MERGE.err            `report --merge`'s clock lines for recordings of one
                                              machine (one clock, true offset 0): kept within 1 µs of
                                              the reference by the wall-clock pairs, and the ends of the
                                              collectives put within the bound the merge states.
                                              Prints `CHECK align PASS|FAIL ...` per recording
"""
import collections
import json
import re
import sys


def load(path):
    strs, procs, frames, stacks = {}, {}, {}, {}
    ops, notes, samples = [], [], []
    for line in open(path):
        r = json.loads(line)
        k = r["record"]
        if k == "Str":
            strs[r["id"]] = r.get("display") or r["text"]
        elif k == "Process":
            procs[r["pid"]] = r
        elif k == "Frame":
            frames[r["id"]] = r
        elif k == "Stack":
            stacks[r["id"]] = r["frames"]
        elif k == "DeviceOp":
            ops.append(r)
        elif k in ("Range", "Marker"):
            notes.append(r)
        elif k == "CpuSample":
            samples.append(r)
    return strs, procs, frames, stacks, ops, notes, samples


def dump(path):
    strs, procs, frames, stacks, ops, notes, samples = load(path)
    s = lambda i: strs.get(i, f"#{i}")
    print("== processes")
    for pid, p in sorted(procs.items()):
        print(f"pid {pid} rank={p.get('rank')} local={p.get('local_rank')} world={p.get('world_size')} "
              f"host={s(p.get('host'))} name={s(p.get('name'))} command={s(p.get('command'))[:80]}")
    print("== device ops per process (kernels with 'nccl' in the name)")
    by = collections.defaultdict(list)
    for o in ops:
        if "nccl" in s(o["name"]).lower():
            by[o["pid"]].append(o)
    for pid, l in sorted(by.items()):
        names = collections.Counter(s(o["name"]) for o in l)
        streams = collections.Counter(o["stream"] for o in l)
        print(f"pid {pid}: {len(l)} nccl ops, streams {dict(streams)}")
        for n, c in names.most_common(12):
            print(f"   {c:6d} {n[:160]}")
        for o in sorted(l, key=lambda o: o["start"])[:4]:
            print(f"   first: start={o['start']} dur={o['end'] - o['start']} stream={o['stream']} "
                  f"bytes={o['bytes']} kernel={o.get('kernel')} corr={o.get('correlation')}")
    allk = collections.Counter(o["pid"] for o in ops)
    print(f"all device ops per pid: {dict(allk)}")
    print("== NVTX annotations per domain")
    dom = collections.defaultdict(collections.Counter)
    for n in notes:
        dom[(n["pid"], s(n["domain"]))][s(n["name"])] += 1
    for (pid, d), c in sorted(dom.items()):
        print(f"pid {pid} domain {d!r}: {sum(c.values())}: " + ", ".join(f"{k[:60]}={v}" for k, v in c.most_common(10)))
    for n in [n for n in notes if "nccl" in (s(n["name"]) + s(n["domain"])).lower()][:6]:
        print(f"   nccl range: {n}")
    print("== CPU samples per pid, and off-CPU samples over 10 ms")
    print(dict(collections.Counter((x["pid"], x["kind"]) for x in samples)))
    for x in [x for x in samples if x["kind"] != "OnCpu" and x["weight"] > 10_000_000][:8]:
        fr = [s(frames.get(f, {}).get("name", 0)) for f in stacks.get(x["stack"], [])][:8]
        print(f"   pid {x['pid']} t={x['time']} {x['weight'] / 1e6:.1f} ms: {' <- '.join(fr)}")


def collectives_of(path):
    """Per pid: its collective kernels (start, end) in stream order, and its `step` ranges."""
    strs, procs, frames, stacks, ops, notes, samples = load(path)
    colls = collections.defaultdict(list)
    for o in ops:
        if o.get("collective") not in (None, "None"):
            colls[o["pid"]].append((o["start"], o["end"], o["stream"]))
    steps = collections.defaultdict(list)
    for n in notes:
        if strs.get(n["name"]) == "step" and n["end"] > n["start"]:
            steps[n["pid"]].append((n["start"], n["end"]))
    ranks = {pid: p.get("rank") for pid, p in procs.items()}
    return {pid: sorted(c) for pid, c in colls.items()}, {p: sorted(s) for p, s in steps.items()}, ranks


def check(out, workload, dumps):
    def row(name, ok, detail):
        print(f"CHECK {name} {'PASS' if ok else 'FAIL'} {detail}")
    line = next(i for i, l in enumerate(open(workload), 1) if "STRAGGLER LINE" in l and "sleep(" in l)
    s = json.load(open(f"{out}/summary.json"))
    names = [r["name"] for r in s.get("ranks", [])]
    trace = json.load(open(f"{out}/trace.json"))
    pnames = [e["args"]["name"] for e in trace["traceEvents"] if e.get("ph") == "M" and e.get("name") == "process_name"]
    # The ranks' own records: their collective kernels, in order, and rank 1's steps.
    colls, steps, ranks = {}, {}, {}
    for d in dumps:
        a, b, r = collectives_of(d)
        colls.update(a), steps.update(b), ranks.update(r)
    world = len({r for r in ranks.values() if r is not None})
    named = world >= 2 and all(
        any(n.startswith(f"rank {k} (") for n in names) and any(n.startswith(f"rank {k} (") for n in pnames)
        for k in range(world))
    row("ranks_named", named, f"{world} ranks; summary={names} trace={[n for n in pnames if n.startswith('rank')]}")
    c = s.get("collectives")
    if not c:
        row("collectives", False, "no collectives section in summary.json")
        return
    per_rank = {ranks.get(pid): len(v) for pid, v in colls.items()}
    counts = set(per_rank.values())
    row("collectives_matched", c["matched"] == c["collectives"] and counts == {c["collectives"]} and c["ranks"] == world,
        f"summary {c['matched']} of {c['collectives']} matched over {c['ranks']} ranks; kernels per rank {per_rank}")
    k = max(c["kinds"], key=lambda k: k["wait_ns"])
    row("straggler_rank", k["most_wait_on"].startswith("rank 1 ("),
        f"{k['kind']}: most wait on {k['most_wait_on']} ({k['most_wait_ns'] / 1e6:.1f} ms of {k['wait_ns'] / 1e6:.1f} ms), "
        f"last most often {k['last_most_often']} ({k['last_count']}x of {k['count']})")
    py = k["python_line"]
    row("straggler_line", f"ddp_straggler.py:{line})" in py and py.startswith("straggle ("),
        f"{py!r} [{k['stack_from']}] (the sleep is line {line}); stack {k['stack'][:4]}")
    # Independently of the summary: rank 1's late arrivals (k-th collective of each rank paired,
    # its start over 10 ms after rank 0's) fall in the steps it slept in (every 10th).
    by_rank = {ranks.get(pid): pid for pid in colls}
    if 0 in by_rank and 1 in by_rank:
        r0, r1 = colls[by_rank[0]], colls[by_rank[1]]
        st = steps.get(by_rank[1], [])
        # The step each of rank 1's collectives ran in (its GPU may run a step's last
        # all-reduce just after the CPU closed the range); those outside steps (set-up, the
        # last barrier) and in step 0 (warm-up: lazy initialisation on either rank) left out.
        step_of = lambda t: next((j for j, (s0, s1) in enumerate(st) if s0 <= t <= s1 + 5_000_000), None)
        late = [i for i, (a, b) in enumerate(zip(r0, r1)) if b[0] - a[0] > 10_000_000]
        in_step = [step_of(r1[i][0]) for i in late]
        counted = [j for j in in_step if j not in (None, 0)]
        ok = len(counted) >= 1 and all(j % 10 == 9 for j in counted)
        row("straggler_collectives", ok and len(counted) == len(st) // 10,
            f"{len(late)} collectives with rank 1 over 10 ms late, in steps {in_step} of {len(st)}; "
            f"summary's longest waits: {[(x['collective'], round(x['wait_ns'] / 1e6, 1), x['last'][:7]) for x in c['slowest']]}")
    else:
        row("straggler_collectives", False, f"ranks in the dumps: {sorted(by_rank, key=str)}")
    flows = [e for e in trace["traceEvents"] if e.get("cat") == "collective"]
    ids = collections.Counter(e["bind_id"] for e in flows)
    row("collectives_linked", len(ids) == c["collectives"] and set(ids.values()) == {world},
        f"{len(ids)} flows over {len(flows)} slices in trace.json")


def align(path):
    """Each recording that is not the reference must carry the same-host line."""
    said = open(path).read()
    shifted = [l.strip() for l in said.splitlines() if "shifted by" in l]
    if not shifted:
        # What xpuprof said, without /usr/bin/time's report after it.
        own = said.split("\tCommand being timed")[0].strip().splitlines()
        print("CHECK align FAIL no recording shifted (only the reference merged?): "
              + " | ".join(l.strip()[:160] for l in own[-3:]))
    for l in shifted:
        m = re.search(r"\(([^)]*)\): shifted by (\d+) ns by the wall-clock pairs.*?one clock; the ends of the (\d+) "
                      r"collectives they share put it ([-+]?\d+) ns off \(within ±(\d+) ns\)", l)
        if not m:
            print(f"CHECK align FAIL not lined up as one clock: {l[:200]}")
            continue
        host, shift, n, off, bound = m[1], int(m[2]), int(m[3]), int(m[4]), int(m[5])
        ok = shift < 1000 and abs(off) <= bound and n > 0
        print(f"CHECK align {'PASS' if ok else 'FAIL'} {host}: kept {shift} ns apart (true 0: one clock); the ends "
              f"of {n} collectives put it {off:+} ns off, within the stated ±{bound} ns")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "dump":
        dump(sys.argv[2])
    elif len(sys.argv) >= 5 and sys.argv[1] == "check":
        check(sys.argv[2], sys.argv[3], sys.argv[4:])
    elif len(sys.argv) == 3 and sys.argv[1] == "align":
        align(sys.argv[2])
    else:
        sys.exit(__doc__)
