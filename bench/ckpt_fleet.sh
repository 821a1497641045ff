#!/usr/bin/env bash
# Checkpoint memory benchmark (issue 3 acceptance): a coordinator and 2 agents (1 accelerator each) on loopback run
# a checkpoint-only job of a ~20.7 GiB transformer checkpoint (ZeRO-3: both ranks write a model and an optimizer
# shard, ~10.4 GiB each), fsync on, then load it back after evicting the files' pages. Prints each agent's peak RSS
# (VmHWM from /proc) against the 2 GiB bound and the save/load figures (DLIO's rank-0 and MLPerf's max/min over
# ranks). A benchmark, not a CTest test (it writes and reads ~41 GiB); tests/checkpoint_test.cc
# (CheckpointMemory.*) is its ~1 GiB variant.
#
#   bench/ckpt_fleet.sh [--layers L] [--dir DIR] [--keep]
# --layers: transformer layers (24 = 20.7 GiB; each layer ~0.79 GiB); --dir: the work folder's parent (default /tmp;
# needs the checkpoint's size free). Environment: DLIO_BIN_DIR (default build/bin).
#
# Measured 2026-11-22 05:41 UTC on the shared 2-core dev VM (other builds running), /tmp on virtio disk:
#   20.74 GiB in 4 files; agent peak RSS 86 MiB each (bound 2048 MiB);
#   save (fsync): DLIO rank-0 36.99 s 0.56 GiB/s, MLPerf max 39.41 s min 0.53 GiB/s;
#   load (pages evicted): 22.51 s, 0.92 GiB/s (both figures); wall time 65 s.
set -euo pipefail
cd "$(dirname "$0")/.."

layers=24
parent=/tmp
keep=0
while (($#)); do
  case "$1" in
    --layers) layers=$2; shift 2 ;;
    --dir) parent=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    *) echo "usage: $0 [--layers L] [--dir DIR] [--keep]" >&2; exit 2 ;;
  esac
done
BIN=${DLIO_BIN_DIR:-build/bin}
WORK=$(mktemp -d "$parent/dlio-ckpt-bench-XXXXXX")
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  ((keep)) || rm -rf "$WORK"
}
trap cleanup EXIT

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$WORK/root"
"$BIN/dlio-coordinator" serve --listen "127.0.0.1:$port" --results-dir "$WORK/results" > "$WORK/coordinator.log" 2>&1 &
pids+=($!)
agent_pids=()
for n in 0 1; do
  "$BIN/dlio-agent" --coordinator "127.0.0.1:$port" --data-root "$WORK/root" --name "agent-$n" --accelerators 1 \
    --reconnect-window 3 > "$WORK/agent-$n.log" 2>&1 &
  pids+=($!)
  agent_pids+=($!)
done

cat > "$WORK/job.yaml" <<YAML
model:
  name: ckpt-bench
  type: transformer
  num_layers: $layers
  parallelism:
    zero_stage: 3
  transformer:
    vocab_size: 32000
    hidden_size: 2048
    ffn_hidden_size: 8192
    num_attention_heads: 32
    num_kv_heads: 8
workflow:
  train: false
  checkpoint: true
checkpoint:
  checkpoint_folder: ckpt
  fsync: true
  num_checkpoints_write: 1
  num_checkpoints_read: 1
dlio_ext:
  checkpoint_evict_cache: true
YAML

start=$(date +%s.%N)
"$BIN/dlio-coordinator" submit "$WORK/job.yaml" --coordinator "127.0.0.1:$port" --agents 2 --wait-for-agents 30 --wait-for-coordinator 30 \
  --output "$WORK/out" | tee "$WORK/submit.log"
end=$(date +%s.%N)

echo
echo "checkpoint files on disk: $(du -sb "$WORK/root/ckpt" | cut -f1) bytes in $(find "$WORK/root/ckpt" -type f | wc -l) files"
for i in 0 1; do
  hwm=$(awk '/^VmHWM:/ {print $2}' "/proc/${agent_pids[$i]}/status")
  echo "agent-$i peak RSS (VmHWM): $((hwm / 1024)) MiB (bound: 2048 MiB)"
done
python3 - "$WORK/out/summary.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))["metric"]
print(f"checkpoint size: {m['checkpoint_size_GB']:.2f} GiB")
for op in ("save", "load"):
    print(f"{op}: DLIO rank-0 {m[op + '_checkpoint_duration_mean_seconds']:.2f} s, "
          f"{m[op + '_checkpoint_io_mean_GB_per_second']:.2f} GiB/s; MLPerf max {m[op + '_checkpoint_mlperf_duration_mean_seconds']:.2f} s, "
          f"min {m[op + '_checkpoint_mlperf_io_mean_GB_per_second']:.2f} GiB/s")
PY
echo "wall time: $(python3 -c "print(f'{$end - $start:.1f}')") s"
