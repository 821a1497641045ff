#!/usr/bin/env bash
# dashboards/: rules pass `promtool check rules` and `promtool test rules`; every dashboard validates against the
# JSON Schema generated from npm @grafana/schema (and a deliberately broken one is rejected, so the check bites); the
# AU gauge's threshold mapping must name a field of its target query.
# shellcheck source=tests/observe/lib.sh
source "$(dirname "$0")/lib.sh"
need promtool node
export DASHBOARD_SCHEMA_CACHE=$WORK/dashboard.schema.json
promtool check rules "$SRC/dashboards/rules.yml"
(cd "$SRC/dashboards" && promtool test rules rules_test.yml)
node "$SRC/tests/js/validate_dashboards.mjs" "$SRC"/dashboards/*.json
# Negative: a panel width as a string and no schemaVersion must be rejected.
node -e '
const d = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
delete d.schemaVersion; d.panels.find((p) => p.type !== "row").gridPos.w = "wide";
require("fs").writeFileSync(process.argv[2], JSON.stringify(d));' "$SRC/dashboards/agents.json" "$WORK/broken.json"
if node "$SRC/tests/js/validate_dashboards.mjs" "$WORK/broken.json" > "$WORK/broken.out"; then
  echo "a broken dashboard passed validation" >&2; exit 1
fi
grep -q "schemaVersion" "$WORK/broken.out" && grep -q "gridPos/w must be number" "$WORK/broken.out"
echo "broken dashboard rejected as expected"
# Negative: the AU gauge's threshold mapped to a field its target query does not return.
sed 's/"fieldName": "target"/"fieldName": "au_target"/' "$SRC/dashboards/run-overview.json" > "$WORK/unmapped.json"
if node "$SRC/tests/js/validate_dashboards.mjs" "$WORK/unmapped.json" > "$WORK/unmapped.out"; then
  echo "a threshold mapped to no field passed validation" >&2; exit 1
fi
grep -q 'configFromData maps field "au_target", query B returns "target"' "$WORK/unmapped.out"
echo "unmapped threshold rejected as expected"
