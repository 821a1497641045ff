#!/usr/bin/env bash
# docs/metrics.md is the agent's and the coordinator's /metrics: after a small job (so that every family has a
# series: per-rank histograms, the coordinator's barrier wait), both endpoints are scraped and compared with the
# catalogue (names, types, HELP texts, units) and with the README's tables (names, types, units), and pass
# `promtool check metrics`.
# shellcheck source=tests/observe/lib.sh
source "$(dirname "$0")/lib.sh"
need promtool node curl
grpc_port=$(free_port); coord_metrics=$(free_port); agent_metrics=$(free_port)
mkdir -p "$WORK/root"
start coordinator "$BIN/dlio-coordinator" serve --listen "127.0.0.1:$grpc_port" --metrics-listen "127.0.0.1:$coord_metrics" \
  --results-dir "$WORK/results"
start agent "$BIN/dlio-agent" --coordinator "127.0.0.1:$grpc_port" --data-root "$WORK/root" --name a1 --accelerators 2 \
  --metrics-listen "127.0.0.1:$agent_metrics" --reconnect-window 3 --log-level warn
workload 8 0.001 1 > "$WORK/job.yaml"
job_ran "$BIN/dlio-coordinator" submit "$WORK/job.yaml" --coordinator "127.0.0.1:$grpc_port" --wait-for-agents 20 --wait-for-coordinator 20 \
  --output "$WORK/out" > "$WORK/submit.log" 2>&1
curl -sf "127.0.0.1:$agent_metrics/metrics" > "$WORK/agent.txt"
curl -sf "127.0.0.1:$coord_metrics/metrics" > "$WORK/coordinator.txt"
promtool check metrics < "$WORK/agent.txt"
promtool check metrics < "$WORK/coordinator.txt"
# The S3 families appear only once an agent used object storage: tests/s3_test.cc checks them on an S3 job's scrape.
node "$SRC/tests/js/check_catalogue.mjs" --optional dlio_s3_ "$SRC/docs/metrics.md" "$WORK/agent.txt" \
  "$WORK/coordinator.txt"
node "$SRC/tests/js/check_catalogue.mjs" --summary --optional dlio_s3_ "$SRC/README.md" "$WORK/agent.txt" \
  "$WORK/coordinator.txt"
