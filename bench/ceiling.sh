#!/usr/bin/env bash
# The harness ceiling (issue 29 item 3): AU with storage that costs nothing against the ideal AU, at 16, 64 and 256
# agents for 3.5, 47.5 and 224 ms of compute per step (cosmoflow_h100, retinanet_b200, resnet50_h100), one run each
# before (`dlio_ext.barrier: after_compute`, the previous protocol) and after (`announce`, the default), the two
# back to back so that they share the machine's load, printed as one Markdown table row per run with the machine's
# load beside it.
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
#   bench/ceiling.sh                                        both protocols, runs "before" and "after"
#   bench/ceiling.sh --barrier after_compute --bin-dir build-main/bin --label main
# Options: --bin-dir DIR (dlio-coordinator to measure; default build/bin), --swarm PATH (default build/bin/
# dlio-bench-swarm), --agents "N ...", --computes "S ..." (seconds), --steps S (default: about 8 s of compute per run,
# 30 to 400 steps), --barrier after_compute|announce|both (default both: "before" then "after" for each size and
# compute), --label L (the run column, with one protocol only), --out DIR (one JSON document and log per run;
# default a temp folder, kept), --relay on|off (default off: on, the sessions relay and a job of 33 sessions or
# more meets through the relay tree; the run column says "tree"), --timer-threads "T ..." (the swarm's timer
# threads; default the swarm's, one per core; with several values each size and compute runs once per value, back
# to back in the order given, the run column naming it: "after, 1 timer"), --wake "W ..." (the swarm's --wake:
# processed, the default, or scheduled: the sessions' steps from their timers' instants, as agents with a core each;
# several values run back to back, the run column naming it).
#   bench/ceiling.sh --barrier announce --agents "16 64" --timer-threads "1 2"   one timer thread against two
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib_swarm.sh

swarm_defaults
agents="16 64 256"
computes="0.0035 0.0475 0.224"
steps=
label=
barrier=both
relay=off
timer_threads=default
wake=processed
while (($#)); do
  if swarm_option "$@"; then shift "$swarm_shift"; continue; fi
  case "$1" in
    --barrier) barrier=$2; shift 2 ;;
    --relay) relay=$2; shift 2 ;;
    --timer-threads) timer_threads=$2; shift 2 ;;
    --wake) wake=$2; shift 2 ;;
    *) echo "ceiling.sh: unknown option $1 (--bin-dir, --swarm, --agents, --computes, --steps, --barrier, --label," \
            "--out, --relay, --timer-threads, --wake)" >&2
       exit 2 ;;
  esac
done
case "$barrier" in
  both) modes="after_compute announce" ;;
  after_compute|announce) modes=$barrier ;;
  *) echo "ceiling.sh: --barrier $barrier: allowed are after_compute, announce, both" >&2; exit 2 ;;
esac
if [[ -n $label && $barrier == both ]]; then
  echo "ceiling.sh: --label names the runs of one protocol: give --barrier after_compute or announce too" >&2
  exit 2
fi
case "$relay" in
  on|off) ;;
  *) echo "ceiling.sh: --relay $relay: allowed are on, off" >&2; exit 2 ;;
esac
for t in $timer_threads; do
  [[ $t == default || $t =~ ^[1-9][0-9]*$ ]] || {
    echo "ceiling.sh: --timer-threads $timer_threads: allowed are positive whole numbers" >&2; exit 2; }
done
for w in $wake; do
  [[ $w == processed || $w == scheduled ]] || {
    echo "ceiling.sh: --wake $wake: allowed are processed, scheduled (or both, space-separated)" >&2; exit 2; }
done
swarm_setup ceiling.sh dlio-ceiling

echo "| run | agents | compute ms | steps | load (1 min) | AU % | ideal AU % | ceiling % | release p50 / p99 ms | coordinator / swarm CPU us per agent-step | 2-core load % |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for n in $agents; do
  for c in $computes; do
    # About 8 s of compute per run (3.5 ms: 400 steps), at least 30 so the steady window has steps in it.
    s=${steps:-$(python3 -c "print(max(30, min(400, round(8 / $c))))")}
    for mode in $modes; do
      for t in $timer_threads; do
      for w in $wake; do
        if [[ -n $label ]]; then run=$label; elif [[ $mode == announce ]]; then run=after; else run=before; fi
        [[ $relay == on ]] && run="$run, tree"
        swarm_args=(--barrier "$mode" --relay "$relay")
        if [[ $t != default ]]; then
          swarm_args+=(--timer-threads "$t")
          [[ $timer_threads == *" "* ]] && run="$run, $t timer$([[ $t == 1 ]] || echo s)"
        fi
        swarm_args+=(--wake "$w")
        [[ $wake == *" "* || $w == scheduled ]] && run="$run, wake $w"
        if ! swarm_run "${run//[ ,]/}" "$n" "$c" "$s"; then
          echo "| $run | $n | $c | $s | $load | failed: see $log |||||"
          continue
        fi
        python3 - "$json" "$run" "$load" "$s" <<'EOF'
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
    done
  done
done
echo "runs kept in $out" >&2
