#!/usr/bin/env python3
"""Python frames in eBPF CPU samples: what they cost, measured side by side (needs root).

    sudo scripts/bench-ebpf-python.py [--xpuprof target/debug/xpuprof] [--rounds 5]

Runs tests/workloads/python/calls.py (pure-Python, CPU-bound, fixed work) in interleaved rounds:
plain, then under `xpuprof --source ebpf` at 99 Hz with `python = "off"` and `"auto"`, and at
999 Hz with both (the slope between 99 and 999 Hz gives the host's CPU per sample without its
fixed start-up cost). Where CPython 3.12 is installed, the same with `-X perf` (its perf
trampolines, named through /tmp/perf-PID.map) against BPF reading. Prints per configuration:
the workload's wall and CPU time as medians and as the median of per-round ratios to plain, the
BPF program's run time per sample (kernel.bpf_stats_enabled, set for the run and restored), and
the host's CPU per sample (xpuprof's CPU: its children's rusage minus the plain run's).
"""
import argparse
import glob
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CALLS = os.path.join(ROOT, "tests/workloads/python/calls.py")


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


class BpfStats:
    """Polls the run time and count of the sampling program (the perf_event BPF program that
    xpuprof holds a descriptor of: /proc/PID/fdinfo shows them with kernel.bpf_stats_enabled)."""

    PERF_EVENT_PROG = "7"  # BPF_PROG_TYPE_PERF_EVENT

    def __init__(self, pid):
        self.pid, self.last, self.stop = pid, None, False
        self.thread = threading.Thread(target=self.poll, daemon=True)
        self.thread.start()

    def poll(self):
        while not self.stop:
            try:
                for fd in os.listdir(f"/proc/{self.pid}/fd"):
                    if os.readlink(f"/proc/{self.pid}/fd/{fd}") != "anon_inode:bpf-prog":
                        continue
                    with open(f"/proc/{self.pid}/fdinfo/{fd}") as f:
                        info = dict(line.split(":", 1) for line in f.read().splitlines() if ":" in line)
                    if info.get("prog_type", "").strip() == self.PERF_EVENT_PROG and "run_cnt" in info:
                        cnt = int(info["run_cnt"])
                        if cnt:
                            self.last = (int(info["run_time_ns"]), cnt)
            except OSError:
                pass
            time.sleep(0.1)

    def finish(self):
        self.stop = True
        self.thread.join()
        return self.last


def run(cfg, args):
    """One run: (wall ns, CPU ns of the workload, xpuprof's own CPU s, samples, BPF ns/sample,
    CPU s of everything)."""
    python, extra, hz, py = cfg
    out = tempfile.mkdtemp(prefix="bench-ebpf-python-")
    result = os.path.join(out, "result")
    env = dict(os.environ, WORKLOAD_RESULT=result)
    target = [python, *extra, CALLS, "cpu", str(args.work_rounds), str(args.n)]
    before = children_cpu()
    samples, bpf, host = 0, None, 0.0
    if hz is None:
        subprocess.run(target, env=env, check=True)
    else:
        toml = os.path.join(out, "xpuprof.toml")
        with open(toml, "w") as f:
            f.write(f'[source.ebpf]\nsample_hz = {hz}\npython = "{py}"\n')
        cmd = [args.xpuprof, "--source", "ebpf", "--sink", "folded", "-c", toml, "-o", out + "/o", "--", *target]
        p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        stats = BpfStats(p.pid)
        _, err = p.communicate()
        if p.returncode != 0:
            sys.exit(f"xpuprof failed: {cmd}\n{err}")
        bpf = stats.finish()
        # "xpuprof's own CPU time: 0.21s while the target ran, 0.01s after"
        m = re.search(r"own CPU time: ([0-9.]+)s while the target ran, ([0-9.]+)s after", err)
        host = float(m.group(1)) + float(m.group(2)) if m else float("nan")
        with open(out + "/o/profile.folded") as f:
            us = sum(int(line.rsplit(" ", 1)[1]) for line in f if not line.startswith("[off-cpu]"))
        samples = us / (1e6 / hz)
    total = children_cpu() - before
    with open(result) as f:
        wall, cpu = (float(x) for x in f.read().split())
    shutil.rmtree(out, ignore_errors=True)
    # The program also runs (and returns at once) on every CPU's ticks of other processes: its
    # whole run time is charged to the samples recorded.
    return wall, cpu, host, samples, (bpf[0] / samples if bpf and samples else None), total


def find_python312():
    """A CPython 3.12 that runs (pyenv's shims do not, outside a pyenv-selected directory)."""
    for p in [shutil.which("python3.12") or "", *sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.12*/bin/python3.12")))]:
        if p and subprocess.run([p, "-c", "pass"], capture_output=True).returncode == 0:
            return p
    return ""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--xpuprof", default=os.path.join(ROOT, "target/debug/xpuprof"))
    ap.add_argument("--python", default="/usr/bin/python3.11")
    ap.add_argument("--python312", default=find_python312())
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--work-rounds", type=int, default=8)
    ap.add_argument("--n", type=int, default=400_000)
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("needs root (the eBPF source and kernel.bpf_stats_enabled)")
    py = args.python
    cfgs = {
        "plain": (py, [], None, None),
        "99 Hz, python=off": (py, [], 99, "off"),
        "99 Hz, python=auto": (py, [], 99, "auto"),
        "999 Hz, python=off": (py, [], 999, "off"),
        "999 Hz, python=auto": (py, [], 999, "auto"),
    }
    if args.python312:
        p12 = args.python312
        cfgs.update({
            "3.12 plain": (p12, [], None, None),
            "3.12 -X perf plain": (p12, ["-X", "perf"], None, None),
            "3.12 -X perf, 99 Hz, python=off": (p12, ["-X", "perf"], 99, "off"),
            "3.12 99 Hz, python=auto": (p12, [], 99, "auto"),
            "3.12 -X perf, 999 Hz, python=off": (p12, ["-X", "perf"], 999, "off"),
            "3.12 999 Hz, python=auto": (p12, [], 999, "auto"),
        })
    with open("/proc/sys/kernel/bpf_stats_enabled") as f:
        old = f.read().strip()
    rows = {k: [] for k in cfgs}
    try:
        with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
            f.write("1")
        for r in range(args.rounds):
            for name, cfg in cfgs.items():
                rows[name].append(run(cfg, args))
            print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    finally:
        with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
            f.write(old)
    med = statistics.median
    print(f"calls.py cpu {args.work_rounds} {args.n}, {args.rounds} interleaved rounds, medians; xpuprof = {args.xpuprof}")
    print(f"{'configuration':34} {'wall s':>7} {'ratio':>6} {'CPU s':>7} {'ratio':>6} {'samples':>8} {'BPF us/sample':>13} {'xpuprof CPU s':>13}")
    for name, rs in rows.items():
        base = rows["3.12 plain" if name.startswith("3.12") else "plain"]
        wr = med([r[0] / b[0] for r, b in zip(rs, base)])
        cr = med([r[1] / b[1] for r, b in zip(rs, base)])
        host = med([r[2] for r in rs])
        bpf = [r[4] for r in rs if r[4] is not None]
        bpf_s = f"{med(bpf) / 1000:.2f}" if bpf else "-"
        print(f"{name:34} {med([r[0] for r in rs]) / 1e9:7.3f} {wr:6.3f} {med([r[1] for r in rs]) / 1e9:7.3f} {cr:6.3f} "
              f"{med([r[3] for r in rs]):8.0f} {bpf_s:>13} {host:13.2f}")
    # xpuprof's CPU per sample: the slope between 99 and 999 Hz (start-up costs cancel).
    pairs = [
        ("python=off", "99 Hz, python=off", "999 Hz, python=off"),
        ("python=auto", "99 Hz, python=auto", "999 Hz, python=auto"),
        ("3.12 -X perf, python=off", "3.12 -X perf, 99 Hz, python=off", "3.12 -X perf, 999 Hz, python=off"),
        ("3.12 python=auto", "3.12 99 Hz, python=auto", "3.12 999 Hz, python=auto"),
    ]
    for label, lo, hi in pairs:
        if lo in rows and hi in rows:
            d_cpu = med([h[2] - l[2] for h, l in zip(rows[hi], rows[lo])])
            d_n = med([h[3] - l[3] for h, l in zip(rows[hi], rows[lo])])
            if d_n > 0:
                print(f"xpuprof CPU per sample, {label}: {d_cpu / d_n * 1e6:.0f} us (slope 99 -> 999 Hz)")

if __name__ == "__main__":
    main()
