"""What a process's own threads did, counted, not timed (issue 25's dormancy budget).

A workload that wants to know whether something it cannot see (a dormant profiler agent) costs it
anything counts its work per window of steps: `Counters` opens Linux perf counters
(`perf_event_open`, through ctypes) on every thread of this process, each thread separately
(`pid = tid`, `cpu = -1`), and `read()` sums them:

  instr_u   instructions retired in user mode (hardware counter; nearly deterministic for a loop
            that launches the same work each step, whatever the clock does)
  instr_k   instructions retired in the kernel (syscalls, page faults, futex waits)
  task_ns   CPU time of the threads (software counter task-clock, nanoseconds)
  ctx       context switches

Threads started later (an agent's threads after an attach) are added by `refresh()`, which a
workload calls between windows; a thread that exited keeps its final count (its descriptor stays
open). Counters the machine does not have (a VM without a virtual PMU has no hardware counters)
are left out and named in `missing`; a counter multiplexed by the kernel is scaled by its
enabled/running times. `thread_cpu()` reads each thread's CPU time and name from
/proc/self/task/*/stat, to say which threads (the agent's are named `xpuprof-*`) used the CPU.

Blocking synchronisation: `blocking_sync()` sets the primary context's scheduling flag to
CU_CTX_SCHED_BLOCKING_SYNC before the framework creates it, so a thread waiting for the GPU
sleeps instead of spinning; spinning would count instructions that depend on GPU time.
"""
import ctypes
import os
import struct

SYS_PERF_EVENT_OPEN = {"x86_64": 298, "aarch64": 241}.get(os.uname().machine)
PERF_TYPE_HARDWARE, PERF_TYPE_SOFTWARE = 0, 1
HW_INSTRUCTIONS = 1
SW_TASK_CLOCK, SW_CONTEXT_SWITCHES = 1, 3
# attr.flags bits: disabled(0) inherit(1) pinned(2) exclusive(3) exclude_user(4) exclude_kernel(5)
# exclude_hv(6)
EXCLUDE_USER, EXCLUDE_KERNEL, EXCLUDE_HV = 1 << 4, 1 << 5, 1 << 6
READ_TIMES = 1 | 2  # PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING
# name: (type, config, flags)
EVENTS = {
    "instr_u": (PERF_TYPE_HARDWARE, HW_INSTRUCTIONS, EXCLUDE_KERNEL | EXCLUDE_HV),
    "instr_k": (PERF_TYPE_HARDWARE, HW_INSTRUCTIONS, EXCLUDE_USER | EXCLUDE_HV),
    "task_ns": (PERF_TYPE_SOFTWARE, SW_TASK_CLOCK, 0),
    "ctx": (PERF_TYPE_SOFTWARE, SW_CONTEXT_SWITCHES, 0),
}

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def _open(tid, kind, config, flags):
    """One counter on thread `tid`; (fd, None) or (None, errno)."""
    # struct perf_event_attr, first version (PERF_ATTR_SIZE_VER0 = 64 bytes): type, size,
    # config, sample_period, sample_type, read_format, flags, wakeup_events, bp_type, config1.
    attr = struct.pack("=IIQQQQQIIQ", kind, 64, config, 0, 0, READ_TIMES, flags, 0, 0, 0)
    buf = ctypes.create_string_buffer(attr, 64)
    fd = _libc.syscall(SYS_PERF_EVENT_OPEN, buf, tid, -1, -1, 0)
    if fd < 0:
        return None, ctypes.get_errno()
    return fd, None


def _tids():
    try:
        return {int(t) for t in os.listdir("/proc/self/task")}
    except OSError:
        return set()


class Counters:
    """Per-thread perf counters of this process, summed by `read()`."""

    def __init__(self, events=tuple(EVENTS)):
        self.events = [e for e in events if e in EVENTS]
        self.fds = {}  # (tid, event) -> fd
        self.missing = {}  # event -> errno text (the first failure)
        self.threads = set()
        if SYS_PERF_EVENT_OPEN is None:
            self.missing = {e: f"no perf_event_open number for {os.uname().machine}" for e in self.events}
            self.events = []
        self.refresh()

    def refresh(self):
        """Opens counters on the threads started since the last call; returns how many."""
        new = _tids() - self.threads
        for tid in sorted(new):
            for e in list(self.events):
                fd, err = _open(tid, *EVENTS[e])
                if fd is None:
                    if err == 3:  # ESRCH: the thread exited meanwhile
                        continue
                    self.missing.setdefault(e, os.strerror(err))
                    self.events.remove(e)
                    continue
                self.fds[(tid, e)] = fd
        self.threads |= new
        return len(new)

    def read(self):
        """Sums of every counter over every thread counted so far."""
        out = {e: 0 for e in self.events}
        for (_, e), fd in self.fds.items():
            if e not in out:
                continue
            try:
                v, enabled, running = struct.unpack("=QQQ", os.read(fd, 24))
            except OSError:
                continue
            out[e] += v if running in (0, enabled) else int(v * enabled / running)
        return out

    def per_thread(self, event):
        """{tid: count} of one counter, for the threads it is open on."""
        out = {}
        for (tid, e), fd in self.fds.items():
            if e == event:
                try:
                    out[tid] = struct.unpack("=QQQ", os.read(fd, 24))[0]
                except OSError:
                    pass
        return out

    def close(self):
        for fd in self.fds.values():
            os.close(fd)
        self.fds = {}


def thread_cpu():
    """{tid: (name, CPU seconds)} of this process's threads (utime + stime of /proc/self/task)."""
    hz = os.sysconf("SC_CLK_TCK")
    out = {}
    for tid in _tids():
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                s = f.read()
        except OSError:
            continue
        name = s[s.index("(") + 1:s.rindex(")")]
        rest = s[s.rindex(")") + 2:].split()
        out[tid] = (name, (int(rest[11]) + int(rest[12])) / hz)  # fields 14 and 15: utime, stime
    return out


def agent_cpu(before, after, task_before=None, task_after=None):
    """CPU seconds that threads named `xpuprof*` used between two `thread_cpu()` readings, and
    their names; with `Counters.per_thread("task_ns")` readings taken at the same moments, from
    those (nanoseconds instead of clock ticks)."""
    names, used = set(), 0.0
    for tid, (name, s) in after.items():
        if name.startswith("xpuprof"):
            names.add(name)
            if task_after is not None and tid in task_after:
                used += (task_after[tid] - (task_before or {}).get(tid, 0)) / 1e9
            else:
                used += s - before.get(tid, (name, 0.0))[1]
    return used, sorted(names)


def blocking_sync(device=0):
    """Makes waits for the GPU sleep (CU_CTX_SCHED_BLOCKING_SYNC on the primary context of
    `device`); call before the framework touches CUDA. Returns None or why it could not."""
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError as e:
        return f"no libcuda.so.1: {e}"
    dev = ctypes.c_int()
    for call, args in (("cuInit", (0,)), ("cuDeviceGet", (ctypes.byref(dev), device)),
                       ("cuDevicePrimaryCtxSetFlags", None)):
        if args is None:
            args = (dev, 0x04)  # CU_CTX_SCHED_BLOCKING_SYNC
        r = getattr(cuda, call)(*args)
        if r != 0:
            return f"{call} returned CUDA error {r}"
    return None
