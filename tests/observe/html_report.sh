#!/usr/bin/env bash
# `dlio-coordinator report`: two real jobs (embedded fleet, 2 local agents; A with an evaluation after each epoch)
# -> a report of one and a comparison of both, and --mlperf results (training and checkpointing) -> their reports;
# each loaded in headless Chromium (Debian's, via playwright-core): no console error, no network request, every chart
# drawn with data (4 for a job: AU vs target, bytes/s needed vs delivered, samples/s, read-latency CDF; 2 for a
# training --mlperf set, 1 for a checkpointing one), a per-rank (or per-run) table. The per-rank figures are the training steps' (evaluation left out), the comparison lists the
# keys that differ, the verdict is shown. Bad input is refused with one line.
# shellcheck source=tests/observe/lib.sh
source "$(dirname "$0")/lib.sh"
need chromium node
mkdir -p "$WORK/root"
workload 16 0.002 2 > "$WORK/job.yaml"
for name in a b; do
  compute=$([[ $name == a ]] && echo 0.002 || echo 0.004)
  eval_args=()
  [[ $name == a ]] && eval_args=(--set workflow.evaluation=true --set dataset.num_files_eval=8
                                 --set evaluation.eval_time=0.001 --set dataset.data_folder=data-a)
  job_ran "$BIN/dlio-coordinator" run "$WORK/job.yaml" --local-agents 2 --data-root "$WORK/root" --results-dir "$WORK/results" \
    --output "$WORK/$name" --set "train.computation_time=$compute" "${eval_args[@]}" > "$WORK/run-$name.log" 2>&1
done
"$BIN/dlio-coordinator" report "$WORK/a" -o "$WORK/one.html"
"$BIN/dlio-coordinator" report "$WORK/a" "$WORK/b" -o "$WORK/compare.html"
grep -q 'Chart.js v' "$WORK/compare.html"
if grep -Eq '<script[^>]+src=|<link[^>]+href=' "$WORK/compare.html"; then echo "report loads external resources" >&2; exit 1; fi
node "$SRC/tests/js/check_report.mjs" "$WORK/one.html" 4
node "$SRC/tests/js/check_report.mjs" "$WORK/compare.html" 4 ${REPORT_SCREENSHOT:+"$REPORT_SCREENSHOT"}
# The page's data: rank 0's epoch-1 AU is its training blocks' step-weighted AU (the eval entry is not averaged in),
# the comparison names train.computation_time among the differing keys, and the verdict line is there.
python3 - "$WORK/one.html" "$WORK/compare.html" "$WORK/a/0_output.json" <<'PY'
import json, re, sys
def data(path):
    html = open(path).read()
    return json.loads(re.search(r'<script type="application/json" id="dlio-data">(.*?)</script>', html, re.S).group(1))
one, cmp_ = data(sys.argv[1]), data(sys.argv[2])
out = json.load(open(sys.argv[3]))["1"]
blocks = [k for k in out["au"] if k.startswith("block")]
assert "eval" in out["au"], "job A was meant to evaluate"
want = sum(out["au"][b] * len(out["proc"][b]) for b in blocks) / sum(len(out["proc"][b]) for b in blocks)
got = one[0]["ranks"][0]["epochs"][0]["au"]
print("rank 0 epoch 1 AU:", got, "training blocks:", want, "eval:", out["au"]["eval"])
assert abs(got - want) < 1e-9, (got, want)
a, b = cmp_[0]["config"], cmp_[1]["config"]
assert a["train.computation_time"] != b["train.computation_time"]
assert one[0]["verdict"]["line"] and one[0]["verdict"]["status"] in ("PASS", "FAIL"), one[0]["verdict"]
# Issue 26: the limit line under the verdict, with its class.
assert re.match(r"limit: (storage|client CPU|network|page cache|harness|none|undetermined): ",
                one[0]["verdict"]["limit"]), one[0]["verdict"]
assert one[0]["eval"], "the evaluation section has no entry"
PY
# An --mlperf result folder: the runs and the aggregate.
job_ran "$BIN/dlio-coordinator" run "$WORK/job.yaml" --local-agents 1 --data-root "$WORK/root" --results-dir "$WORK/results" \
  --mlperf --mlperf-runs 2 --mlperf-results-dir "$WORK/mlperf" --set workflow.generate_data=false > "$WORK/mlperf.log" 2>&1
"$BIN/dlio-coordinator" report "$WORK/mlperf" -o "$WORK/mlperf.html"
REPORT_TABLE=table.runs node "$SRC/tests/js/check_report.mjs" "$WORK/mlperf.html" 2
# A checkpointing --mlperf set (the scaled llama3-8b rehearsal, one run: a write job and a read job): its runs and a
# chart of write and read GiB/s. Its checkpoints on tmpfs, apart from the results: a CLOSED set whose data and
# results share a file system stops after its first job (Rules.md 4.4.2, docs/mlperf.md).
CKPT_ROOT=$(mktemp -d /dev/shm/dlio-observe-XXXXXX)
remove_ckpt_root() { rm -rf "$CKPT_ROOT"; }
on_exit remove_ckpt_root
job_ran "$BIN/dlio-coordinator" run "$SRC/tests/fixtures/mlperf-scaled/llama3_8b.yaml" --local-agents 2 --accelerators 4 \
  --data-root "$CKPT_ROOT" --results-dir "$WORK/results" --mlperf --mlperf-runs 1 --mlperf-results-dir "$WORK/ckpt" \
  --mlperf-references "$SRC/tests/fixtures/mlperf-scaled" > "$WORK/ckpt.log" 2>&1
"$BIN/dlio-coordinator" report "$WORK/ckpt" -o "$WORK/ckpt.html"
REPORT_TABLE=table.runs node "$SRC/tests/js/check_report.mjs" "$WORK/ckpt.html" 1
if "$BIN/dlio-coordinator" report "$WORK/missing" -o "$WORK/x.html" 2> "$WORK/err.txt"; then exit 1; fi
[[ $(wc -l < "$WORK/err.txt") == 1 ]] && grep -q missing "$WORK/err.txt" && [[ ! -e $WORK/x.html ]]
echo "report checks passed"
