#!/usr/bin/env python3
"""What a user sees first (issue 18), checked on the default outputs of one xpuprof run:

  check_presentation.py OUT_DIR STDERR_FILE

- flamegraph.svg is the GPU view: GPU frames (kernels, copies, memsets) are the leaves of at
  least 99% of its width, and no frame of xpuprof's agent or of CUPTI is on any stack;
- flamegraph.cpu.svg, profile.gpu.folded and profile.cpu.folded sit beside them;
- kernel frames show short names (no template arguments or parameter lists), the tooltips the
  full names;
- summary.txt fits in 160 columns;
- the digest calls nothing a leak and has no bare "unmatched" count.
Prints PASS or FAIL with the reasons and the figures, exits 1 on FAIL.
"""
import os
import re
import sys

AGENT_FRAMES = re.compile(r"xpuprof_cupti_agent|xpuprof_agent_launch|libxpuprof_|libcupti\.so")


def gpu_view(out, problems):
    svg = open(os.path.join(out, "flamegraph.svg")).read()
    if "GPU time under the CPU stacks" not in svg:
        problems.append("flamegraph.svg is not the GPU view (title)")
    total = int(re.search(r'total_samples="(\d+)"', svg).group(1)) if "total_samples" in svg else 0
    frames = re.findall(r'<g><title>([^<]*)</title><rect [^>]*fg:w="(\d+)"', svg)
    gpu = sum(int(w) for t, w in frames if re.match(r"(kernel|copy|memset|device work) ", t))
    share = 100.0 * gpu / total if total else 0.0
    if share < 99.0:
        problems.append(f"GPU frames cover {share:.1f}% of flamegraph.svg")
    shown = re.findall(r">\[GPU\d*(?:_S\d+)?_Kernel\]([^<]*)</text>", svg)
    long_names = [s for s in shown if "<" in s or "(" in s]
    if long_names:
        problems.append(f"{len(long_names)} kernel frames show full names, e.g. {long_names[0][:80]}")
    return share, len(frames)


def main():
    out, err_file = sys.argv[1], sys.argv[2]
    problems = []
    for f in ["flamegraph.svg", "flamegraph.cpu.svg", "profile.folded", "profile.gpu.folded",
              "profile.cpu.folded", "summary.txt", "summary.json"]:
        if not os.path.exists(os.path.join(out, f)):
            problems.append(f"no {f}")
    if problems:
        print("FAIL: " + "; ".join(problems))
        sys.exit(1)
    share, nframes = gpu_view(out, problems)
    gpu_lines = open(os.path.join(out, "profile.gpu.folded")).read().splitlines()
    agent = [l for l in gpu_lines if AGENT_FRAMES.search(l.rsplit(" ", 1)[0])]
    if agent:
        problems.append(f"{len(agent)} GPU stacks hold agent/CUPTI frames, e.g. {agent[0][:160]}")
    wide = [l for l in open(os.path.join(out, "summary.txt")).read().splitlines() if len(l) > 160]
    if wide:
        problems.append(f"{len(wide)} summary.txt lines wider than 160 columns (widest {max(map(len, wide))})")
    err = open(err_file).read()
    digest = [l for l in err.splitlines() if l.startswith(("losses:", "device memory still allocated"))]
    if any("leak" in l for l in digest) or "unmatched device ops" in err:
        problems.append("the digest still says leaks/unmatched: " + " | ".join(digest))
    verdict = "PASS" if not problems else "FAIL: " + "; ".join(problems)
    print(f"{verdict} | gpu_view_share={share:.1f}% frames={nframes} gpu_stacks={len(gpu_lines)} "
          f"agent_stacks={len(agent)} summary_max_width="
          f"{max(map(len, open(os.path.join(out, 'summary.txt')).read().splitlines()))}")
    for l in digest:
        print("  " + l)
    sys.exit(0 if not problems else 1)


if __name__ == "__main__":
    main()
