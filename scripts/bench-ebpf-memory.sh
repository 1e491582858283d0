#!/usr/bin/env bash
# Memory of xpuprof with the eBPF source while the target starts many short-lived processes:
# peak RSS (max resident set, /usr/bin/time) after N1 and after N2 processes, and the growth per
# process between them. Needs root (eBPF). Usage:
#   scripts/bench-ebpf-memory.sh [XPUPROF_BINARY] [N1] [N2]
# The binary defaults to target/release/xpuprof, else target/debug/xpuprof; its plugin
# directory is the one next to it. Compare two builds by passing each binary in turn.
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${1:-}"
if [ -z "$bin" ]; then
	bin=target/release/xpuprof
	[ -x "$bin" ] || bin=target/debug/xpuprof
fi
n1="${2:-1000}"
n2="${3:-5000}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
peak_kib() {
	# One run: the target starts $1 processes (each /bin/true), sampled at 499 Hz with
	# off-CPU time, written to an archive.
	printf '[source.ebpf]\nsample_hz = 499\noffcpu = true\n' >"$work/cfg.toml"
	/usr/bin/time -f '%M' -o "$work/rss" "$bin" --quiet --source ebpf --sink archive \
		-c "$work/cfg.toml" -o "$work/out$1" -- \
		/bin/sh -c "i=0; while [ \$i -lt $1 ]; do /bin/true; i=\$((i+1)); done" >/dev/null 2>&1
	tail -n 1 "$work/rss"
}
a="$(peak_kib "$n1")"
b="$(peak_kib "$n2")"
per=$(( (b - a) * 1024 / (n2 - n1) ))
echo "xpuprof: $bin"
echo "peak RSS after $n1 processes: $((a / 1024)) MiB"
echo "peak RSS after $n2 processes: $((b / 1024)) MiB"
echo "growth: $per bytes per short-lived process"
