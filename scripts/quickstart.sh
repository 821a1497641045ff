#!/usr/bin/env bash
# Quick start: set up, build, and run a sample DLIO workload on the embedded default
# (an in-process coordinator plus 2 local agent processes), then print the results.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
work=${DLIO_QUICKSTART_DIR:-/tmp/dlio-quickstart}
mkdir -p "$work"
build/bin/dlio-coordinator run configs/workloads/quickstart.yaml \
  --local-agents 2 --accelerators 1 --data-root "$work" --results-dir "$work/results" --output "$work/output"
echo "summary: $work/output/summary.json"
