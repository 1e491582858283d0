#!/usr/bin/env python3
"""Pools the per-round ratios of several `run-all.sh bench` runs.

Each run's logs.tar.gz, unpacked, has logs/bench-<metric>.txt with "round config value" lines.
Every round ran the configurations back to back, so a round's ratio compares runs taken seconds
apart; pooling the rounds of several runs (and VM instances) gives one median with its spread.

    scripts/gpu/pool-rounds.py [--config xpuprof] DIR [DIR ...]
"""
import argparse
import collections
import statistics

ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("--config", default="xpuprof", help="configuration to compare (default: xpuprof)")
ap.add_argument("dirs", nargs="+", help="unpacked logs.tar.gz folders")
a = ap.parse_args()

for metric, label in [("seconds", "total loop"), ("batch_median_us", "batch median"), ("batch_min_us", "fastest batch")]:
    vs_alone, vs_bare = [], []
    for d in a.dirs:
        t = collections.defaultdict(dict)
        for line in open(f"{d}/logs/bench-{metric}.txt"):
            r, c, v = line.split()
            if v != "nan" and float(v) >= 0:
                t[c][int(r)] = float(v)
        for r, v in t[a.config].items():
            if r in t["unprofiled"] and r in t["cupti_alone"]:
                vs_alone.append(v / t["cupti_alone"][r])
                vs_bare.append(v / t["unprofiled"][r])
    if not vs_alone:
        print(f"{label}: no rounds with {a.config}, unprofiled and cupti_alone")
        continue

    def q(v, p):
        return sorted(v)[int(p * (len(v) - 1))]

    print(f"{label:14s} {len(vs_alone)} rounds: {a.config} vs cupti_alone median {statistics.median(vs_alone):.3f} "
          f"(quartiles {q(vs_alone, .25):.2f}-{q(vs_alone, .75):.2f}); vs unprofiled median "
          f"{statistics.median(vs_bare):.3f} (quartiles {q(vs_bare, .25):.2f}-{q(vs_bare, .75):.2f})")
