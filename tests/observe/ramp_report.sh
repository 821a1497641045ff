#!/usr/bin/env bash
# `dlio-coordinator report` on a ramp folder (run --ramp, client/ramp.h): a ramp over 1, 2 and 4 accelerators ->
# its report, loaded in headless Chromium (tests/js/check_report.mjs): no console error, no network request, the
# curve drawn with data (one chart), the table of the points; the page's data carry the knee of ramp.json and the
# page marks it. A ramp folder with another folder is refused with one line.
# shellcheck source=tests/observe/lib.sh
source "$(dirname "$0")/lib.sh"
need chromium node
mkdir -p "$WORK/root"
workload 16 0.002 1 > "$WORK/job.yaml"
"$BIN/dlio-coordinator" run "$WORK/job.yaml" --ramp accelerators=1,2,4 --data-root "$WORK/root" \
  --results-dir "$WORK/results" --output "$WORK/ramp" > "$WORK/ramp.log" 2>&1
grep -q '^knee: ' "$WORK/ramp.log"
"$BIN/dlio-coordinator" report "$WORK/ramp" -o "$WORK/ramp.html"
REPORT_TABLE=table.ramp node "$SRC/tests/js/check_report.mjs" "$WORK/ramp.html" 1 ${REPORT_SCREENSHOT:+"$REPORT_SCREENSHOT"}
python3 - "$WORK/ramp.html" "$WORK/ramp/ramp.json" <<'PY'
import json, re, sys
html = open(sys.argv[1]).read()
data = json.loads(re.search(r'<script type="application/json" id="dlio-data">(.*?)</script>', html, re.S).group(1))
ramp = json.load(open(sys.argv[2]))
assert data[0]["kind"] == "ramp", data[0]["kind"]
assert data[0]["ramp"]["knee"] == ramp["knee"], (data[0]["ramp"]["knee"], ramp["knee"])
assert [p["n"] for p in data[0]["ramp"]["points"]] == [1, 2, 4]
print("ramp knee:", ramp["knee"])
PY
if "$BIN/dlio-coordinator" report "$WORK/ramp" "$WORK/ramp/accelerators-1" -o "$WORK/x.html" 2> "$WORK/err.txt"; then
  exit 1
fi
[[ $(wc -l < "$WORK/err.txt") == 1 ]] && grep -q 'ramp folder is reported on its own' "$WORK/err.txt"
echo "ramp report checks passed"
