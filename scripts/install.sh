#!/usr/bin/env bash
# Installs xpuprof and its plugin author's kit under PREFIX:
#   bin/xpuprof                      the profiler
#   lib/xpuprof/plugins/             the release plugins and in-target agents (where xpuprof looks)
#   include/xpuprof/*.h              the C plugin ABI (plugin.h, records.h) and the agent kit (agent.h)
#   lib/libxpuprof_agent.{so,a}      the C agent kit, for third-party in-target agents
#   lib/pkgconfig/xpuprof.pc         pkg-config --cflags xpuprof / --libs xpuprof (the agent kit)
#   share/xpuprof/sdk/               the Rust SDK's sources (xpuprof-sdk, as `cargo package` ships it),
#                                    with the agent stream's crate in sdk/wire (xpuprof-wire)
#   share/xpuprof/plugin-test/       the conformance kit crate (xpuprof-plugin-test)
#   share/xpuprof/Cargo.lock         the dependency versions the SDK was built and tested with
#   share/xpuprof/examples/          the C examples (two plugins, an agent), built with pkg-config, and
#                                    the agent's Rust source plugin (rust-source-acme-agent)
#   share/xpuprof/plugin-tutorial.md the step-by-step guide for plugin and agent authors
#   share/xpuprof/agent-stream.md    the agent stream, byte by byte
#   share/xpuprof/stability.md       what each interface promises, and how it is tested
#
#   scripts/install.sh [--prefix DIR] [--profile release|debug] [--no-build] [--no-plugins]
#
# --prefix    where to install; default /usr/local as root, ~/.local otherwise
# --profile   which cargo build to install (default release, built first unless --no-build;
#             debug is what CI installs, to test this script without a second, release build)
# --no-build  install what target/<profile>/ already holds
# --no-plugins  leave out lib/xpuprof/plugins (a machine that only builds and checks plugins)
#
# Run from an unpacked release tarball (scripts/package.sh), it installs the tarball's files
# and builds nothing. The installed tree is relocatable: xpuprof finds its plugins and
# `xpuprof new-plugin` its SDK relative to its own path, and xpuprof.pc names its directories
# relative to itself, so PREFIX can be any directory.
set -euo pipefail

usage() { sed -n '2,29p' "$0" | sed 's/^# \{0,1\}//'; }
die() { echo "install.sh: $*" >&2; exit 1; }

prefix=""
profile="release"
build=1
plugins=1
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) [ $# -ge 2 ] || die "--prefix needs a directory"; prefix="$2"; shift 2 ;;
    --prefix=*) prefix="${1#--prefix=}"; shift ;;
    --profile) [ $# -ge 2 ] || die "--profile needs release or debug"; profile="$2"; shift 2 ;;
    --profile=*) profile="${1#--profile=}"; shift ;;
    --no-build) build=0; shift ;;
    --no-plugins) plugins=0; shift ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
case "$profile" in release|debug) ;; *) die "--profile must be release or debug, not '$profile'" ;; esac
if [ -z "$prefix" ]; then
  if [ "$(id -u)" -eq 0 ]; then prefix=/usr/local; else prefix="$HOME/.local"; fi
fi
mkdir -p "$prefix" || die "cannot create $prefix"
prefix="$(cd "$prefix" && pwd)"

# What to install: "SOURCE DESTINATION MODE" lines, DESTINATION relative to PREFIX.
manifest=()
add() { manifest+=("$1"$'\t'"$2"$'\t'"$3"); }

here="$(cd "$(dirname "$0")" && pwd)"
if [ -x "$here/bin/xpuprof" ] && [ -d "$here/lib/xpuprof/plugins" ]; then
  # An unpacked tarball: its files are laid out as they are installed.
  [ "$prefix" -ef "$here" ] &&
    die "$prefix is this tarball: it is laid out as installed already (run its bin/xpuprof, or give another --prefix)"
  cd "$here"
  while IFS= read -r f; do
    case "$f" in
      ./lib/xpuprof/plugins/*) [ "$plugins" -eq 0 ] || add "$here/${f#./}" "${f#./}" 0755 ;;
      ./bin/*|./lib/*.so) add "$here/${f#./}" "${f#./}" 0755 ;;
      ./lib/*|./include/*|./share/*) add "$here/${f#./}" "${f#./}" 0644 ;;
    esac
  done < <(find . -type f | LC_ALL=C sort)
else
  root="$(cd "$here/.." && pwd)"
  [ -f "$root/Cargo.toml" ] || die "run me from the xpuprof repository or an unpacked release tarball"
  command -v cargo >/dev/null || die "cargo not found: install Rust with rustup, or run scripts/install-deps.sh"
  if [ "$build" -eq 1 ]; then
    flag=()
    [ "$profile" = release ] && flag=(--release)
    echo "install.sh: cargo build ${flag[*]} --workspace"
    (cd "$root" && cargo build "${flag[@]}" --workspace)
  fi
  out="$root/target/$profile"
  [ -x "$out/xpuprof" ] || die "$out/xpuprof is missing: build the workspace (cargo build --workspace, --release for the release profile) or drop --no-build"
  add "$out/xpuprof" bin/xpuprof 0755
  # The release set: every plugin and every in-target agent; test plugins (libxpuprof_test_*)
  # and the plugin kit's examples are not part of it.
  for f in "$out"/libxpuprof_plugin_*.so "$out"/libxpuprof_*_agent.so; do
    [ -f "$f" ] && [ "$plugins" -eq 1 ] || continue
    case "$(basename "$f")" in *example*) continue ;; esac
    add "$f" "lib/xpuprof/plugins/$(basename "$f")" 0755
  done
  for f in libxpuprof_agent.so libxpuprof_agent.a; do
    [ -f "$out/$f" ] || die "$out/$f is missing: build the C agent kit (cargo build -p xpuprof-agent-kit-c) or the workspace"
  done
  add "$out/libxpuprof_agent.so" lib/libxpuprof_agent.so 0755
  add "$out/libxpuprof_agent.a" lib/libxpuprof_agent.a 0644
  for f in "$root"/sdk/include/xpuprof/*.h; do
    add "$f" "include/xpuprof/$(basename "$f")" 0644
  done
  # The Rust SDK as `cargo package` ships it (its Cargo.toml stands alone, no workspace), and the
  # conformance kit, which stands alone too (it runs `xpuprof check-plugin`).
  # The agent stream's crate (xpuprof-wire, the SDK's optional `agent-stream` dependency) lies
  # at the SDK's `wire/`, as in the repository.
  for pkg in xpuprof-sdk:sdk:sdk xpuprof-wire:sdk/wire:sdk/wire xpuprof-plugin-test:sdk/plugin-test:plugin-test; do
    name=${pkg%%:*} rest=${pkg#*:}
    dir=${rest%%:*} dest=${rest#*:}
    list=$(cd "$root" && cargo package --list -p "$name" --allow-dirty --offline 2>/dev/null) ||
      die "cargo package --list -p $name failed: run it in $root to see why"
    while IFS= read -r f; do
      case "$f" in .cargo_vcs_info.json|Cargo.toml.orig|Cargo.lock) continue ;; esac
      add "$root/$dir/$f" "share/xpuprof/$dest/$f" 0644
    done <<<"$list"
  done
  add "$root/Cargo.lock" share/xpuprof/Cargo.lock 0644
  for doc in plugin-tutorial agent-stream stability; do
    add "$root/docs/$doc.md" "share/xpuprof/$doc.md" 0644
  done
  for ex in "$root"/examples/c-*; do
    for f in "$ex"/*; do
      add "$f" "share/xpuprof/examples/$(basename "$ex")/$(basename "$f")" 0644
    done
  done
  # The Rust half of the agent example: a crate of its own whose `../../sdk` is the installed SDK.
  ex=examples/rust-source-acme-agent
  for f in "$root/$ex/Cargo.toml" "$root/$ex"/src/*.rs; do
    add "$f" "share/xpuprof/${f#"$root"/}" 0644
  done
fi
[ "$plugins" -eq 0 ] || printf '%s\n' "${manifest[@]}" | cut -f2 | grep -q '^lib/xpuprof/plugins/' ||
  die "no plugins found to install"

# Files of an earlier install that this one no longer ships would still be used (plugins are
# loaded by directory): remove xpuprof's own files first (nothing else lives in these places).
[ "$plugins" -eq 0 ] || rm -f "$prefix"/lib/xpuprof/plugins/libxpuprof_*.so
rm -rf "$prefix/include/xpuprof" "$prefix/share/xpuprof"
# 0755 directories and executables: as root, xpuprof refuses plugins that others could replace.
n_plugins=0
for line in "${manifest[@]}"; do
  IFS=$'\t' read -r src dest mode <<<"$line"
  install -d -m 0755 "$(dirname "$prefix/$dest")"
  install -m "$mode" "$src" "$prefix/$dest"
  case "$dest" in lib/xpuprof/plugins/*) n_plugins=$((n_plugins + 1)) ;; esac
done

pc="$prefix/lib/pkgconfig/xpuprof.pc"
if [ -n "${root:-}" ]; then
  version=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version *= *"\(.*\)"/\1/p' "$root/Cargo.toml")
  install -d -m 0755 "$(dirname "$pc")"
  # Relocatable: pkg-config and pkgconf set ${pcfiledir} to this file's directory. Plugins
  # use --cflags only (the host loads them; they link nothing of xpuprof's); an in-target
  # agent adds --libs for the agent kit. --static --libs names what libxpuprof_agent.a needs.
  cat >"$pc" <<EOF
prefix=\${pcfiledir}/../..
includedir=\${prefix}/include
libdir=\${prefix}/lib

Name: xpuprof
Description: xpuprof's C plugin ABI (xpuprof/plugin.h, xpuprof/records.h) and C agent kit (xpuprof/agent.h, libxpuprof_agent)
Version: $version
Cflags: -I\${includedir}
Libs: -L\${libdir} -lxpuprof_agent
Libs.private: -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc
EOF
  chmod 0644 "$pc"
fi

echo "install.sh: installed $prefix/bin/xpuprof, $n_plugins plugins and agents in $prefix/lib/xpuprof/plugins,"
echo "  the plugin author's kit: $prefix/include/xpuprof, $prefix/lib/libxpuprof_agent.{so,a}, $pc, $prefix/share/xpuprof"
"$prefix/bin/xpuprof" --version | sed 's/^/  /'
case ":$PATH:" in
  *":$prefix/bin:"*) ;;
  *) echo "install.sh: $prefix/bin is not on your PATH: add it, e.g. export PATH=\"$prefix/bin:\$PATH\"" ;;
esac
case ":${PKG_CONFIG_PATH:-}:" in
  *":$prefix/lib/pkgconfig:"*) ;;
  *) pkg-config --variable=pcfiledir xpuprof 2>/dev/null | grep -qx "$prefix/lib/pkgconfig" ||
       echo "install.sh: for pkg-config to find xpuprof.pc: export PKG_CONFIG_PATH=\"$prefix/lib/pkgconfig\${PKG_CONFIG_PATH:+:\$PKG_CONFIG_PATH}\"" ;;
esac
