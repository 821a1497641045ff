#!/usr/bin/env bash
# `dlio-coordinator report`: two real jobs (embedded fleet, 2 local agents) -> a report of one and a comparison of
# both, each loaded in headless Chromium (Debian's, via playwright-core): no console error, no network request,
# three charts drawn with data, a per-rank table. Bad input is refused with one line.
# shellcheck source=tests/observe/lib.sh
source "$(dirname "$0")/lib.sh"
need chromium node
mkdir -p "$WORK/root"
workload 16 0.002 2 > "$WORK/job.yaml"
for name in a b; do
  compute=$([[ $name == a ]] && echo 0.002 || echo 0.004)
  "$BIN/dlio-coordinator" run "$WORK/job.yaml" --local-agents 2 --data-root "$WORK/root" --results-dir "$WORK/results" \
    --output "$WORK/$name" --set "train.computation_time=$compute" > "$WORK/run-$name.log" 2>&1
done
"$BIN/dlio-coordinator" report "$WORK/a" -o "$WORK/one.html"
"$BIN/dlio-coordinator" report "$WORK/a" "$WORK/b" -o "$WORK/compare.html"
grep -q 'Chart.js v' "$WORK/compare.html"
if grep -Eq '<script[^>]+src=|<link[^>]+href=' "$WORK/compare.html"; then echo "report loads external resources" >&2; exit 1; fi
node "$SRC/tests/js/check_report.mjs" "$WORK/one.html" 3
node "$SRC/tests/js/check_report.mjs" "$WORK/compare.html" 3 ${REPORT_SCREENSHOT:+"$REPORT_SCREENSHOT"}
if "$BIN/dlio-coordinator" report "$WORK/missing" -o "$WORK/x.html" 2> "$WORK/err.txt"; then exit 1; fi
[[ $(wc -l < "$WORK/err.txt") == 1 ]] && grep -q missing "$WORK/err.txt" && [[ ! -e $WORK/x.html ]]
echo "report checks passed"
