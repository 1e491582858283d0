#!/usr/bin/env bash
# Installs what building and testing xpuprof needs on a fresh Debian machine with Rust:
# - clang/llvm, bpftool, libelf, zlib, pkg-config, make, gcc: the eBPF plugin's skeleton, libbpf
#   (built from source by libbpf-sys) and the C workloads the tests compile; g++: the C plugin
#   header is compiled as C++17 too (sdk/include/xpuprof);
# - libclang-dev: bindgen for the CUPTI and Level Zero bindings;
# - libze1, libze-dev: the Level Zero loader 1.8.12 with its tracing layer, and its headers
#   (level-zero-sys, the levelzero agent and its tests run through the real loader);
# - the CUDA 13 header wheels (nvidia-cuda-cupti, -runtime, -crt), pinned: CUPTI headers without
#   a CUDA toolkit (CUDA_HOME wins when set). 13.5 headers declare every record version from
#   CUDA 13.0 on; the decoder picks the one matching the runtime it meets.
# - python3.11, libpython3.11-dev: the CPython whose frames xpuprof-python's tests read, and its
#   headers (internal ones included) that the layout test compiles its offset probe against;
# - chromium: headless Chromium renders the flame graph SVGs in the flamegraph sink's screenshot
#   tests (plugins/flamegraph/tests/flamegraph/screenshot.rs);
# - golang-go: `go tool pprof`, the reference reader the pprof sink's tests check profile.pb.gz with;
# - the `perfetto` Python package, pinned: Perfetto's official trace protos (perfetto_trace_pb2)
#   that the perfetto sink's tests decode trace.perfetto-trace with.
# - libamdhip64-dev, g++: Debian's HIP runtime 5.2 (the rocm tests put a uprobe on its real
#   hipLaunchKernel and link a C program against it) and the C++ compiler the rocm layout
#   cross-check compiles the SDK's HIP headers with;
# - the ROCm headers of the triton wheel, pinned: the only package here that ships
#   rocprofiler-sdk 1.x and roctracer headers (trimmed); rocprofiler-sdk-sys and roctracer-sys
#   check their hand-written declarations against them. Only the headers are kept (.deps/).
# Idempotent: skips what is already there. Keeps no download caches (CI machines can be short of disk). Needs root (or sudo) for apt.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

APT_PKGS=(clang llvm libclang-dev libelf-dev zlib1g-dev pkg-config bpftool make gcc g++ golang-go libze1 libze-dev python3.11 libpython3.11-dev chromium libamdhip64-dev)
missing=()
for p in "${APT_PKGS[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: apt-get install ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
  $SUDO apt-get clean # the downloaded .deb files: CI machines can be short of disk
fi

PIP_PKGS=("nvidia-cuda-cupti==13.5.25" "nvidia-cuda-runtime==13.5.37" "nvidia-cuda-crt==13.5.37")
if [ -z "${CUDA_HOME:-}" ]; then
  have=$(python3 -c 'import importlib.metadata as m; print(" ".join(f"{p}=={m.version(p)}" for p in ("nvidia-cuda-cupti","nvidia-cuda-runtime","nvidia-cuda-crt")))' 2>/dev/null || true)
  if [ "$have" != "${PIP_PKGS[*]}" ]; then
    echo "install-deps: pip install ${PIP_PKGS[*]}"
    python3 -m pip install -q --no-cache-dir "${PIP_PKGS[@]}"
  fi
fi

PERFETTO_PY="perfetto==0.59.1"
if [ "$(python3 -c 'import importlib.metadata as m; print(m.version("perfetto"))' 2>/dev/null || true)" != "${PERFETTO_PY#*==}" ]; then
  echo "install-deps: pip install $PERFETTO_PY"
  python3 -m pip install -q --no-cache-dir "$PERFETTO_PY"
fi

# Only the wheel's ROCm headers (2.6 MB of its 1 GB) are kept, under .deps/ (git ignores it): CI
# machines can be short of disk.
TRITON_PY="triton==3.9.0" # the same pin as TRITON in tests/testkit/src/struct_offsets.rs
ROCM_INC=".deps/${TRITON_PY/==/-}-amd-include"
if [ ! -f "$ROCM_INC/roctracer/roctracer.h" ] || [ ! -f "$ROCM_INC/rocprofiler-sdk/fwd.h" ]; then
  echo "install-deps: pip download --no-deps $TRITON_PY, keeping its ROCm headers in $ROCM_INC"
  wheel_dir=$(mktemp -d)
  python3 -m pip download -q --no-deps --no-cache-dir --only-binary=:all: -d "$wheel_dir" "$TRITON_PY"
  python3 - "$wheel_dir" "$ROCM_INC" <<'PY'
import pathlib, shutil, sys, zipfile
wheel_dir, dest = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
(wheel,) = wheel_dir.glob("triton-*.whl")
prefix = "triton/backends/amd/include/"
tmp = dest.with_name(dest.name + ".partial")
shutil.rmtree(tmp, ignore_errors=True)
with zipfile.ZipFile(wheel) as z:
    names = [n for n in z.namelist() if n.startswith(prefix) and not n.endswith("/")]
    if not names:
        sys.exit(f"install-deps: {wheel.name} has no {prefix}: the pinned triton wheel changed")
    for n in names:
        out = tmp / n[len(prefix):]
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(z.read(n))
shutil.rmtree(dest, ignore_errors=True)
tmp.rename(dest)
print(f"install-deps: {len(names)} header files in {dest}")
PY
  rm -rf "$wheel_dir"
fi

command -v cargo >/dev/null || { echo "install-deps: cargo not found: install Rust with rustup first" >&2; exit 1; }
echo "install-deps: all build dependencies present"
