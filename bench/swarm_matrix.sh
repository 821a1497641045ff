#!/usr/bin/env bash
# The coordinator-at-scale figures of bench/RESULTS.md (issue 14): dlio-bench-swarm (bench/agent_swarm.cc) at several
# fleet sizes and computation times, one run each, in a row, printed as one Markdown table row per run with the
# machine's load average beside it (a shared machine moves the figures; read the load with them).
#
#   bench/swarm_matrix.sh                                   256, 1024 and 4096 sessions x computation_time 0.05 and 0
#   bench/swarm_matrix.sh --bin-dir build/before --protocol-version 3 --label before
# Options: --bin-dir DIR (dlio-coordinator to measure; default build/bin), --swarm PATH (default build/bin/
# dlio-bench-swarm), --agents "N ...", --computes "S ...", --steps S (default 200), --protocol-version V, --label L,
# --out DIR (one JSON document per run; default a temp folder, kept).
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib_swarm.sh

swarm_defaults
agents="256 1024 4096"
computes="0.05 0"
steps=200
label=after
while (($#)); do
  if swarm_option "$@"; then shift "$swarm_shift"; continue; fi
  case "$1" in
    --protocol-version) swarm_args=(--protocol-version "$2"); shift 2 ;;
    *) echo "swarm_matrix.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
swarm_setup swarm_matrix.sh dlio-swarm-matrix

echo "| run | agents | compute s | load (1 min) | attach s | threads attached/peak | CPU us per agent-step (window / job) | release p50 / p99 ms | AU % | RSS MiB |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for n in $agents; do
  for c in $computes; do
    if ! swarm_run "$label" "$n" "$c" "$steps"; then
      echo "| $label | $n | $c | $load | failed: see $log |||||||"
      continue
    fi
    python3 - "$json" "$label" "$load" <<'EOF'
import json, sys
j, label, load = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
f = lambda v, fmt: "n/m" if v is None else fmt % v
print(f"| {label} | {j['agents']} | {j['computation_time_s']:g} | {load} | {j['attach_s']:.2f} | "
      f"{j['coordinator_threads_attached']} / {j['coordinator_threads_peak']} | "
      f"{f(j['coordinator_cpu_us_per_agent_step_window'], '%.1f')} / {j['coordinator_cpu_us_per_agent_step_job']:.1f} | "
      f"{j['release_latency_ms_p50']:.1f} / {j['release_latency_ms_p99']:.1f} | {f(j['train_au_percent'], '%.1f')} | "
      f"{j['coordinator_rss_mib']:.0f} |")
EOF
  done
done
echo "runs kept in $out" >&2
