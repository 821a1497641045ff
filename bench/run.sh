#!/usr/bin/env bash
# bench/run.sh [--quick] [more bench.py options]: builds Release into build-release/ and runs the side-by-side
# benchmark (bench/bench.py; method in bench/RESULTS.md). A full run replaces the run table in bench/RESULTS.md;
# --quick (smaller data, same 5 rounds) only prints its table.
# Environment: BENCH_WORK (scratch folder for datasets, iologs and runs; default build-release/bench-work, kept
# between runs so datasets are generated once), JOBS (build parallelism, default nproc).
set -euo pipefail
cd "$(dirname "$0")/.."

quick=0
for a in "$@"; do [[ "$a" == "--quick" ]] && quick=1; done

cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release -DDLIO_BUILD_TESTS=OFF -DDLIO_BUILD_BENCH=ON >/dev/null
cmake --build build-release -j"${JOBS:-$(nproc)}" --target dlio-agent dlio-coordinator dlio-bench-micro \
  dlio-bench-hdf5-loop dlio-bench-hdf5-engines dlio-bench-alloc >/dev/null

work=${BENCH_WORK:-build-release/bench-work}
table=$(mktemp)
trap 'rm -f "$table"' EXIT
python3 bench/bench.py --bin-dir build-release/bin --work "$work" --results "$table" "$@"

if ((!quick)); then
  # RESULTS.md: everything up to the marker is kept (method, analysis); the run table after it is replaced.
  marker='<!-- bench/run.sh writes the latest run below this line -->'
  results=bench/RESULTS.md
  if [[ -f "$results" ]] && grep -qF "$marker" "$results"; then
    sed -n "1,/$(printf '%s' "$marker" | sed 's/[][\/.*^$]/\\&/g')/p" "$results" >"$results.new"
  else
    printf '# Benchmark results\n\n%s\n' "$marker" >"$results.new"
  fi
  printf '\n' >>"$results.new"
  cat "$table" >>"$results.new"
  mv "$results.new" "$results"
  echo "bench: table written to $results" >&2
fi
