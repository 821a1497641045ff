#!/usr/bin/env bash
# Sets up everything the tests need, builds with warnings as errors, checks the lock annotations with clang, and runs
# the whole suite through CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each stage's wall time, printed at the end (and on failure): CI's budget is watched stage by stage (README.md,
# "How the suite is built").
stages=()
stage_start=$SECONDS
stage_done() { stages+=("$1 $((SECONDS - stage_start)) s"); stage_start=$SECONDS; }
trap 'rc=$?; ((${#stages[@]})) && echo "test.sh stages: ${stages[*]}" >&2; exit $rc' EXIT
DLIO_WERROR=ON scripts/setup.sh --test
stage_done "setup+build(+fuzz):"
# The lock contracts (ABSL_GUARDED_BY / ABSL_EXCLUSIVE_LOCKS_REQUIRED on base/mutex.h's Mutex), checked by clang's
# thread-safety analysis over every room, the two mains and bench/: parse only, no code (CMakeLists.txt
# DLIO_THREAD_SAFETY); about a minute on two cores.
build=${BUILD_DIR:-build}
cmake -S . -B "$build/thread-safety" -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
  -DDLIO_THREAD_SAFETY=ON -DDLIO_BUILD_TESTS=OFF -DDLIO_BUILD_BENCH=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build "$build/thread-safety" -j"$(nproc)"
stage_done "thread-safety:"
cd "$build"
ctest -j"$(nproc)" --output-on-failure --timeout 600
stage_done "ctest:"
