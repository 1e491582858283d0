"""What a multi-rank recording holds about its collectives (scripts/gpu/parts/ranks.sh).

usage: check_ranks.py dump RECORDS.jsonl     the dump sink's records: processes and ranks, the
                                              collective kernels (names, streams, per process),
                                              NVTX ranges by domain, long off-CPU samples' stacks
"""
import collections
import json
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
        elif k == "Annotation":
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


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "dump":
        dump(sys.argv[2])
    else:
        sys.exit(__doc__)
