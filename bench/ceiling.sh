#!/usr/bin/env bash
# The harness ceiling (issue 29 item 3): AU with storage that costs nothing against the ideal AU, at 16, 64 and 256
# agents for 3.5, 47.5 and 224 ms of compute per step (cosmoflow_h100, retinanet_b200, resnet50_h100), one run each,
# printed as one Markdown table row per run with the machine's load beside it.
#
# The storage costs nothing: dlio-bench-swarm (bench/agent_swarm.cc) runs its job with `format: synthetic` (nothing
# is read) and batch 1, so a step is the emulated compute and the step barrier. With the compute constant and no
# storage, the ideal AU is 100 % (compute / (compute + nothing)), so the ceiling is the AU itself: what the harness
# (the barrier's fan-in, the coordinator's release loop, the sessions' own CPU) takes off before storage is asked.
#
# Agents are swarm sessions, not agent processes: on this 2-core VM 256 dlio-agent processes (each with its gRPC,
# heartbeat, loader and rank threads) saturate the cores by themselves (bench/fleet.sh once lost heartbeats past the
# 8 s lease at 256 processes), whereas the swarm runs every session's real protocol code (agent/agent_session.h, its
# own stream and TCP connection) on a few shared threads and reports its own CPU. The "2-core load" column is the
# coordinator's and the swarm's CPU per step over two cores' time per step: near or above 100 % the machine, not the
# protocol, sets the figure.
#
#   bench/ceiling.sh                                        main's protocol, label "before"
#   bench/ceiling.sh --bin-dir build-after/bin --label after
# Options: --bin-dir DIR (dlio-coordinator to measure; default build/bin), --swarm PATH (default build/bin/
# dlio-bench-swarm), --agents "N ...", --computes "S ..." (seconds), --steps S (default: about 8 s of compute per run,
# 30 to 400 steps), --label L, --out DIR (one JSON document and log per run; default a temp folder, kept).
set -euo pipefail
cd "$(dirname "$0")/.."

bin=build/bin
swarm=build/bin/dlio-bench-swarm
agents="16 64 256"
computes="0.0035 0.0475 0.224"
steps=
label=before
out=
while (($#)); do
  case "$1" in
    --bin-dir) bin=$2; shift 2 ;;
    --swarm) swarm=$2; shift 2 ;;
    --agents) agents=$2; shift 2 ;;
    --computes) computes=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --label) label=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "ceiling.sh: unknown option $1 (--bin-dir, --swarm, --agents, --computes, --steps, --label, --out)" >&2
       exit 2 ;;
  esac
done
[[ -x $swarm ]] || { echo "ceiling.sh: $swarm not found (build dlio-bench-swarm first)" >&2; exit 2; }
[[ -x $bin/dlio-coordinator ]] || { echo "ceiling.sh: $bin/dlio-coordinator not found" >&2; exit 2; }
out=${out:-$(mktemp -d /tmp/dlio-ceiling-XXXXXX)}
mkdir -p "$out"

echo "| run | agents | compute ms | steps | load (1 min) | AU % | ideal AU % | ceiling % | release p50 / p99 ms | coordinator / swarm CPU us per agent-step | 2-core load % |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for n in $agents; do
  for c in $computes; do
    # About 8 s of compute per run (3.5 ms: 400 steps), at least 30 so the steady window has steps in it.
    s=${steps:-$(python3 -c "print(max(30, min(400, round(8 / $c))))")}
    load=$(cut -d' ' -f1 /proc/loadavg)
    json=$out/$label-$n-$c.json
    if ! "$swarm" --agents "$n" --steps "$s" --compute "$c" --bin-dir "$bin" --json "$json" \
        > "$out/$label-$n-$c.log" 2>&1; then
      echo "| $label | $n | $c | $s | $load | failed: see $out/$label-$n-$c.log |||||"
      continue
    fi
    python3 - "$json" "$label" "$load" "$s" <<'EOF'
import json, sys
j, label, load, steps = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3], sys.argv[4]
au, c, n = j["train_au_percent"], j["computation_time_s"], j["agents"]
coord, tool = j["coordinator_cpu_us_per_agent_step_window"], j["swarm_cpu_us_per_agent_step_window"]
ideal = 100.0  # constant compute, storage free: compute / (compute + nothing)
if au is None or coord is None or tool is None:
    print(f"| {label} | {n} | {c * 1000:g} | {steps} | {load} | n/m | {ideal:.0f} | n/m | | | |")
    sys.exit()
step_s = c / (au / 100)  # the mean step: compute over AU
busy = (coord + tool) * 1e-6 * n / (2 * step_s) * 100
print(f"| {label} | {n} | {c * 1000:g} | {steps} | {load} | {au:.2f} | {ideal:.0f} | {100 * au / ideal:.2f} | "
      f"{j['release_latency_ms_p50']:.2f} / {j['release_latency_ms_p99']:.2f} | {coord:.0f} / {tool:.0f} | {busy:.0f} |")
EOF
  done
done
echo "runs kept in $out" >&2
