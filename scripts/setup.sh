#!/usr/bin/env bash
# First command for a new user: installs what building needs, builds xpuprof in release mode,
# installs it (scripts/install.sh: PREFIX/bin/xpuprof and its plugins in
# PREFIX/lib/xpuprof/plugins; PREFIX is /usr/local as root, ~/.local otherwise, or --prefix DIR)
# and profiles a bundled demo with the installed xpuprof (the CUDA demo where a GPU and nvcc
# exist, else a CPU demo).
#   scripts/setup.sh [--prefix DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=""
if [ "${1:-}" = "--prefix" ] && [ $# -ge 2 ]; then prefix="$2"; fi
if [ -z "$prefix" ]; then
  if [ "$(id -u)" -eq 0 ]; then prefix=/usr/local; else prefix="$HOME/.local"; fi
fi
scripts/install-deps.sh
scripts/install.sh --prefix "$prefix"
XPUPROF="$prefix/bin/xpuprof" exec scripts/demo.sh
