#!/usr/bin/env bash
# Builds xpuprof-sdk on its own, outside xpuprof's workspace, as a plugin author gets it: the
# files `cargo package` would ship, with sdk/Cargo.toml as written (no workspace to inherit
# from), built offline with the workspace's Cargo.lock (same dependency versions). Prints the
# time of the first build (the SDK's dependencies included) and of the SDK alone.
# Usage: tests/abi/sdk-standalone.sh [TARGET_DIR]   (default: target/sdk-standalone)
# Run by core/tests/host/abi.rs `sdk_builds_outside_the_workspace`.
set -euo pipefail
# A build check, not a debugging session: no debug info and no incremental cache (CI's disk is small).
export CARGO_PROFILE_DEV_DEBUG=false CARGO_INCREMENTAL=0
root=$(cd "$(dirname "$0")/../.." && pwd)
target=${1:-$root/target/sdk-standalone}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$root"
files=$(cargo package --list -p xpuprof-sdk --allow-dirty --offline 2>/dev/null |
  grep -v -e '^\.cargo_vcs_info\.json$' -e '^Cargo\.toml\.orig$' -e '^Cargo\.lock$')
for f in $files; do
  mkdir -p "$work/sdk/$(dirname "$f")"
  cp "sdk/$f" "$work/sdk/$f"
done
# The agent stream's crate, an optional dependency at the same relative path (sdk/wire), as
# scripts/install.sh installs it.
for f in $(cargo package --list -p xpuprof-wire --allow-dirty --offline 2>/dev/null |
  grep -v -e '^\.cargo_vcs_info\.json$' -e '^Cargo\.toml\.orig$' -e '^Cargo\.lock$'); do
  mkdir -p "$work/sdk/wire/$(dirname "$f")"
  cp "sdk/wire/$f" "$work/sdk/wire/$f"
done
cp Cargo.lock "$work/sdk/Cargo.lock"
cd "$work/sdk"
build() { CARGO_TARGET_DIR="$target" cargo build --offline --quiet; }
t0=$(date +%s.%N)
build
t1=$(date +%s.%N)
touch src/lib.rs
build
t2=$(date +%s.%N)
python3 - "$t0" "$t1" "$t2" <<'PY'
import sys
t0, t1, t2 = map(float, sys.argv[1:])
print(f"xpuprof-sdk built outside the workspace: first build {t1 - t0:.1f} s (dependencies included, "
      f"0 s when cached), the SDK alone {t2 - t1:.1f} s")
PY
