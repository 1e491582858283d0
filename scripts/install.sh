#!/usr/bin/env bash
# Installs xpuprof: PREFIX/bin/xpuprof, and the release plugins and in-target agents in
# PREFIX/lib/xpuprof/plugins (where the installed binary looks for them; test plugins are left out).
#
#   scripts/install.sh [--prefix DIR] [--profile release|debug] [--no-build]
#
# --prefix    where to install; default /usr/local as root, ~/.local otherwise
# --profile   which cargo build to install (default release, built first unless --no-build;
#             debug is what CI installs, to test this script without a second, release build)
# --no-build  install what target/<profile>/ already holds
#
# Run from an unpacked release tarball (scripts/package.sh), it installs the tarball's files
# and builds nothing. The installed tree is relocatable: xpuprof finds its plugins relative to
# its own path, so PREFIX can be any directory.
set -euo pipefail

usage() { sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; }
die() { echo "install.sh: $*" >&2; exit 1; }

prefix=""
profile="release"
build=1
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) [ $# -ge 2 ] || die "--prefix needs a directory"; prefix="$2"; shift 2 ;;
    --prefix=*) prefix="${1#--prefix=}"; shift ;;
    --profile) [ $# -ge 2 ] || die "--profile needs release or debug"; profile="$2"; shift 2 ;;
    --profile=*) profile="${1#--profile=}"; shift ;;
    --no-build) build=0; shift ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
case "$profile" in release|debug) ;; *) die "--profile must be release or debug, not '$profile'" ;; esac
if [ -z "$prefix" ]; then
  if [ "$(id -u)" -eq 0 ]; then prefix=/usr/local; else prefix="$HOME/.local"; fi
fi

here="$(cd "$(dirname "$0")" && pwd)"
if [ -x "$here/bin/xpuprof" ] && [ -d "$here/lib/xpuprof/plugins" ]; then
  # An unpacked tarball: install its files as they are.
  bin="$here/bin/xpuprof"
  files=("$here"/lib/xpuprof/plugins/*.so)
else
  root="$(cd "$here/.." && pwd)"
  [ -f "$root/Cargo.toml" ] || die "run me from the xpuprof repository or an unpacked release tarball"
  if [ "$build" -eq 1 ]; then
    command -v cargo >/dev/null || die "cargo not found: install Rust with rustup, or run scripts/install-deps.sh"
    flag=()
    [ "$profile" = release ] && flag=(--release)
    echo "install.sh: cargo build ${flag[*]} --workspace"
    (cd "$root" && cargo build "${flag[@]}" --workspace)
  fi
  out="$root/target/$profile"
  bin="$out/xpuprof"
  [ -x "$bin" ] || die "$bin is missing: build it (cargo build${flag:+ ${flag[*]}} --workspace) or drop --no-build"
  # The release set: every plugin and every in-target agent; test plugins (libxpuprof_test_*)
  # and the plugin kit's examples are not part of it.
  files=()
  for f in "$out"/libxpuprof_plugin_*.so "$out"/libxpuprof_*_agent.so; do
    [ -f "$f" ] || continue
    case "$(basename "$f")" in *example*) continue ;; esac
    files+=("$f")
  done
fi
[ ${#files[@]} -gt 0 ] && [ -f "${files[0]}" ] || die "no plugins found next to $bin"

plugins="$prefix/lib/xpuprof/plugins"
# 0755 directories and files: as root, xpuprof refuses plugins that others could replace.
install -d -m 0755 "$prefix/bin" "$plugins"
# Plugins of an earlier install that this one no longer ships would still be loaded: remove
# xpuprof's own files first (nothing else lives in this directory).
rm -f "$plugins"/libxpuprof_*.so
install -m 0755 "$bin" "$prefix/bin/xpuprof"
for f in "${files[@]}"; do
  install -m 0755 "$f" "$plugins/"
done

echo "install.sh: installed $prefix/bin/xpuprof and ${#files[@]} plugins and agents in $plugins"
"$prefix/bin/xpuprof" --version | sed 's/^/  /'
case ":$PATH:" in
  *":$prefix/bin:"*) ;;
  *) echo "install.sh: $prefix/bin is not on your PATH: add it, e.g. export PATH=\"$prefix/bin:\$PATH\"" ;;
esac
