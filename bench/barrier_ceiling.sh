#!/usr/bin/env bash
# The harness ceiling of the step barrier (issue 29 item 3, first part): AU of a job whose storage costs nothing
# (the synthetic format reads nothing) against the ideal (compute / (compute + 0) = 100 %), for both
# dlio_ext.barrier modes, over `dlio-coordinator run --local-agents N` (N dlio-agent processes, 1 accelerator each,
# on loopback). Usage: bench/barrier_ceiling.sh BUILD_BIN_DIR [AGENTS...]  (default agents: 4 8 16)
# Prints one markdown row per (compute, agents, mode): AU mean %, and the wall time of the run.
set -euo pipefail
bin=${1:?usage: barrier_ceiling.sh BUILD_BIN_DIR [AGENTS...]}
shift
if [ $# -eq 0 ]; then agents=(4 8 16); else agents=("$@"); fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/root"
echo "| compute | agents | barrier | steps | AU mean % | run s |"
echo "|---|---|---|---|---|---|"
# Steps per compute time: about 1-5 s of compute per run.
for spec in 0.0035:300 0.0475:60 0.224:20; do
  compute=${spec%%:*}
  steps=${spec##*:}
  for n in "${agents[@]}"; do
    for mode in after_compute announce; do
      job="$work/job.yaml"
      cat > "$job" <<YAML
model:
  name: barrier-ceiling
framework: pytorch
workflow:
  generate_data: true
  train: true
dataset:
  data_folder: data
  format: synthetic
  num_files_train: $((n * steps))
  num_samples_per_file: 1
  record_length_bytes: 1024
reader:
  data_loader: pytorch
  batch_size: 1
  read_threads: 1
train:
  epochs: 1
  computation_time: $compute
metric:
  au: 0
dlio_ext:
  barrier: $mode
YAML
      out="$work/out-$n-$mode-$compute"
      t0=$(date +%s.%N)
      if "$bin/dlio-coordinator" run "$job" --local-agents "$n" --accelerators 1 --data-root "$work/root" \
          --output "$out" > "$work/log" 2>&1; then
        t1=$(date +%s.%N)
        au=$(python3 -c "import json,sys; print('%.2f' % json.load(open(sys.argv[1]))['metric']['train_au_mean_percentage'])" "$out/summary.json")
        echo "| ${compute} s | $n | $mode | $steps | $au | $(python3 -c "print('%.1f' % ($t1 - $t0))") |"
      else
        echo "| ${compute} s | $n | $mode | $steps | failed: $(tail -1 "$work/log") | |"
      fi
    done
  done
done
