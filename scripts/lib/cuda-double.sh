# shellcheck shell=bash
# Sourced by the benchmark scripts that run the release cupti agent on the CUDA test double
# (bench-launch-reuse.sh, bench-launch-levels.sh, bench-annotations.sh), from the repository root:
#   cuda_double NAME   sets AGENT (built with cargo unless XPUPROF_AGENT names one), INC (the CUPTI
#                      headers, or CUPTI_INCLUDE_DIR), D (a temporary directory removed on exit,
#                      with dump/ in it) and builds the double's driver as $D/libcuda.so.1.
cuda_double() {
  AGENT=${XPUPROF_AGENT:-}
  if [ -z "$AGENT" ]; then
    cargo build --release -q -p xpuprof-cupti-agent
    AGENT=$ROOT/target/release/libxpuprof_cupti_agent.so
  fi
  INC=${CUPTI_INCLUDE_DIR:-$(cat "$(find target -path '*cupti-sys-*/out/include_dir.txt' | head -1)")}
  D=$(mktemp -d "/tmp/xpuprof-$1-bench.XXXXXX")
  # shellcheck disable=SC2064
  trap "rm -rf '$D'" EXIT
  cc -Wall -O1 -shared -fPIC -Wl,-soname,libcuda.so.1 -I"$INC" plugins/cupti/tests/doubles/libcuda_double.c \
    -o "$D/libcuda.so.1" -lpthread -ldl
  mkdir -p "$D/dump"
}
