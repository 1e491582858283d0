#!/usr/bin/env python3
"""Checks of PC sampling (issue 32) on the GPU machine, independent of xpuprof's own decoder.

  check_pc_sampling.py wire DUMP_DIR SASS_TXT SOURCE.cu
      Decodes the cupti agent's wire stream (its PC sampling messages), maps each sampled PC to
      its source line with nvdisasm's line table (SASS_TXT: `nvdisasm -g -c` of the program's
      cubin), and checks that `chase` stalls mostly on long_scoreboard and `chain` does not,
      each on its line marked HOT in SOURCE.
  check_pc_sampling.py kernels DUMP_DIR
      Lists the sampled kernels of a wire stream (any program), heaviest first, each with whether
      its cubin was seen and carried a line table.
  check_pc_sampling.py linemap SASS_TXT
      Prints nvdisasm's line table as `function offset file line` lines (the CI fixture's
      reference for the host's own line resolution).
  check_pc_sampling.py outputs OUT_DIR SOURCE.cu
      Checks xpuprof's outputs: profile.pc.folded has, for each kernel, frames
      `...;run_X...;[GPU_Kernel]X...;file.cu:LINE;[stall]REASON` whose heaviest line is the HOT
      one and whose heaviest reason is the expected one.

  check_pc_sampling.py split OUT_DIR SOURCE.cu
      Checks the per-launch split of pc_split.cu's one kernel launched from two host functions
      in two phases: profile.pc.folded has the MEMORY line's samples under memory_phase and the
      MATH line's under math_phase (each at least 90%).
  check_pc_sampling.py sass OUT_DIR
      Checks that the outputs carry the sampled instructions' SASS (nvdisasm at record time):
      the summary's hot instructions and pprof's `instruction` labels.

The last line printed is PASS or FAIL with the reason.
"""
import collections
import glob
import os
import re
import struct
import sys

MSG_STALL_REASONS, MSG_CUBIN, MSG_SAMPLES, MSG_STATUS = 0x90, 0x91, 0x92, 0x93
PREFIX = "smsp__pcsamp_warps_issue_stalled_"


def short(reason):
    return reason[len(PREFIX):] if reason.startswith(PREFIX) else reason


def messages(path):
    data = open(path, "rb").read()
    at = 0
    while at + 8 <= len(data):
        (length,) = struct.unpack_from("<I", data, at)
        ty = data[at + 4]
        yield ty, data[at + 8 : at + 4 + length]
        at += 4 + length


def decode(dump_dir):
    reasons, cubins, statuses = {}, {}, []
    pcs = collections.Counter()  # (function, offset, reason) -> samples
    crc_of = {}
    totals = collections.Counter()
    for path in sorted(glob.glob(os.path.join(dump_dir, "cupti-*.bin"))):
        for ty, p in messages(path):
            if ty == MSG_STALL_REASONS:
                ctx, dev, n, _ = struct.unpack_from("<IIII", p, 0)
                at = 16
                for _ in range(n):
                    idx, ln = struct.unpack_from("<II", p, at)
                    reasons[idx] = p[at + 8 : at + 8 + ln].decode()
                    at += 8 + ln
            elif ty == MSG_CUBIN:
                crc, module, flags = struct.unpack_from("<QII", p, 0)
                cubins[crc] = (module, flags, len(p) - 16)
            elif ty == MSG_STATUS:
                ctx, status = struct.unpack_from("<II", p, 0)
                statuses.append((ctx, status, p[8:].decode(errors="replace")))
            elif ty == MSG_SAMPLES:
                time, ctx, dev, rng, total, dropped, nonuser, flags = struct.unpack_from("<QIIQQQQI", p, 0)
                totals["fetches"] += 1
                totals["total"] += total
                totals["dropped"] += dropped
                totals["non_user"] += nonuser
                totals["hw_full"] += flags & 1
                # The message's function table, then the PCs naming functions by index.
                at = struct.calcsize("<QIIQQQQI")
                (nf,) = struct.unpack_from("<I", p, at)
                at += 4
                names = []
                for _ in range(nf):
                    (nlen,) = struct.unpack_from("<I", p, at)
                    names.append(p[at + 4 : at + 4 + nlen].decode(errors="replace"))
                    at += 4 + nlen
                (n,) = struct.unpack_from("<I", p, at)
                at += 4
                for _ in range(n):
                    crc, off, fidx, corr, fid, nr = struct.unpack_from("<QQIIII", p, at)
                    at += 32
                    fn = names[fid] if fid < len(names) else "?"
                    for _ in range(nr):
                        ri, cnt = struct.unpack_from("<II", p, at)
                        at += 8
                        pcs[(fn, off, ri)] += cnt
                        crc_of[fn] = crc
                        totals["pcs_samples"] += cnt
                        if crc not in cubins:
                            totals["no_cubin_samples"] += cnt
                        if corr:
                            totals["with_correlation"] += cnt
    decode.crc_of = crc_of
    return reasons, cubins, statuses, pcs, totals


def check_kernels(dump_dir):
    reasons, cubins, statuses, pcs, totals = decode(dump_dir)
    per = collections.Counter()
    for (fn, _off, ri), cnt in pcs.items():
        if is_total_reason(reasons.get(ri, "")):
            per[fn] += cnt
    print("totals: " + " ".join(f"{k}={v}" for k, v in sorted(totals.items())))
    for s in statuses:
        print(f"refused: context {s[0]} status {s[1]}: {s[2]}")
    kinds = collections.Counter()
    for i, (fn, cnt) in enumerate(per.most_common()):
        cubin = cubins.get(decode.crc_of.get(fn))
        kind = "no cubin seen" if cubin is None else ("line table" if cubin[1] & 1 else "no line table")
        kinds[kind] += cnt
        if i < 20:
            print(f"{cnt:>10} {kind:<14} {fn[:110]}")
    all_samples = sum(per.values()) or 1
    print("PASS " if per else "FAIL no samples; ", end="")
    print(f"{len(per)} kernels sampled; samples by cubin: "
          + ", ".join(f"{k} {100 * v / all_samples:.1f}%" for k, v in kinds.most_common()))


def sass_lines(sass_txt):
    """function -> {offset: (file, line)} from `nvdisasm -g -c` text."""
    out, fn, cur = {}, None, None
    for ln in open(sass_txt, errors="replace"):
        m = re.match(r"\s*\.text\.(\S+):", ln) or re.match(r"\s*\.section\s+\.text\.([^,\s]+)", ln)
        if m:
            fn, cur = m.group(1), None
            out.setdefault(fn, {})
            continue
        m = re.search(r'//## File "([^"]+)", line (\d+)', ln)
        if m:
            cur = (os.path.basename(m.group(1)), int(m.group(2)))
            continue
        m = re.search(r"/\*([0-9a-f]{4,})\*/", ln)
        if m and fn and cur:
            out[fn][int(m.group(1), 16)] = cur
    return out


def hot_lines(source):
    hot = {}
    for i, ln in enumerate(open(source), 1):
        m = re.search(r"// HOT: (\w+)", ln)
        if m:
            hot[m.group(1)] = i
    return hot


EXPECT = {"chase": lambda r: r == "long_scoreboard", "chain": lambda r: r != "long_scoreboard" and "scoreboard" not in r}


def is_total_reason(name):
    # CUPTI reports each stall reason twice: all samples, and the subset whose warp was not
    # issued (`_not_issued`); a PC's samples are the sum of the former.
    return not name.endswith("_not_issued")


def check_wire(dump_dir, sass_txt, source):
    reasons, cubins, statuses, pcs, totals = decode(dump_dir)
    print(f"stall reasons ({len(reasons)}): " + ", ".join(f"{i}={short(n)}" for i, n in sorted(reasons.items())))
    print(f"cubins: {len(cubins)} ({sum(1 for c in cubins.values() if c[1] & 1)} with line tables, "
          f"{sum(c[2] for c in cubins.values())} bytes)")
    for s in statuses:
        print(f"refused: context {s[0]} status {s[1]}: {s[2]}")
    print("totals: " + " ".join(f"{k}={v}" for k, v in sorted(totals.items())))
    lines = sass_lines(sass_txt) if os.path.exists(sass_txt) else {}
    hot = hot_lines(source)
    fails = []
    for kernel, want_line in sorted(hot.items()):
        by_reason, by_line, all_samples = collections.Counter(), collections.Counter(), 0
        for (fn, off, ri), cnt in pcs.items():
            if kernel not in fn:
                continue
            name = reasons.get(ri, str(ri))
            if not is_total_reason(name):
                continue
            by_reason[short(name)] += cnt
            all_samples += cnt
            fl = next((v for k, v in lines.items() if kernel in k), {}).get(off)
            by_line[fl[1] if fl else None] += cnt
        top = by_reason.most_common(4)
        print(f"{kernel}: {all_samples} samples; reasons " + ", ".join(f"{r} {c}" for r, c in top)
              + "; lines " + ", ".join(f"{l} {c}" for l, c in by_line.most_common(4)) + f" (HOT line {want_line})")
        if not top:
            fails.append(f"{kernel}: no samples")
            continue
        if not EXPECT[kernel](top[0][0]):
            fails.append(f"{kernel}: top stall reason {top[0][0]}")
        if lines and by_line.most_common(1)[0][0] != want_line:
            fails.append(f"{kernel}: hot line {by_line.most_common(1)[0][0]}, expected {want_line}")
    print("FAIL " + "; ".join(fails) if fails else "PASS both kernels: expected top stall reason and hot line")


def check_outputs(out_dir, source):
    path = os.path.join(out_dir, "profile.pc.folded")
    if not os.path.exists(path):
        print(f"FAIL no {path}")
        return
    hot = hot_lines(source)
    src = os.path.basename(source)
    fails = []
    for kernel, want_line in sorted(hot.items()):
        by_reason, by_line, under_launcher, n = collections.Counter(), collections.Counter(), 0, 0
        for ln in open(path):
            stack, _, count = ln.rstrip("\n").rpartition(" ")
            frames = stack.split(";")
            k = next((i for i, f in enumerate(frames) if f.startswith("[GPU_Kernel]") and kernel in f), None)
            if k is None:
                continue
            c = int(count)
            n += c
            under_launcher += c if any(f"run_{kernel}" in f for f in frames[:k]) else 0
            tail = frames[k + 1 :]
            line = next((f for f in tail if f.startswith(src + ":")), None)
            reason = next((f[len("[stall]"):] for f in tail if f.startswith("[stall]")), None)
            by_line[line] += c
            by_reason[reason] += c
        print(f"{kernel}: {n} samples, {under_launcher} under run_{kernel}; reasons "
              + ", ".join(f"{r} {c}" for r, c in by_reason.most_common(3))
              + "; lines " + ", ".join(f"{l} {c}" for l, c in by_line.most_common(3)))
        if n == 0:
            fails.append(f"{kernel}: no samples")
            continue
        if not EXPECT[kernel](by_reason.most_common(1)[0][0] or ""):
            fails.append(f"{kernel}: top stall reason {by_reason.most_common(1)[0][0]}")
        if by_line.most_common(1)[0][0] != f"{src}:{want_line}":
            fails.append(f"{kernel}: hot line {by_line.most_common(1)[0][0]}, expected {src}:{want_line}")
        if under_launcher * 10 < n * 9:
            fails.append(f"{kernel}: only {under_launcher} of {n} samples under run_{kernel}")
    print("FAIL " + "; ".join(fails) if fails else "PASS both kernels: reason, line and launch stack")


def check_split(out_dir, source):
    path = os.path.join(out_dir, "profile.pc.folded")
    if not os.path.exists(path):
        print(f"FAIL no {path}")
        return
    src = os.path.basename(source)
    marks = {}
    for no, text in enumerate(open(source), 1):
        for tag in ("MEMORY", "MATH"):
            if text.rstrip().endswith("// " + tag):
                marks[f"{src}:{no}"] = {"MEMORY": "memory_phase", "MATH": "math_phase"}[tag]
    got = collections.defaultdict(collections.Counter)
    for ln in open(path):
        stack, _, count = ln.rstrip("\n").rpartition(" ")
        frames = stack.split(";")
        if not any(f.startswith("[GPU_Kernel]") and "mixed" in f for f in frames):
            continue
        line = next((f for f in frames if f in marks), None)
        if line is None:
            continue
        phase = next((p for p in ("memory_phase", "math_phase") if any(p in f for f in frames)), "other")
        got[line][phase] += int(count)
    fails = []
    for line, want in sorted(marks.items()):
        n = sum(got[line].values())
        print(f"{line} (under {want} by design): {n} samples: " + ", ".join(f"{p} {c}" for p, c in got[line].most_common()))
        if n == 0:
            fails.append(f"{line}: no samples")
        elif got[line][want] * 10 < n * 9:
            fails.append(f"{line}: only {got[line][want]} of {n} under {want}")
    print("FAIL " + "; ".join(fails) if fails else "PASS each line under the launch that ran it")


def check_sass(out_dir):
    fails = []
    summary = os.path.join(out_dir, "summary.txt")
    text = open(summary).read() if os.path.exists(summary) else ""
    hot = [ln for ln in text.splitlines() if re.search(r"\b(LDG|FFMA|LD|IMAD|ISETP|BRA)\b", ln)]
    print(f"summary lines with SASS: {len(hot)}")
    for ln in hot[:6]:
        print("  " + ln.strip()[:150])
    if not hot:
        fails.append("no SASS in summary.txt")
    pb = os.path.join(out_dir, "profile.pb.gz")
    if os.path.exists(pb):
        import gzip
        data = gzip.open(pb).read()
        has = b"instruction" in data and (b"LDG" in data or b"FFMA" in data)
        print(f"pprof: instruction labels with SASS {'present' if has else 'MISSING'}")
        if not has:
            fails.append("no SASS in profile.pb.gz")
    print("FAIL " + "; ".join(fails) if fails else "PASS SASS of the sampled instructions in summary and pprof")


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "wire":
        check_wire(sys.argv[2], sys.argv[3], sys.argv[4])
    elif mode == "linemap":
        for fn, offsets in sorted(sass_lines(sys.argv[2]).items()):
            for off, (f, line) in sorted(offsets.items()):
                print(f"{fn} {off:#x} {f} {line}")
    elif mode == "kernels":
        check_kernels(sys.argv[2])
    elif mode == "outputs":
        check_outputs(sys.argv[2], sys.argv[3])
    elif mode == "split":
        check_split(sys.argv[2], sys.argv[3])
    elif mode == "sass":
        check_sass(sys.argv[2])
    else:
        sys.exit(f"unknown mode {mode}")
