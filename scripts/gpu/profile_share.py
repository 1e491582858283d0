"""Where a workload's CPU goes to the profiler: reads a `profile.cpu.folded` written with
`[sink.folded] frames = "all"` and prints, for the main thread's timed steps and for the autograd
engine's threads, the share of on-CPU weight under the profiler's frames, split into the CUPTI
library's own work (frames of libcupti and below, with no xpuprof frame) and the agent's, by the
agent's first four frames.

usage: profile_share.py profile.cpu.folded [TOP]
"""
import collections
import re
import sys

OWN = re.compile(r"xpuprof|libcupti")
GROUPS = {
    "main thread, timed steps": lambda s: "timed_window" in s,
    "autograd engine threads": lambda s: "Engine::thread_main" in s,
}


def main():
    path = sys.argv[1]
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 12
    total, prof, cupti, parts = (collections.Counter() for _ in range(4))
    by_part = {g: collections.Counter() for g in GROUPS}
    for ln in open(path):
        stack, _, n = ln.rstrip("\n").rpartition(" ")
        if not n.isdigit():
            continue
        n, frames = int(n), stack.split(";")
        for g, test in GROUPS.items():
            if not test(stack):
                continue
            total[g] += n
            hits = [f for f in frames if OWN.search(f)]
            if not hits:
                continue
            prof[g] += n
            agent = [f for f in hits if "xpuprof" in f]
            if agent:
                by_part[g][" > ".join(f[:64] for f in agent[1:5]) or agent[0]] += n
            else:
                cupti[g] += n
    for g in GROUPS:
        t = max(total[g], 1)
        print(f"== {g}: profiler {100 * prof[g] / t:.1f}% of {total[g]} "
              f"(CUPTI's own {100 * cupti[g] / t:.1f}%, agent {100 * (prof[g] - cupti[g]) / t:.1f}%)")
        for k, v in by_part[g].most_common(top):
            print(f"  {100 * v / t:5.2f}%  {k}")


if __name__ == "__main__":
    main()
