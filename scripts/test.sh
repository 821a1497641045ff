#!/usr/bin/env bash
# Sets up everything the tests need, builds with warnings as errors, and runs the whole suite through CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
DLIO_WERROR=ON scripts/setup.sh --test
cd "${BUILD_DIR:-build}"
ctest -j"$(nproc)" --output-on-failure --timeout 600
