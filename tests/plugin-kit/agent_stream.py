#!/usr/bin/env python3
"""Checks the stream an in-target agent on xpuprof's C agent kit wrote (the example
examples/c-agent-acme, run with its dump directory): a hello that announces agent stacks, the
module map, the three launches of the application with one launch stack shared by all, whose
frames walk up inner <- middle <- outer <- main (the runtime's and the agent's frames cut from
its top), and a bye. The format is docs/agent-stream.md's (installed as
PREFIX/share/xpuprof/agent-stream.md); this reads it independently of xpuprof's own reader.

Usage: agent_stream.py DUMP_FILE APP_STDOUT   (APP_STDOUT: the app's "name 0xADDR" lines)
"""
import struct
import sys

MSG_HELLO, MSG_MODULES, MSG_LAUNCHES, MSG_BYE = 1, 2, 3, 8
ENTRY_STACK, ENTRY_LAUNCH = 1, 2
FLAG_AGENT_STACKS = 2


def messages(data):
    at = 0
    while len(data) - at >= 8:
        (n,) = struct.unpack_from("<I", data, at)
        if n < 4 or len(data) - at - 4 < n:
            break
        yield data[at + 4], data[at + 8 : at + 4 + n]
        at += 4 + n
    if at != len(data):
        sys.exit(f"the stream does not end on a message boundary ({len(data) - at} bytes left)")


def launch_entries(payload, stacks, calls, protocol):
    at = 8  # tid u32, pad u32
    while at < len(payload):
        kind = payload[at]
        if kind == ENTRY_STACK:
            # Protocol 1: the frame count is byte 1; protocol 2: a u16 at bytes 2-3.
            if protocol == 1:
                frames = payload[at + 1]
            else:
                (frames,) = struct.unpack_from("<H", payload, at + 2)
            h = struct.unpack_from("<Q", payload, at + 8)[0]
            stacks[h] = struct.unpack_from(f"<{frames}Q", payload, at + 16)
            at += 16 + 8 * frames
        elif kind == ENTRY_LAUNCH:
            _, domain, _, api, corr, result, _, h, _ = struct.unpack_from("<BBHIIIQQQ", payload, at)
            calls.append((domain, api, corr, result, h))
            at += 40
        else:
            sys.exit(f"unknown launch entry kind {kind}")


def main():
    data = open(sys.argv[1], "rb").read()
    addr = {}
    for line in open(sys.argv[2]):
        name, _, a = line.strip().partition(" ")
        addr[name] = int(a, 16)
    msgs = list(messages(data))
    types = [t for t, _ in msgs]
    if not msgs or types[0] != MSG_HELLO:
        sys.exit(f"the stream does not start with a hello: {types}")
    pid, version, protocol, flags = struct.unpack_from("<IIII", msgs[0][1])
    if not flags & FLAG_AGENT_STACKS:
        sys.exit(f"the hello does not announce agent stacks (flags {flags:#x})")
    if MSG_MODULES not in types or types[-1] != MSG_BYE:
        sys.exit(f"no module map, or no bye at the end: {types}")
    stacks, calls = {}, []
    for t, p in msgs:
        if t == MSG_LAUNCHES:
            launch_entries(p, stacks, calls, protocol)
    if [(d, a, c) for d, a, c, _, _ in calls] != [(1, 1, 1), (1, 1, 2), (1, 1, 3)]:
        sys.exit(f"expected three launches (domain 1, api 1, correlation 1..3): {calls}")
    hashes = {h for *_, h in calls}
    if len(hashes) != 1 or len(stacks) != 1 or hashes != set(stacks):
        sys.exit(f"expected one stack, sent once and named by every launch: {len(stacks)} stacks, launches name {hashes}")
    frames = next(iter(stacks.values()))
    within = lambda a, f: addr[f] < a < addr[f] + 256
    if not frames or not within(frames[0], "inner"):
        sys.exit(f"the launch stack does not start in inner (the runtime's and agent's frames cut): {[hex(f) for f in frames]}")
    for i, f in enumerate(["middle", "outer", "main"], 1):
        if len(frames) <= i or not within(frames[i], f):
            sys.exit(f"frame {i} of the launch stack is not in {f}: {[hex(f) for f in frames]}")
    print(f"agent stream: hello (pid {pid}, protocol {protocol}), {len(calls)} launches, their stack "
          f"inner <- middle <- outer <- main ({len(frames)} frames), bye")


main()
