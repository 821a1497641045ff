#!/usr/bin/env bash
# Quick start: set up, build the two binaries (dlio-coordinator, dlio-agent; no tests), and run a sample DLIO
# workload on the embedded default (an in-process coordinator plus 2 local agent processes), then print the results.
# Environment: BUILD_DIR (default build), DLIO_QUICKSTART_DIR (default $TMPDIR/dlio-quickstart: data and results).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
build_dir=${BUILD_DIR:-build}
work=${DLIO_QUICKSTART_DIR:-${TMPDIR:-/tmp}/dlio-quickstart}
mkdir -p "$work"
# The run's exit status is the script's (0: the job met its AU target; see `dlio-coordinator --help`), after the paths.
rc=0
"$build_dir/bin/dlio-coordinator" run configs/workloads/quickstart.yaml \
  --local-agents 2 --accelerators 1 --data-root "$work" --results-dir "$work/results" --output "$work/output" || rc=$?
echo "summary: $work/output/summary.json"
echo "binaries: $(cd "$build_dir/bin" && pwd) (export PATH=\"$(cd "$build_dir/bin" && pwd):\$PATH\" to call them by name)"
exit $rc
