#!/bin/sh
# Where eBPF CPU samples put the Python frames of a program deep in nested imports (the shape of
# `import torch`), for any interpreter: runs tests/workloads/python/imports.py (12 nested imports,
# 60 rounds) under `xpuprof --source ebpf` (python = "auto", 499 Hz) and checks the folded
# profile with scripts/check_python_imports.py (rooted= under the script's own <module> line,
# exact= the whole Python path of the hot function in order).
#
# usage: scripts/python-import-stacks.sh PYTHON [XPUPROF] [PLUGIN_DIR] [OUT_DIR]
#   PYTHON: the interpreter (a path, or a command such as a wrapper script that execs one);
#   XPUPROF, PLUGIN_DIR: default target/debug/xpuprof and target/debug; OUT_DIR: default a
#   temporary directory (deleted). Needs root (eBPF). Prints the checker's line and the source's
#   Python counts; exits with the checker's status.
set -u
[ $# -ge 1 ] || { echo "usage: $0 PYTHON [XPUPROF] [PLUGIN_DIR] [OUT_DIR]" >&2; exit 2; }
here=$(cd "$(dirname "$0")/.." && pwd)
python=$1
xpuprof=${2:-$here/target/debug/xpuprof}
plugins=${3:-$here/target/debug}
out=${4:-}
[ -x "$xpuprof" ] || { echo "$xpuprof: not built (cargo build -p xpuprof-core -p xpuprof-plugin-ebpf -p xpuprof-plugin-folded)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ -n "$out" ] || out=$tmp/out
printf '[source.ebpf]\nsample_hz = 499\n' >"$tmp/xpuprof.toml"
"$xpuprof" --plugin-dir "$plugins" -v --source ebpf --sink folded -c "$tmp/xpuprof.toml" -o "$out" -- \
  "$python" "$here/tests/workloads/python/imports.py" 12 60 200000 >"$tmp/log" 2>&1
rc=$?
[ $rc -eq 0 ] || { tail -20 "$tmp/log" >&2; echo "xpuprof failed (rc=$rc)" >&2; exit 1; }
grep -o 'python frames on .*\|lost [0-9]*: Python[^(]*' "$tmp/log" | sed 's/^/  /'
python3 "$here/scripts/check_python_imports.py" "$out/profile.cpu.folded" 12
