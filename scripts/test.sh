#!/usr/bin/env bash
# Sets up everything the tests need, builds with warnings as errors, checks the lock annotations with clang, and runs
# the whole suite through CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
DLIO_WERROR=ON scripts/setup.sh --test
# The lock contracts (ABSL_GUARDED_BY / ABSL_EXCLUSIVE_LOCKS_REQUIRED on common/mutex.h's Mutex), checked by clang's
# thread-safety analysis over every library: parse only, no code (CMakeLists.txt DLIO_THREAD_SAFETY); about a
# minute on two cores.
build=${BUILD_DIR:-build}
cmake -S . -B "$build/thread-safety" -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
  -DDLIO_THREAD_SAFETY=ON -DDLIO_BUILD_TESTS=OFF -DDLIO_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build "$build/thread-safety" -j"$(nproc)" --target dlio_common dlio_formats dlio_proto dlio_agent_core dlio_agent_grpc \
  dlio_coordinator_core dlio_coordinator_grpc
cd "$build"
ctest -j"$(nproc)" --output-on-failure --timeout 600
