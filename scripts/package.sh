#!/usr/bin/env bash
# Builds the relocatable release tarball: target/package/xpuprof-<version>-<arch>-linux.tar.gz,
# holding what scripts/install.sh installs, laid out as installed (bin/xpuprof,
# lib/xpuprof/plugins/ with the release plugins and agents, and the plugin author's kit:
# include/xpuprof/, lib/libxpuprof_agent.{so,a}, lib/pkgconfig/xpuprof.pc, share/xpuprof/), plus
# install.sh, the README and xpuprof.toml.example. Unpack it anywhere and run bin/xpuprof (and
# point PKG_CONFIG_PATH at its lib/pkgconfig), or install it with its install.sh [--prefix DIR].
#
#   scripts/package.sh [--profile release|debug] [--no-build]
#
# Prints the tarball's path on its last line. CI packages the debug build (same files, no
# second build of the workspace); releases are made from the default release build.
set -euo pipefail
cd "$(dirname "$0")/.."
profile=release
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --profile) profile="$2"; args+=(--profile "$2"); shift 2 ;;
    --profile=*) profile="${1#--profile=}"; args+=("$1"); shift ;;
    --no-build) args+=(--no-build); shift ;;
    *) echo "package.sh: unknown argument '$1'" >&2; exit 1 ;;
  esac
done
version=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version *= *"\(.*\)"/\1/p' Cargo.toml)
[ -n "$version" ] || { echo "package.sh: no [workspace.package] version in Cargo.toml" >&2; exit 1; }
name="xpuprof-$version-$(uname -m)-linux"
stage="target/package/$name"
rm -rf "$stage" "target/package/$name.tar.gz"
mkdir -p "$stage"
scripts/install.sh --prefix "$stage" "${args[@]}" >/dev/null
install -m 0755 scripts/install.sh "$stage/install.sh"
install -m 0644 README.md xpuprof.toml.example "$stage/"
# Owned by root in the archive, so that root unpacking it gets files xpuprof's trust check accepts.
tar -C target/package --owner=0 --group=0 --numeric-owner -czf "target/package/$name.tar.gz" "$name"
rm -rf "$stage"
echo "target/package/$name.tar.gz"
