#!/usr/bin/env bash
# A plugin author outside the repository, with only an installed xpuprof: installs the build
# into a temporary prefix with scripts/install.sh, then, from the installation alone,
#  - builds the C examples of PREFIX/share/xpuprof/examples with `pkg-config --cflags xpuprof`,
#    checks and runs the two plugins, and runs the C agent example (a third-party agent on
#    libxpuprof_agent) and checks the launch stacks it sent;
#  - builds the installed Rust source of that agent (rust-source-acme-agent, on the SDK's
#    agent-stream reader), checks it, and records the C agent's application with it: its
#    folded output has the exact launch stack main;outer;middle;inner;
#  - generates a C source and sink and a Rust source and sink with the installed `xpuprof
#    new-plugin` (which takes the installed kit by default), builds them (the Rust ones on
#    PREFIX/share/xpuprof/sdk, their own `cargo test` running the conformance kit of
#    PREFIX/share/xpuprof/plugin-test), and runs `xpuprof check-plugin` and a session on each.
# Exit 0 when all pass. Nothing of the repository is used but scripts/install.sh and the build
# it installs.
#
# Usage: tests/plugin-kit/outside.sh XPUPROF_BINARY [TARGET_DIR]
#   XPUPROF_BINARY: target/<profile>/xpuprof of the build to install (--profile <profile> --no-build).
#   TARGET_DIR: cargo's build directory for the Rust plugins (default target/sdk-standalone,
#   shared with tests/abi/sdk-standalone.sh so the SDK's dependencies are built once).
# Run by core/tests/host/kit.rs.
set -euo pipefail
# A build check, not a debugging session: no debug info and no incremental cache (CI's disk is small).
export CARGO_PROFILE_DEV_DEBUG=false CARGO_INCREMENTAL=0
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
built=$(realpath "$1")
target=${2:-$root/target/sdk-standalone}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# 1. The installation, and an environment that points at it alone.
prefix=$work/prefix
# Without the shipped plugins: none is needed here, and CI's disk is small.
"$root/scripts/install.sh" --prefix "$prefix" --profile "$(basename "$(dirname "$built")")" --no-build --no-plugins >/dev/null
export PATH="$prefix/bin:$PATH" PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
unset XPUPROF XPUPROF_PLUGIN_PATH
xpuprof=$prefix/bin/xpuprof
[ "$(pkg-config --variable=includedir xpuprof)" -ef "$prefix/include" ] ||
  { echo "pkg-config does not find the installed xpuprof.pc" >&2; exit 1; }

check() { # LIB [ARGS...]: the conformance check
  echo "== xpuprof check-plugin $(basename "$1")"
  "$xpuprof" check-plugin "$@"
}

# 2. The installed C examples, from their own folders and Makefiles (pkg-config).
cd "$work"
for ex in c-source-acme c-sink-csv c-agent-acme; do
  cp -r "$prefix/share/xpuprof/examples/$ex" "$ex"
done
make -s -C c-source-acme
make -s -C c-sink-csv
check c-source-acme/libxpuprof_plugin_acme.so
check c-sink-csv/libxpuprof_plugin_kernel_csv.so
"$xpuprof" --plugin-dir c-source-acme --plugin-dir c-sink-csv --source acme --sink kernel-csv -o out-c --quiet -- true
grep -q '"acme::gemm<float>",5,' out-c/kernels.csv
make -s -C c-agent-acme run >agent.out
python3 "$here/agent_stream.py" c-agent-acme/dump/agent-*.bin agent.out

# The whole backend: the C agent above and the installed Rust source that decodes its stream
# (with the SDK's agent-stream reader), its [patch] pointed at the installation as an author
# does with a copy; exact launch stacks in the folded output, and the conformance check.
cp -r "$prefix/share/xpuprof/examples/rust-source-acme-agent" rs-acme
sed -i "s|path = \"../../sdk\"|path = \"$prefix/share/xpuprof/sdk\"|" rs-acme/Cargo.toml
cp "$prefix/share/xpuprof/Cargo.lock" rs-acme/
(cd rs-acme && CARGO_TARGET_DIR="$target" cargo build --offline --quiet)
mkdir -p acme-plugin
cp "$target/debug/libxpuprof_plugin_acme_agent.so" acme-plugin/
acme=(--set "source.acme-agent.agent=$work/c-agent-acme/libacme_agent.so" -- c-agent-acme/app)
check acme-plugin/libxpuprof_plugin_acme_agent.so "${acme[@]}" | grep -v '^[a-z]* 0x'
# The folded sink of the build installed (the installation leaves its plugins out).
folded=$(dirname "$built")/libxpuprof_plugin_folded.so
"$xpuprof" --plugin-dir acme-plugin --plugin-dir "$folded" --source acme-agent --sink folded -o out-acme --quiet \
  "${acme[@]}" >/dev/null
grep -q ';main;outer;middle;inner;acme_launch;\[GPU_Kernel\]gemm 15$' out-acme/profile.gpu.folded ||
  { echo "the folded output lacks the exact launch stack main;outer;middle;inner:" >&2; cat out-acme/profile.gpu.folded >&2; exit 1; }

# 3. New plugins from the installed templates.
"$xpuprof" new-plugin --kind source --lang c c-src >/dev/null
"$xpuprof" new-plugin --kind sink --lang c c-snk >/dev/null
for p in c-src c-snk; do
  grep -q "pkg-config --cflags $prefix/lib/pkgconfig/xpuprof.pc" "$p/Makefile" ||
    { echo "$p/Makefile does not build on the installation's xpuprof.pc" >&2; exit 1; }
  make -s -C "$p" check
done
# The Rust ones build offline with the installation's Cargo.lock (the SDK's tested versions),
# and their own `cargo test` runs the conformance kit.
for kind in source sink; do
  "$xpuprof" new-plugin --kind "$kind" --lang rust "rs-$kind" >/dev/null
  grep -q "path = \"$prefix/share/xpuprof/sdk\"" "rs-$kind/Cargo.toml" ||
    { echo "rs-$kind/Cargo.toml does not use the installed SDK" >&2; exit 1; }
  grep -q '^xpuprof-sdk = "=[0-9]' "rs-$kind/Cargo.toml" ||
    { echo "rs-$kind/Cargo.toml does not pin the SDK's version" >&2; exit 1; }
  (cd "rs-$kind" && CARGO_TARGET_DIR="$target" cargo build --offline --quiet &&
    CARGO_TARGET_DIR="$target" cargo test --offline --quiet >/dev/null)
  check "$target/debug/libxpuprof_plugin_rs_$kind.so"
done
mkdir -p rs-plugins
cp "$target/debug/libxpuprof_plugin_rs_source.so" "$target/debug/libxpuprof_plugin_rs_sink.so" rs-plugins/
"$xpuprof" --plugin-dir rs-plugins --plugin-dir c-src --source rs-source,c-src --sink rs-sink -o out-rs --quiet -- true
grep -q 'Marker 6' out-rs/rs-sink.txt
# This run's crates, built from temporary paths, are of no use to the next one.
for kind in source sink; do
  (cd "rs-$kind" && CARGO_TARGET_DIR="$target" cargo clean --offline --quiet -p "xpuprof-plugin-rs-$kind" \
    -p xpuprof-sdk -p xpuprof-plugin-test)
done
(cd rs-acme && CARGO_TARGET_DIR="$target" cargo clean --offline --quiet -p xpuprof-plugin-acme-agent -p xpuprof-sdk -p xpuprof-wire)
echo "outside the workspace, from an installation: 2 C examples and the C agent example built and run," \
  "the agent's Rust source built, checked and run (exact launch stacks)," \
  "2 C and 2 Rust plugins from the templates built, checked and run"
