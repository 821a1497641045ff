#!/usr/bin/env bash
# `dlio-coordinator report` on a scenario folder (run SCENARIO.yaml --baseline, client/scenario.h,
# docs/scenarios.md): a training member beside a checkpoint member that repeats -> the scenario page, loaded in
# headless Chromium (tests/js/check_report.mjs): no console error, no network request, the timeline of the runs and
# the host telemetry beside it drawn with data (3 charts), the interference table per member; the page's data carry
# every run of scenario.json and the training runs' host series.
# shellcheck source=tests/observe/lib.sh
source "$(dirname "$0")/lib.sh"
need chromium node
mkdir -p "$WORK/root"
workload 16 0.05 1 > "$WORK/train.yaml"
cat > "$WORK/ckpt.yaml" <<'YAML'
model: {name: tiny, type: transformer, num_layers: 2, model_datatype: fp16, optimizer_datatype: fp32,
        transformer: {vocab_size: 1000, hidden_size: 64, ffn_hidden_size: 128, num_attention_heads: 4, num_kv_heads: 4}}
workflow: {train: false, checkpoint: true}
checkpoint: {checkpoint_folder: ckpt, num_checkpoints_write: 1, num_checkpoints_read: 1}
YAML
cat > "$WORK/scenario.yaml" <<'YAML'
scenario:
  name: observe
  members:
    - {name: train, workload: train.yaml, placement: {agents: 1}}
    - {name: ckpt, workload: ckpt.yaml, placement: {agents: 1}, start: 0.5, repeat_every: 1, times: 2}
YAML
"$BIN/dlio-coordinator" run "$WORK/scenario.yaml" --baseline --local-agents 2 --data-root "$WORK/root" \
  --results-dir "$WORK/results" --output "$WORK/scenario" --set dlio_ext.telemetry_interval=1 > "$WORK/scenario.log" 2>&1
grep -q 'verdict: alone ' "$WORK/scenario.log"
"$BIN/dlio-coordinator" report "$WORK/scenario" -o "$WORK/scenario.html"
REPORT_TABLE=table.interference node "$SRC/tests/js/check_report.mjs" "$WORK/scenario.html" 3 \
  ${REPORT_SCREENSHOT:+"$REPORT_SCREENSHOT"}
python3 - "$WORK/scenario.html" "$WORK/scenario/scenario.json" <<'PY'
import json, re, sys
html = open(sys.argv[1]).read()
data = json.loads(re.search(r'<script type="application/json" id="dlio-data">(.*?)</script>', html, re.S).group(1))
doc = json.load(open(sys.argv[2]))
runs = lambda d: sum(len(m[s]["runs"]) for m in d["members"] for s in ("alone", "together") if m[s])
assert runs(data) == runs(doc) == 5, (runs(data), runs(doc))  # 2 alone, 1 + 2 together
assert [m["name"] for m in data["members"]] == ["train", "ckpt"]
folders = {k.rsplit("/", 1)[0] for k in data["telemetry"]}
# Training phases carry host telemetry (docs/results.md); checkpoint-only jobs leave none.
assert {"alone/train", "together/train"} <= folders, sorted(folders)
print("scenario runs:", runs(doc), "telemetry series:", len(data["telemetry"]))
PY
echo "scenario report checks passed"
