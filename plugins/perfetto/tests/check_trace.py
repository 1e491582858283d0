#!/usr/bin/env python3
"""Checks a trace.perfetto-trace with Perfetto's official protos (the `perfetto` PyPI package's
perfetto_trace_pb2) and prints a JSON summary for the Rust tests.

`check_trace.py FILE` checks and prints the summary; `check_trace.py --dump FILE` prints every
packet in text format (the golden files); `check_trace.py --events FILE` checks and prints what the
trace says, one line per event in file order, whatever its encoding: absolute timestamps (the
incremental clocks applied), track names, event types, names, arguments and flows with interned
ids resolved, CPU samples with their callstacks' function names.

Checks, failing with a message naming the packet:
- the file decodes as perfetto.protos.Trace; compressed_packets bundles inflate and decode;
- every interned id (event name, annotation name and string value, callstack, frame, function name, mapping,
  build id, mapping path) is defined on the packet's sequence, after its last
  SEQ_INCREMENTAL_STATE_CLEARED, before it is used; no packet needing incremental state comes
  before its sequence's first clear;
- every track an event uses, and every parent track, has a descriptor written before the event;
- clock snapshots never go back in time on one sequence (trace processor rejects those);
- slices begin and end in order on each track (nesting); a v2 flow (`flow_ids`) starts at the
  earliest event naming it and each later event naming it continues it (trace processor's
  `FlowTracker::Begin`, then `Step`: a chain through a collective's slices on every rank), it ends
  at most once (`terminating_flow_ids`), never before it starts, and a flow neither continued nor
  ended is an error (an arrow to nowhere); a launch's flow (`legacy_event.bind_id`)
  starts once (`FLOW_OUT`) and each of its ends (`FLOW_IN`, several for a graph launch) comes no
  earlier than its start;
- a slice's `callstack_iid` resolves to interned frames and function names on its sequence.

The summary also says what a user sees: how many API slices (slices on thread tracks) carry a
launch stack, where flows start and end (thread or device tracks, and whether the start carries
a stack), and `lanes_without_overlap`: slices on a stream's overlap lane N that overlap nothing on
lane N - 1 (a lane that real overlap did not need).
"""
import bisect
import collections
import itertools
import re
import json
import sys
import zlib

from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

CLEARED = pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
NEEDS = pb.TracePacket.SEQ_NEEDS_INCREMENTAL_STATE
INCREMENTAL = 64
TE = pb.TrackEvent


def packets(path):
    trace = pb.Trace()
    with open(path, "rb") as f:
        trace.ParseFromString(f.read())
    for p in trace.packet:
        if p.HasField("compressed_packets"):
            inner = pb.Trace()
            inner.ParseFromString(zlib.decompress(p.compressed_packets))
            for q in inner.packet:
                assert not q.HasField("compressed_packets"), "nested bundle"
                yield q
        else:
            yield p


class Seq:
    def __init__(self):
        self.valid = False
        self.interned = collections.defaultdict(dict)
        self.defaults = None
        self.clock = None
        self.snapshots = {}

    def clear(self):
        self.valid = True
        self.interned = collections.defaultdict(dict)
        self.defaults = None
        self.clock = None


def fail(i, msg):
    sys.exit(f"packet {i}: {msg}")


def main(path, show_events=False):
    seqs = collections.defaultdict(Seq)
    said = []  # what the trace says, for --events
    tracks = {}
    events = []  # (ts, order, track, type, name, flow_ids, terminating, bind, stack)
    args = collections.Counter()
    samples = 0
    callstack_frames = collections.Counter()
    count = clears = 0
    for i, p in enumerate(packets(path)):
        count += 1
        seq = seqs[p.trusted_packet_sequence_id]
        if p.sequence_flags & CLEARED or p.incremental_state_cleared:
            seq.clear()
            clears += 1
        if p.sequence_flags & NEEDS and not seq.valid:
            fail(i, f"needs incremental state before any clear on sequence {p.trusted_packet_sequence_id}")
        if p.HasField("trace_packet_defaults"):
            seq.defaults = p.trace_packet_defaults
        if p.HasField("interned_data"):
            intern(i, seq, p.interned_data)
        if p.HasField("clock_snapshot"):
            for c in p.clock_snapshot.clocks:
                # Trace processor refuses snapshots that go back in time on one sequence.
                previous = seq.snapshots.get(c.clock_id, 0)
                if c.timestamp < previous:
                    fail(i, f"clock {c.clock_id} goes back from {previous} to {c.timestamp}")
                seq.snapshots[c.clock_id] = c.timestamp
                if c.clock_id == INCREMENTAL:
                    assert c.is_incremental
                    seq.clock = c.timestamp
            continue
        if p.HasField("track_descriptor"):
            d = p.track_descriptor
            if d.HasField("parent_uuid") and d.parent_uuid not in tracks:
                fail(i, f"track {d.uuid:#x} has an undescribed parent {d.parent_uuid:#x}")
            tracks[d.uuid] = d
            continue
        ts = timestamp(i, p, seq)
        if p.HasField("track_event"):
            e = p.track_event
            track = e.track_uuid if e.HasField("track_uuid") else (
                seq.defaults.track_event_defaults.track_uuid if seq.defaults else None)
            if track not in tracks:
                fail(i, f"event on undescribed track {track}")
            name = e.name
            if e.HasField("name_iid"):
                name = lookup(i, seq, "event_names", e.name_iid).name
            shown = []
            for a in e.debug_annotations:
                key = lookup(i, seq, "debug_annotation_names", a.name_iid).name if a.HasField("name_iid") else a.name
                if a.HasField("string_value_iid"):
                    value = lookup(i, seq, "debug_annotation_string_values", a.string_value_iid).str.decode()
                    args[f"{key}={value}"] += 1
                else:
                    value = a.uint_value if a.HasField("uint_value") else a.int_value
                args[key] += 1
                shown.append(f"{key}={value}")
            bind = None
            if e.HasField("legacy_event") and e.legacy_event.HasField("bind_id"):
                bind = (e.legacy_event.bind_id, e.legacy_event.flow_direction)
            stack = callstack(i, seq, e.callstack_iid) if e.HasField("callstack_iid") else None
            events.append((ts, i, track, e.type, name, list(e.flow_ids), list(e.terminating_flow_ids),
                           bind, stack))
            if show_events:
                value = f" value={e.double_counter_value}" if e.HasField("double_counter_value") else ""
                flow = ""
                if bind:
                    flow = f" {'flow_out' if bind[1] == TE.LegacyEvent.FLOW_OUT else 'flow_in'}={bind[0]}"
                shown_stack = f" stack={stack}" if stack is not None else ""
                said.append(f"{ts} {track_name(tracks, track)!r} {TE.Type.Name(e.type)} {name!r}"
                            f" args={shown} flows={list(e.flow_ids)}->{list(e.terminating_flow_ids)}"
                            f"{flow}{value}{shown_stack}")
        elif p.HasField("perf_sample"):
            s = p.perf_sample
            functions = []
            if s.HasField("callstack_iid"):
                functions = callstack(i, seq, s.callstack_iid)
                callstack_frames[len(functions)] += 1
            samples += 1
            if show_events:
                said.append(f"{ts} sample pid={s.pid} tid={s.tid} stack={functions}")
    summary = summarize(tracks, events, samples, count, len(seqs))
    if show_events:
        print("\n".join(said))
        return
    summary["clears"] = clears
    summary["args"] = args
    print(json.dumps(summary))


def timestamp(i, p, seq):
    if not p.HasField("timestamp"):
        return None
    clock = p.timestamp_clock_id or (seq.defaults.timestamp_clock_id if seq.defaults else 0)
    if clock == INCREMENTAL:
        if seq.clock is None:
            fail(i, "incremental timestamp without a clock snapshot on its sequence")
        seq.clock += p.timestamp
        return seq.clock
    if clock not in (0, 3):
        fail(i, f"unexpected clock {clock}")
    return p.timestamp


def callstack(i, seq, iid):
    """The function names of interned callstack `iid`, root first."""
    cs = lookup(i, seq, "callstacks", iid)
    functions = []
    for f in cs.frame_ids:
        frame = lookup(i, seq, "frames", f)
        functions.append(lookup(i, seq, "function_names", frame.function_name_id).str.decode())
    if not functions:
        fail(i, f"callstack {iid} has no frames")
    return functions


def lookup(i, seq, table, iid):
    entry = seq.interned[table].get(iid)
    if entry is None:
        fail(i, f"{table} iid {iid} used before it was defined on its sequence")
    return entry


def intern(i, seq, d):
    for table in ("event_names", "debug_annotation_names", "debug_annotation_string_values",
                  "function_names", "build_ids", "mapping_paths"):
        for e in getattr(d, table):
            seq.interned[table][e.iid] = e
    for m in d.mappings:
        if m.HasField("build_id"):
            lookup(i, seq, "build_ids", m.build_id)
        for s in m.path_string_ids:
            lookup(i, seq, "mapping_paths", s)
        seq.interned["mappings"][m.iid] = m
    for f in d.frames:
        lookup(i, seq, "function_names", f.function_name_id)
        if f.mapping_id:
            lookup(i, seq, "mappings", f.mapping_id)
        seq.interned["frames"][f.iid] = f
    for c in d.callstacks:
        for f in c.frame_ids:
            lookup(i, seq, "frames", f)
        seq.interned["callstacks"][c.iid] = c


def track_name(tracks, uuid):
    d = tracks[uuid]
    if d.HasField("thread"):
        return d.thread.thread_name
    if d.HasField("process"):
        return d.process.process_name
    return d.name


def summarize(tracks, events, samples, count, sequences):
    events.sort(key=lambda e: (e[0], e[1]))
    open_slices = collections.defaultdict(list)
    intervals = collections.defaultdict(list)  # track -> [(start, end)]
    slices = collections.Counter()
    names = collections.Counter()
    flow_start, flow_end, flow_steps = {}, {}, collections.Counter()
    launch_start, launch_ends = {}, 0
    flow_places = collections.Counter()
    api = collections.Counter()
    instants = collections.Counter()
    for ts, i, track, typ, name, flows, terminating, bind, stack in events:
        if typ == TE.TYPE_SLICE_BEGIN:
            open_slices[track].append((ts, i, name))
            slices[track_name(tracks, track)] += 1
            names[name] += 1
            if tracks[track].HasField("thread"):
                api["slices"] += 1
                api["with_stack"] += stack is not None
        elif typ == TE.TYPE_SLICE_END:
            if not open_slices[track]:
                fail(i, f"slice end without a begin on {track_name(tracks, track)}")
            start = open_slices[track].pop()
            intervals[track].append((start[0], ts, start[1]))
        elif typ == TE.TYPE_INSTANT:
            instants[name] += 1
        for f in flows:
            if f in flow_end:
                fail(i, f"flow {f} continues after its end")
            if f in flow_start:
                flow_steps[f] += 1
            else:
                flow_start[f] = ts
        for f in terminating:
            if f not in flow_start:
                fail(i, f"flow {f} ends before it starts")
            if f in flow_end:
                fail(i, f"flow {f} ends twice")
            flow_end[f] = ts
        if bind and bind[1] == TE.LegacyEvent.FLOW_OUT:
            if bind[0] in launch_start:
                fail(i, f"launch flow {bind[0]} starts twice")
            launch_start[bind[0]] = (track, stack is not None)
        elif bind and bind[1] == TE.LegacyEvent.FLOW_IN:
            if bind[0] not in launch_start:
                fail(i, f"launch flow {bind[0]} ends before it starts")
            launch_ends += 1
            start_track, with_stack = launch_start[bind[0]]
            src = "thread" if tracks[start_track].HasField("thread") else "other"
            dst = "device" if not tracks[track].HasField("thread") else "thread"
            flow_places[f"{src}{' with stack' if with_stack else ''} -> {dst}"] += 1
        elif bind:
            fail(i, f"flow {bind[0]} without a direction")
    for track, stack in open_slices.items():
        if stack:
            fail(stack[-1][1], f"slice {stack[-1][2]} on {track_name(tracks, track)} never ends")
    dangling = set(flow_start) - set(flow_end) - set(flow_steps)
    if dangling:
        sys.exit(f"{len(dangling)} flows never end or continue, e.g. {sorted(dangling)[:5]}")
    kinds = collections.Counter()
    for d in tracks.values():
        kinds["process" if d.HasField("process") else "thread" if d.HasField("thread")
              else "counter" if d.HasField("counter") else "other"] += 1
    return {
        "packets": count,
        "sequences": sequences,
        "tracks": {track_name(tracks, u): ("counter" if d.HasField("counter") else "track")
                   for u, d in tracks.items()},
        "track_kinds": kinds,
        "slices_per_track": slices,
        "slice_names": names,
        "instants": instants,
        "flows": len(flow_end) + launch_ends,
        "flow_chains": len(flow_steps),
        "flow_chain_steps": sum(flow_steps.values()),
        "flow_places": flow_places,
        "api_slices": api["slices"],
        "api_slices_with_stack": api["with_stack"],
        "lanes": lanes(tracks, intervals),
        "lanes_without_overlap": lanes_without_overlap(tracks, intervals),
        "samples": samples,
        "counter_values": sum(1 for e in events if e[3] == TE.TYPE_COUNTER),
    }


LANE = re.compile(r"^(.*) \(overlap (\d+)\)$")


def lane_of(tracks, uuid):
    """(parent, base name, lane) of a track: lane 0 for a track without "(overlap N)"."""
    d = tracks[uuid]
    m = LANE.match(d.name)
    base, lane = (m.group(1), int(m.group(2))) if m else (d.name, 0)
    return (d.parent_uuid, base), lane


def lanes(tracks, intervals):
    """Lanes of each timeline with slices, by its name: {"stream 7": 2}."""
    out = collections.Counter()
    for uuid in intervals:
        if tracks[uuid].HasField("thread") or tracks[uuid].HasField("process"):
            continue
        (_, base), lane = lane_of(tracks, uuid)
        out[base] = max(out[base], lane + 1)
    return out


def lanes_without_overlap(tracks, intervals):
    """Slices on overlap lane N that overlap no slice of lane N - 1 by a positive duration
    (whichever starts first: work placed late may start before the slice it overlaps); a
    zero-length slice off lane 0 (it could nest there) counts too. A slice ending exactly where
    a slice of lane N - 1 written before it begins is not counted: a reader ordering events by
    time, then file order (trace processor's sorter) would see that one begin before this one
    ends, so it cannot share the lane."""
    by_lane = {}
    for uuid, iv in intervals.items():
        if tracks[uuid].HasField("thread") or tracks[uuid].HasField("process"):
            continue
        by_lane[lane_of(tracks, uuid)] = sorted(iv)
    bad = 0
    for (timeline, lane), iv in by_lane.items():
        if lane == 0:
            continue
        below = by_lane.get((timeline, lane - 1), [])
        starts = [s for s, _, _ in below]
        reach = list(itertools.accumulate((e for _, e, _ in below), max))
        for start, end, written in iv:
            # The slices below starting before this one ends; the furthest of them must reach
            # past its start.
            n = bisect.bisect_left(starts, end)
            overlaps = n and reach[n - 1] > start
            blocked = any(below[k][2] < written for k in range(n, bisect.bisect_right(starts, end)))
            if start >= end or not (overlaps or blocked):
                bad += 1
    return bad


def dump(path):
    """Prints every packet (bundles expanded) in protobuf text format: the golden files."""
    from google.protobuf import text_format
    for i, p in enumerate(packets(path)):
        print(f"# packet {i}")
        print(text_format.MessageToString(p), end="")


if __name__ == "__main__":
    if sys.argv[1] == "--dump":
        dump(sys.argv[2])
    elif sys.argv[1] == "--events":
        main(sys.argv[2], show_events=True)
    else:
        main(sys.argv[1])
