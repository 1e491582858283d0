"""Checks an xpuprof output directory of a workload.py run.

usage: check_e2e.py OUT_DIR STDOUT_FILE [--devices D] [--cpu]

Asserts: every process that printed WORKLOAD has kernels in trace.json under its own pid; every
kernel has a launch stack (no `[unknown launch site]` GPU frames in profile.folded); kernels sit
under libtorch/libcudart/cuBLAS frames; with --devices D, kernels on D devices and per-device
GPU frames (`[GPU<i>_Kernel]`) in the folded output; with --cpu, CPU samples present. Prints one
PASS/FAIL line with the figures.
"""
import json
import re
import sys


def main():
    out, stdout = sys.argv[1], sys.argv[2]
    devices = int(sys.argv[sys.argv.index("--devices") + 1]) if "--devices" in sys.argv else 1
    want_cpu = "--cpu" in sys.argv
    pids = {int(m) for m in re.findall(r"WORKLOAD pid=(\d+)", open(stdout).read())}
    ev = json.load(open(f"{out}/trace.json"))
    ev = ev.get("traceEvents", ev) if isinstance(ev, dict) else ev
    kernels = [e for e in ev if e.get("cat") == "kernel"]
    # A kernel's launching process: the API call at its arrow's start (same bind_id, flow_out),
    # or `args.pid` for a kernel without an arrow.
    launcher = {e["bind_id"]: e.get("pid") for e in ev if e.get("flow_out") and "bind_id" in e}
    kpids = {e.get("args", {}).get("pid", launcher.get(e.get("bind_id"))) for e in kernels}
    kdevs = {e.get("pid") for e in kernels}
    folded = open(f"{out}/profile.folded").read().splitlines()
    gpu = [l for l in folded if "_Kernel]" in l]
    unknown = [l for l in gpu if "[unknown launch site]" in l]
    lib = [l for l in gpu if re.search(r"libtorch|libcudart|cudaLaunch|cuLaunch|cublas|at::", l)]
    cpu = [l for l in folded if "_Kernel]" not in l and "_Memcpy]" not in l and "_Memset]" not in l]
    problems = []
    if not pids:
        problems.append("no WORKLOAD line: the workload did not finish")
    missing = pids - kpids
    if missing:
        problems.append(f"processes without kernels: {sorted(missing)} (kernel pids {sorted(p for p in kpids if p)})")
    if unknown:
        problems.append(f"{len(unknown)} folded GPU stacks without launch site")
    if gpu and len(lib) < len(gpu) * 0.9:
        problems.append(f"only {len(lib)}/{len(gpu)} GPU stacks show libtorch/libcudart frames")
    if len(kdevs) < devices:
        problems.append(f"kernels on {len(kdevs)} device tracks, expected {devices}")
    if devices > 1:
        for d in range(devices):
            if not any(f"[GPU{d}_Kernel]" in l for l in gpu):
                problems.append(f"no [GPU{d}_Kernel] frames")
    if want_cpu and not cpu:
        problems.append("no CPU samples")
    verdict = "PASS" if not problems else "FAIL: " + "; ".join(problems)
    print(f"{verdict} | processes={len(pids)} kernels={len(kernels)} device_tracks={len(kdevs)} "
          f"gpu_stacks={len(gpu)} cpu_stacks={len(cpu)}")
    sys.exit(0 if not problems else 1)


if __name__ == "__main__":
    main()
