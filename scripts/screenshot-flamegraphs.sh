#!/usr/bin/env bash
# Renders the flame graphs of an output directory (flamegraph.svg, flamegraph.cpu.svg) to PNGs
# with headless Chromium, to look at by eye; prints the PNG paths. The PNGs go to PNG_DIR
# (default: the output directory), never into the repository.
#   scripts/screenshot-flamegraphs.sh OUT_DIR [PNG_DIR]
# The same rendering is a test: plugins/flamegraph/tests/flamegraph/screenshot.rs.
set -euo pipefail
out="${1:?usage: scripts/screenshot-flamegraphs.sh OUT_DIR [PNG_DIR]}"
pngs="${2:-$out}"
chromium="$(command -v chromium || command -v chromium-browser || true)"
[ -n "$chromium" ] || { echo "no chromium on PATH: scripts/install-deps.sh installs it" >&2; exit 1; }
profile="$(mktemp -d)"
trap 'rm -rf "$profile"' EXIT
for svg in "$out"/flamegraph*.svg; do
  [ -f "$svg" ] || continue
  w=$(grep -o ' width="[0-9]*"' "$svg" | head -1 | tr -dc 0-9)
  h=$(grep -o ' height="[0-9]*"' "$svg" | head -1 | tr -dc 0-9)
  png="$pngs/$(basename "$svg" .svg).png"
  "$chromium" --headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking \
    --disable-component-update --disable-sync --user-data-dir="$profile" --hide-scrollbars \
    --window-size="${w:-1200},${h:-700}" --screenshot="$png" "file://$(realpath "$svg")" 2>/dev/null
  echo "$png"
done
