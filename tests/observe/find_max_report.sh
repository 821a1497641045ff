#!/usr/bin/env bash
# `dlio-coordinator report` on the folder of a --find-max-accelerators search (client/ramp.h FindMaxRampJson): the
# search writes its probes in ramp.json's form into --output; the report, loaded in headless Chromium
# (tests/js/check_report.mjs), draws the AU curve with a fourth dataset, the probes (no console error, no network
# request, every chart drawn), lists them in the order tried, and its data carry ramp.json's probes and maximum.
# shellcheck source=tests/observe/lib.sh
source "$(dirname "$0")/lib.sh"
need chromium node
mkdir -p "$WORK/root"
workload 16 0.002 1 > "$WORK/job.yaml"
"$BIN/dlio-coordinator" run "$WORK/job.yaml" --find-max-accelerators --max-accelerators 3 --data-root "$WORK/root" \
  --results-dir "$WORK/results" --output "$WORK/find" > "$WORK/find.log" 2>&1 || [[ $? == 5 ]]
grep -q "^probes written to $WORK/find/ramp.json" "$WORK/find.log"
"$BIN/dlio-coordinator" report "$WORK/find" -o "$WORK/find.html"
REPORT_TABLE=table.ramp node "$SRC/tests/js/check_report.mjs" "$WORK/find.html" 1 > "$WORK/chromium.log"
cat "$WORK/chromium.log"
grep -q '"id":"chart-ramp".*"datasets":4' "$WORK/chromium.log"
python3 - "$WORK/find.html" "$WORK/find/ramp.json" <<'PY'
import json, re, sys
html = open(sys.argv[1]).read()
data = json.loads(re.search(r'<script type="application/json" id="dlio-data">(.*?)</script>', html, re.S).group(1))
ramp = json.load(open(sys.argv[2]))
assert data[0]["kind"] == "ramp", data[0]["kind"]
assert data[0]["ramp"]["probes"] == ramp["probes"] and ramp["probes"][0] == 1, ramp["probes"]
assert data[0]["ramp"]["find_max"] == ramp["find_max"], ramp
assert sorted(set(ramp["probes"])) == [p["n"] for p in ramp["points"]], ramp
print("find-max probes:", ramp["probes"], "maximum:", ramp["find_max"])
PY
echo "find-max report checks passed"
