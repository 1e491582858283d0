#!/usr/bin/env bash
# Records tests/agent-stream/protocol-1/: a stream of the previous agent stream protocol (1),
# written by the C agent example (examples/c-agent-acme as it was) on the C agent kit as it was
# at the last commit before wire protocol 2 (1fd0984, "Wire protocol 2"), so today's host is
# tested on what an agent built with that kit sends. It builds that commit's kit in a temporary
# git worktree, runs the example's application with the agent preloaded and its dump folder
# set, and writes:
#   stream.bin    the dump, byte for byte what the agent sent (hello protocol 1, module map,
#                 launches, bye)
#   expected.txt  the application's launch functions as file offsets in its executable (from
#                 the addresses it printed and the stream's own module map), for the test
# Usage: tests/agent-stream/capture.sh   [CAPTURE_TARGET=DIR reuses a cargo target directory]
# Read by core/tests/host/frozen.rs.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$root/tests/agent-stream/protocol-1
commit=$(git -C "$root" rev-parse 1fd0984^)
work=$(mktemp -d)
cleanup() { git -C "$root" worktree remove --force "$work/kit" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
git -C "$root" worktree add --detach "$work/kit" "$commit" >/dev/null
target=${CAPTURE_TARGET:-$work/target}
(cd "$work/kit" && CARGO_TARGET_DIR="$target" cargo build --offline --quiet -p xpuprof-agent-c)
cp -r "$work/kit/examples/c-agent-acme" "$work/acme"
make -s -C "$work/acme" run XPUPROF_CFLAGS="-I$work/kit/sdk/include" \
  XPUPROF_LIBS="-L$target/debug -lxpuprof_agent" XPUPROF_LIBDIR="$target/debug" >"$work/app.out"
mkdir -p "$out"
cp "$work"/acme/dump/agent-*.bin "$out/stream.bin"
python3 - "$out/stream.bin" "$work/app.out" "$work/acme/app" >"$out/expected.txt" <<'PY'
import os, struct, sys
data = open(sys.argv[1], "rb").read()
app = os.path.realpath(sys.argv[3])
at, maps, protocol = 0, [], None
while at + 8 <= len(data):
    (n,) = struct.unpack_from("<I", data, at)
    ty, p = data[at + 4], data[at + 8 : at + 4 + n]
    if ty == 1:
        protocol = struct.unpack_from("<I", p, 8)[0]
    if ty == 2 and not maps:
        (count,), q = struct.unpack_from("<I", p), 4
        for _ in range(count):
            start, end, off, plen = struct.unpack_from("<QQQI", p, q)
            maps.append((start, end, off, p[q + 28 : q + 28 + plen].decode()))
            q += 28 + plen
    at += 4 + n
print(f"protocol {protocol}")
for line in open(sys.argv[2]):
    name, addr = line.split()
    addr = int(addr, 16)
    start, _, off, path = next(m for m in maps if m[0] <= addr < m[1])
    assert os.path.realpath(path) == app, (path, app)
    print(f"{name} {addr - start + off:#x}")
PY
echo "wrote $out/stream.bin ($(stat -c %s "$out/stream.bin") bytes) and $out/expected.txt:"
cat "$out/expected.txt"
