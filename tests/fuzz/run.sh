#!/usr/bin/env bash
# Runs one libFuzzer target (fuzz/) for a bounded time: the suite's run (tests/CMakeLists.txt) and a longer one by
# hand, e.g. `DLIO_FUZZ_BIN_DIR=build/fuzz/bin bash tests/fuzz/run.sh fuzz_workload 600`.
#   run.sh TARGET SECONDS
# The corpus starts from seeds (fuzz_workload: every workload file of configs/ and tests/fixtures/, behind the
# options byte the target reads first); new inputs found stay in a temporary folder. Exit status: libFuzzer's (non-zero
# on a crash, a sanitizer report, a timeout of one input or a leak); the crashing input is kept under
# $DLIO_FUZZ_ARTIFACTS (default /tmp) and printed as hex. The last lines give the executions run.
set -euo pipefail
target=${1:?usage: run.sh TARGET SECONDS}
seconds=${2:?usage: run.sh TARGET SECONDS}
src=${DLIO_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
bin="${DLIO_FUZZ_BIN_DIR:?set DLIO_FUZZ_BIN_DIR to the fuzz build\'s bin folder}/$target"
if [[ ! -x $bin ]]; then
  echo "fuzz: $bin is missing: scripts/setup.sh --test builds the fuzz targets with clang-14 into build/fuzz" >&2
  exit 1
fi
work=$(mktemp -d)
cleanup() {
  rc=$?
  rm -rf "$work"
  exit $rc
}
trap cleanup EXIT
mkdir -p "$work/corpus" "$work/seeds"
if [[ $target == fuzz_workload ]]; then
  n=0
  for f in "$src"/configs/workloads/*.yaml "$src"/tests/fixtures/dlio-workloads/*.yaml; do
    [[ -f $f ]] || continue
    { printf '\002'; cat "$f"; } > "$work/seeds/$((n++))"
    { printf '\003'; cat "$f"; } > "$work/seeds/$((n++))"  # --strict too: its error lists several lines
  done
fi
artifacts=${DLIO_FUZZ_ARTIFACTS:-/tmp}/dlio-fuzz-$target-$$-
set +e
"$bin" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=3072 -print_final_stats=1 \
  -artifact_prefix="$artifacts" "$work/corpus" "$work/seeds" > "$work/log" 2>&1
status=$?
set -e
grep -E "^(#[0-9]+ *DONE|stat::number_of_executed_units|stat::peak_rss_mb|==[0-9]+==ERROR|SUMMARY)" "$work/log" || true
if ((status != 0)); then
  tail -40 "$work/log"
  for a in "$artifacts"*; do
    [[ -f $a ]] && { echo "input kept in $a:"; od -An -tx1 "$a" | head -20; }
  done
fi
exit $status
