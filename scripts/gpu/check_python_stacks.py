#!/usr/bin/env python3
"""Checks the Python frames of a `xpuprof --source cupti --sink folded` run of a Python program.

usage: check_python_stacks.py OUT_DIR SCRIPT.py [--min PCT] [--call-marker TEXT] [--cpu]

Reads OUT_DIR/profile.folded (folded values: GPU time; with --cpu: OUT_DIR/profile.cpu.folded,
the eBPF source's on-CPU samples, and the percentages are of CPU time) and prints one line:
PASS/FAIL, then
- py=X%: GPU time under a stack that has a frame `function (SCRIPT.py:LINE)` of the script;
- rooted=Y%: GPU time whose stack starts at a thread start (_start, start_thread, clone3, __clone);
- both=Z%: both at once (what must reach --min, default 95);
- nopy=W% (top roots): GPU time without any Python frame, by the root..5 frames of its stack;
- unrooted with Python frames (top roots): GPU time with Python frames whose stack does not
  start at a thread start, by its outermost frame and depth (a walk cut at `max_depth`, or one
  that stopped early);
- main=M% of T µs: the same `both` figure over the GPU time launched from threads other than
  autograd's engine threads (the program's own threads);
- autograd=A% of T µs: of the GPU time autograd's engine threads (pt_autograd_N) launched (the
  backward kernels), the share under the Python stack of the backward() call they ran for (the
  agent's `[autograd engine thread, running the backward() above]` marker, below the caller's
  Python frames, above the engine thread's own native stack), and unattributed=U%. An engine
  thread's native stack counts as rooted when it starts at a thread start or inside libc (a
  thread's first frame is libc's clone3; a libc without symbols names it libc.so.6+0x...);
- with --call-marker TEXT: triton=T% of the Triton kernels' GPU time sits under the script line
  that contains TEXT;
- with --cpu: pythreads=P% of T µs: of the on-CPU time of the threads that run Python (stacks
  rooted at `_start`, the main thread, or holding any Python frame), the share under a frame of
  the script and rooted (worker threads that run no Python, such as OpenBLAS/OpenMP/CUDA
  threads, are outside it and shown in nopy);
- with --cpu: script=S% of T µs: the same share of that time while the script runs, that is
  without the interpreter's start-up (`Py_InitializeFromConfig`: no line of the script has run
  yet) and shutdown (`Py_FinalizeEx`, `exit`: libraries' destructors after the script returned),
  whose shares are shown as startup= and shutdown=; that is what must reach --min there.
"""
import collections
import re
import sys

ROOTS = ("_start", "start_thread", "clone3", "__clone", "__clone3", "thread_start")
STARTUP = ("Py_InitializeFromConfig", "Py_InitializeEx", "Py_Initialize", "pymain_init")
SHUTDOWN = ("Py_FinalizeEx", "Py_Finalize", "exit")
AUTOGRAD = "[autograd engine thread, running the backward() above]"
ENGINE = re.compile(r"autograd::(python::Python)?Engine::thread_(init|main)")
LIBC = re.compile(r"^libc\.so[.\d]*\+0x[0-9a-f]+$")


def main():
    args = sys.argv[1:]
    out, script = args[0], args[1]
    minimum = float(args[args.index("--min") + 1]) if "--min" in args else 95.0
    marker = args[args.index("--call-marker") + 1] if "--call-marker" in args else None
    cpu = "--cpu" in args
    call_line = None
    if marker:
        for i, text in enumerate(open(script), 1):
            if marker in text:
                call_line = i
    name = script.rsplit("/", 1)[-1]
    own = re.compile(r"\(([^()]*/)?" + re.escape(name) + r":\d+\)")
    any_py = re.compile(r"\([^()]*\.py:\d+\)")
    total = py = rooted = both = triton = triton_at = 0
    main_total = main_both = engine_total = engine_attributed = engine_both = 0
    py_threads = py_threads_both = startup = shutdown = 0
    nopy = collections.Counter()
    unrooted = collections.Counter()
    for line in open(f"{out}/profile.cpu.folded" if cpu else f"{out}/profile.folded", errors="replace"):
        stack, _, value = line.rstrip("\n").rpartition(" ")
        if not value.isdigit():
            continue
        if cpu and ("[GPU_" in stack or stack.startswith("[off-cpu]")):
            continue
        if not cpu and "[GPU_" not in stack:
            continue
        v = int(value)
        frames = stack.split(";")
        total += v
        has_py = bool(own.search(stack))
        is_rooted = frames[0] in ROOTS
        if AUTOGRAD in frames:
            native = frames[frames.index(AUTOGRAD) + 1:]
            is_rooted = native[0] in ROOTS or bool(LIBC.match(native[0]))
            engine_total += v
            engine_attributed += v
            engine_both += v * (has_py and is_rooted)
        elif ENGINE.search(stack):
            engine_total += v
        else:
            main_total += v
            main_both += v * (has_py and is_rooted)
        if frames[0] == "_start" or any_py.search(stack):
            py_threads += v
            py_threads_both += v * (has_py and is_rooted)
            # The interpreter's own start-up and shutdown, in its first frames (the main thread).
            if any(f in STARTUP for f in frames[:8]):
                startup += v
            elif any(f in SHUTDOWN for f in frames[:8]):
                shutdown += v
        py += v * has_py
        rooted += v * is_rooted
        both += v * (has_py and is_rooted)
        if not any_py.search(stack):
            nopy[";".join(frames[:5])] += v
        elif not is_rooted:
            unrooted[f"{frames[0][:60]} ({len(frames)} frames)"] += v
        if "[GPU_Kernel]triton" in stack:
            triton += v
            if call_line and f"{name}:{call_line})" in stack:
                triton_at += v
    if total == 0:
        print("FAIL: no " + ("on-CPU sample" if cpu else "GPU time") + " in the folded profile")
        return 1
    pct = lambda x: 100.0 * x / total  # noqa: E731
    parts = [f"py={pct(py):.1f}%", f"rooted={pct(rooted):.1f}%", f"both={pct(both):.1f}%"]
    nopy_total = sum(nopy.values())
    if nopy_total:
        top = ", ".join(f"{k} {100.0 * v / total:.1f}%" for k, v in nopy.most_common(3))
        parts.append(f"nopy={pct(nopy_total):.1f}% ({top})")
    if unrooted:
        top = ", ".join(f"{k} {100.0 * v / total:.1f}%" for k, v in unrooted.most_common(3))
        parts.append(f"unrooted with Python frames: {top}")
    share = lambda x, of: 100.0 * x / of if of else 0.0  # noqa: E731
    parts.append(f"main={share(main_both, main_total):.1f}% of {main_total} µs")
    if engine_total:
        parts.append(
            f"autograd={share(engine_attributed, engine_total):.1f}% of {engine_total} µs under their backward() "
            f"(rooted+py {share(engine_both, engine_total):.1f}%, unattributed "
            f"{share(engine_total - engine_attributed, engine_total):.1f}%)"
        )
    ok = pct(both) >= minimum
    if cpu:
        parts.append(f"pythreads={share(py_threads_both, py_threads):.1f}% of {py_threads} µs")
        running = py_threads - startup - shutdown
        parts.append(
            f"startup={share(startup, py_threads):.1f}% shutdown={share(shutdown, py_threads):.1f}% "
            f"script={share(py_threads_both, running):.1f}% of {running} µs"
        )
        ok = share(py_threads_both, running) >= minimum
    if marker:
        t = 100.0 * triton_at / triton if triton else 0.0
        parts.append(f"triton={t:.1f}% of {triton} under line {call_line}")
        ok = ok and triton > 0 and t >= minimum
    print(("PASS " if ok else "FAIL ") + " ".join(parts))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
