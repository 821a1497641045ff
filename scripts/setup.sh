#!/usr/bin/env bash
# Installs what is missing (Debian 12 packages, as root), then configures and builds into build/.
# Idempotent and quick when everything is there: apt runs only for missing packages, the build is incremental.
#   scripts/setup.sh            runtime + build dependencies; builds dlio-coordinator and dlio-agent only (a fresh
#                               build folder is configured without tests and benchmarks: about half the compile steps)
#   scripts/setup.sh --test     also what the test suite needs (promtool, numpy/h5py/Pillow for cross-checks, fio, openssl;
#                               Prometheus, Chromium, Slurm and Go + sprig for the observability/launcher tests;
#                               clang-14 + libFuzzer for the fuzz targets, built into build/fuzz; Ceph's mon, osd and
#                               radosgw (~250 MiB) + boto3 for the S3 tests), and
#                               builds everything, tests and benchmarks included, in the same build folder, linked
#                               with lld (installed with the above; -DDLIO_LINKER=lld)
# npm packages (package.json + package-lock.json, installed with `npm ci`): Chart.js, which the build embeds into
# `dlio-coordinator report`, always; the test tools (Grafana schema, kubernetes-models, playwright-core) with --test.
# Environment: BUILD_DIR (default build), BUILD_TYPE (default RelWithDebInfo), DLIO_WERROR (ON in CI).
set -euo pipefail
cd "$(dirname "$0")/.."

with_tests=0
[[ "${1:-}" == "--test" ]] && with_tests=1

packages=(cmake g++ make pkg-config
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libssl-dev
  libhdf5-dev prometheus-cpp-dev libyaml-cpp-dev libcli11-dev nlohmann-json3-dev
  libspdlog-dev libfmt-dev libisal-dev libzip-dev liburing-dev libgtest-dev libgmock-dev libbenchmark-dev
  libjpeg62-turbo-dev libpng-dev zlib1g-dev hdf5-plugin-lzf liblzf1 libsqlite3-dev
  libcurl4-openssl-dev libpugixml-dev                          # S3 object storage (storage/s3/client.h)
  libthrift-dev thrift-compiler libboost-dev                   # parquet metadata (third_party/parquet; thrift's headers need boost's)
  libsnappy-dev libzstd-dev liblz4-dev)                        # parquet page codecs
# openssl: the TLS tests make their own certificates; python3: bench/fleet.sh reads the result files.
# hdf5-plugin-lzf is HDF5's lzf filter for dataset.compression: lzf; its plugin needs liblzf1 loaded beside it.
if ((with_tests)); then
  packages+=(prometheus python3-numpy python3-h5py python3-pil fio openssl python3 strace
    universal-ctags                                            # scripts/long-functions.py (meta.NoProductionFunction...)
    chromium                                                   # HTML report loaded headless (tests/js/check_report.mjs)
    slurmctld slurmd slurm-client                              # slurm/dlio.sbatch on 4 emulated nodes
    golang-go golang-github-masterminds-sprig-dev golang-gopkg-yaml.v3-dev  # Helm chart rendering (tests/minihelm)
    clang-14 libclang-rt-14-dev                                # libFuzzer targets (fuzz/, tests/fuzz/run.sh)
    lld                                                        # links the test build 4-5x faster (DLIO_LINKER)
    ceph-mon ceph-osd radosgw python3-boto3)                   # a real S3 gateway (scripts/ceph-rgw.sh) + boto3 checks
fi
# Node.js + npm: in the base image (Node 20); Debian's own when missing.
command -v npm >/dev/null || packages+=(nodejs npm)

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
  # Wait for a dpkg lock held by another apt run on the same machine instead of failing at once.
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=600 --no-install-recommends \
    "${missing[@]}" >/dev/null
fi

# npm packages, pinned by package-lock.json; skipped when node_modules already matches the lock file and mode.
# An "all" install satisfies "runtime" (never drop the test tools a previous --test run installed).
npm_mode=$( ((with_tests)) && echo all || echo runtime)
stamp=node_modules/.dlio-installed
lock=$(sha256sum < package-lock.json)
installed=$(cat "$stamp" 2>/dev/null || true)
if [[ $installed != "$npm_mode $lock" && $installed != "all $lock" ]]; then
  echo "setup: npm ci ($npm_mode)"
  if ((with_tests)); then
    npm ci --no-audit --no-fund --loglevel=error
  else
    npm ci --omit=dev --no-audit --no-fund --loglevel=error
  fi
  echo "$npm_mode $lock" > "$stamp"
fi

# Configure only what is asked for or missing: a build folder configured before keeps its options (the build itself
# re-runs CMake when a CMakeLists.txt changed), so the Quick start on a test build folder rebuilds nothing.
build_dir=${BUILD_DIR:-build}
fresh=0
[[ -f $build_dir/CMakeCache.txt ]] || fresh=1
cmake_args=()
if ((with_tests)); then
  # lld: ~60 executables, each with the debug info of every room it links (README.md: how the suite is built).
  cmake_args+=(-DDLIO_BUILD_TESTS=ON -DDLIO_BUILD_BENCH=ON -DDLIO_LINKER=lld)
elif ((fresh)); then
  cmake_args+=(-DDLIO_BUILD_TESTS=OFF -DDLIO_BUILD_BENCH=OFF)
fi
if [[ -n ${BUILD_TYPE:-} ]] || ((fresh)); then cmake_args+=(-DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}"); fi
if [[ -n ${DLIO_WERROR:-} ]] || ((fresh)); then cmake_args+=(-DDLIO_WERROR="${DLIO_WERROR:-OFF}"); fi
if ((${#cmake_args[@]})); then
  cmake -S . -B "$build_dir" "${cmake_args[@]}" >/dev/null
fi
if ((with_tests)); then
  cmake --build "$build_dir" -j"$(nproc)"
else
  cmake --build "$build_dir" -j"$(nproc)" --target dlio-coordinator dlio-agent
fi

# The libFuzzer targets (fuzz/CMakeLists.txt): a clang build of their own, with ASan and UBSan, inside the build folder.
if ((with_tests)); then
  cmake -S . -B "$build_dir/fuzz" -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 -DDLIO_FUZZ=ON \
    -DDLIO_BUILD_TESTS=OFF -DDLIO_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDLIO_LINKER=lld >/dev/null
  cmake --build "$build_dir/fuzz" -j"$(nproc)" --target fuzz_workload fuzz_coordinator
fi
