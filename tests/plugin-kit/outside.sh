#!/usr/bin/env bash
# A plugin author outside the repository: builds the C examples from their Makefiles,
# generates a C source, a C sink and a Rust source and sink with `xpuprof new-plugin`, builds
# each outside xpuprof's workspace, and runs `xpuprof check-plugin` and a session on every one.
# Exit 0 when all pass.
#
# The C side uses an "installation" of the header (<prefix>/include/xpuprof/*.h, the layout
# scripts/install.sh gives). The Rust side depends on the SDK's sources by path, as a third
# party's crate does on an xpuprof checkout (or by git): its conformance kit,
# xpuprof-plugin-test, builds on the host's crates of the same tree.
#
# Usage: tests/plugin-kit/outside.sh XPUPROF_BINARY [TARGET_DIR]
#   TARGET_DIR: cargo's build directory for the Rust plugins (default target/sdk-standalone,
#   shared with tests/abi/sdk-standalone.sh so the SDK's dependencies are built once).
# Run by core/tests/host/kit.rs.
set -euo pipefail
# A build check, not a debugging session: no debug info and no incremental cache (CI's disk is small).
export CARGO_PROFILE_DEV_DEBUG=false CARGO_INCREMENTAL=0
root=$(cd "$(dirname "$0")/../.." && pwd)
xpuprof=$(realpath "$1")
target=${2:-$root/target/sdk-standalone}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# 1. The installation.
prefix=$work/prefix
mkdir -p "$prefix/include/xpuprof"
cp "$root"/sdk/include/xpuprof/*.h "$prefix/include/xpuprof/"

check() { # LIB: the conformance check, then a session with it
  echo "== xpuprof check-plugin $(basename "$1")"
  "$xpuprof" check-plugin "$1"
}

# 2. The C examples, from their own folders and Makefiles.
for ex in c-source-acme c-sink-csv; do
  cp -r "$root/examples/$ex" "$work/$ex"
  make -s -C "$work/$ex" XPUPROF_INCLUDE="$prefix/include"
done
check "$work/c-source-acme/libxpuprof_plugin_acme.so"
check "$work/c-sink-csv/libxpuprof_plugin_kernel_csv.so"
(cd "$work" && "$xpuprof" --plugin-dir c-source-acme --plugin-dir c-sink-csv --source acme \
  --sink kernel-csv -o out-c --quiet -- true)
grep -q '"acme::gemm<float>",5,' "$work/out-c/kernels.csv"

# 3. New plugins from the templates.
cd "$work"
"$xpuprof" new-plugin --kind source --lang c --include "$prefix/include" c-src >/dev/null
"$xpuprof" new-plugin --kind sink --lang c --include "$prefix/include" c-snk >/dev/null
for p in c-src c-snk; do
  make -s -C "$p"
  check "$work/$p/libxpuprof_plugin_${p//-/_}.so"
done
# The Rust ones build offline with the workspace's dependency versions (their own `cargo test`
# runs the kit too, but builds the whole host: `xpuprof check-plugin` runs the same checks).
for kind in source sink; do
  "$xpuprof" new-plugin --kind "$kind" --lang rust --sdk "$root/sdk" "rs-$kind" >/dev/null
  cp "$root/Cargo.lock" "rs-$kind/Cargo.lock"
  (cd "rs-$kind" && CARGO_TARGET_DIR="$target" cargo build --offline --quiet)
  check "$target/debug/libxpuprof_plugin_rs_$kind.so"
done
mkdir -p "$work/rs-plugins"
cp "$target/debug/libxpuprof_plugin_rs_source.so" "$target/debug/libxpuprof_plugin_rs_sink.so" "$work/rs-plugins/"
"$xpuprof" --plugin-dir "$work/rs-plugins" --plugin-dir "$work/c-src" --source rs-source,c-src \
  --sink rs-sink -o "$work/out-rs" --quiet -- true
grep -q 'Marker 6' "$work/out-rs/rs-sink.txt"
echo "outside the workspace: 2 C examples, 2 C and 2 Rust plugins from the templates built, checked and run"
