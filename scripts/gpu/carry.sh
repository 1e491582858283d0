#!/usr/bin/env bash
# Builds the Rust parts in release mode on the development machine and copies them, without
# debug info, into .device-carry/ (git-ignored) for the GPU machine: pass `carry: [".device-carry"]`
# to the device `run`, then run scripts/gpu/run-all.sh there. Each package is built on its own
# line so a failed build stops here instead of carrying a stale binary.
# `carry.sh --debug` carries debug builds instead (stripped; for correctness checks only: no
# benchmark figure from them counts, and the criterion benchmark is left out).
set -euo pipefail
cd "$(dirname "$0")/../.."
profile=release
[ "${1:-}" = "--debug" ] && profile=debug
flag=--release
[ "$profile" = debug ] && flag=
for p in xpuprof-core xpuprof-plugin-cupti xpuprof-cupti-agent xpuprof-plugin-ebpf xpuprof-plugin-folded \
         xpuprof-plugin-chrome xpuprof-plugin-flamegraph xpuprof-plugin-summary xpuprof-plugin-archive \
         xpuprof-plugin-perfetto xpuprof-plugin-pprof xpuprof-plugin-dump; do
  cargo build $flag -q -p "$p"
done
mkdir -p .device-carry/lib
for f in xpuprof libxpuprof_plugin_cupti.so libxpuprof_cupti_agent.so libxpuprof_plugin_ebpf.so \
         libxpuprof_plugin_folded.so libxpuprof_plugin_chrome.so libxpuprof_plugin_flamegraph.so \
         libxpuprof_plugin_summary.so libxpuprof_plugin_archive.so \
         libxpuprof_plugin_perfetto.so libxpuprof_plugin_pprof.so libxpuprof_plugin_dump.so; do
  objcopy --strip-debug "target/$profile/$f" ".device-carry/$f"
done
if [ "$profile" = release ]; then
# The agent's Python capture benchmark (criterion), run by run-all.sh's stacks step.
bench=$(cargo bench -q -p xpuprof-python --bench capture --no-run --message-format=json 2>/dev/null \
  | python3 -c 'import json,sys; print([j["executable"] for j in map(json.loads, sys.stdin) if j.get("executable")][-1])')
objcopy --strip-debug "$bench" .device-carry/bench-python-capture
# The agent's launch-site and stack-walk benchmark (criterion), run by run-all.sh's stacks step.
bench=$(cargo bench -q -p xpuprof-agent-kit --bench launch_site --no-run --message-format=json 2>/dev/null \
  | python3 -c 'import json,sys; print([j["executable"] for j in map(json.loads, sys.stdin) if j.get("executable")][-1])')
objcopy --strip-debug "$bench" .device-carry/bench-launch-site
# The merge's scale benchmark (core/benches/merge_scale.rs), run by the ranks part.
bench=$(cargo bench -q -p xpuprof-core --bench merge_scale --no-run --message-format=json 2>/dev/null \
  | python3 -c 'import json,sys; print([j["executable"] for j in map(json.loads, sys.stdin) if j.get("executable") and j["target"]["name"] == "merge_scale"][-1])')
objcopy --strip-debug "$bench" .device-carry/bench-merge-scale
else
  rm -f .device-carry/bench-python-capture .device-carry/bench-launch-site .device-carry/bench-merge-scale
fi
# Readers the presentation part checks outputs with, which the GPU machine lacks (install-deps.sh
# installs them here): go's pprof (the Go toolchain's own tool binary, gzipped) and Perfetto's
# Python protos with protobuf's pure-Python runtime (no compiled extension: any Python reads it).
rm -rf .device-carry/readers && mkdir -p .device-carry/readers
if command -v go >/dev/null && [ -x "$(go env GOTOOLDIR)/pprof" ]; then
  gzip -c "$(go env GOTOOLDIR)/pprof" >.device-carry/readers/pprof.gz
fi
py_perfetto=$(python3 -c 'import os, perfetto; print(os.path.dirname(os.path.dirname(perfetto.__file__)))' 2>/dev/null || true)
if [ -n "$py_perfetto" ] && [ -d "$py_perfetto/google/protobuf" ]; then
  tar czf .device-carry/readers/python.tar.gz -C "$py_perfetto" --exclude=__pycache__ --exclude=_upb \
    --exclude=testdata --exclude='*.so' perfetto google/protobuf
fi
# The eBPF plugin links libelf, which the GPU machine may lack.
lib=$(ldconfig -p | awk '/libelf.so.1 / && !f {print $NF; f = 1}')
[ -n "$lib" ] && cp -L "$lib" .device-carry/lib/libelf.so.1
ls -la .device-carry
