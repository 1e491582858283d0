#!/usr/bin/env bash
# Renders a flame graph from the scripted session (or the SVG given as $1) in headless
# Chromium and writes a PNG screenshot, to check by eye that it renders.
#   plugins/flamegraph/tests/screenshot.sh [flamegraph.svg] [out.png]
set -euo pipefail
root="$(cd "$(dirname "$0")/../../.." && pwd)"
svg="${1:-}"
png="${2:-$root/target/flamegraph-screenshot.png}"
if [[ -z "$svg" ]]; then
    tmp="$(mktemp -d)"
    (cd "$root" && XPUPROF_SCREENSHOT_DIR="$tmp" cargo test -q -p xpuprof-plugin-flamegraph --test flamegraph \
        write_sample_svg_for_screenshot -- --ignored >/dev/null)
    svg="$tmp/flamegraph.svg"
fi
chromium="$(command -v chromium || command -v chromium-browser || true)"
if [[ -z "$chromium" ]]; then
    echo "skipped: no chromium on PATH (apt-get install chromium)" >&2
    exit 0
fi
"$chromium" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1200,700 \
    --screenshot="$png" "file://$(realpath "$svg")" 2>/dev/null
echo "$png"
