#!/usr/bin/env bash
# Installs what is missing (Debian 12 packages, as root), then configures and builds into build/.
# Idempotent and quick when everything is there: apt runs only for missing packages, the build is incremental.
#   scripts/setup.sh            runtime + build dependencies
#   scripts/setup.sh --test     also what the test suite needs (promtool, numpy/h5py for cross-checks, fio, strace)
# Environment: BUILD_DIR (default build), BUILD_TYPE (default RelWithDebInfo), DLIO_WERROR (ON in CI).
set -euo pipefail
cd "$(dirname "$0")/.."

with_tests=0
[[ "${1:-}" == "--test" ]] && with_tests=1

packages=(cmake g++ make pkg-config
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libhdf5-dev prometheus-cpp-dev libyaml-cpp-dev libcli11-dev nlohmann-json3-dev
  libspdlog-dev libfmt-dev libisal-dev libzip-dev liburing-dev libgtest-dev libgmock-dev)
if ((with_tests)); then
  packages+=(prometheus python3-numpy python3-h5py fio strace)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    echo "setup: missing packages: ${missing[*]}; run as root (or: sudo apt-get install ${missing[*]})" >&2
    exit 1
  fi
  echo "setup: installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

build_dir=${BUILD_DIR:-build}
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" -DDLIO_WERROR="${DLIO_WERROR:-OFF}" >/dev/null
cmake --build "$build_dir" -j"$(nproc)"
