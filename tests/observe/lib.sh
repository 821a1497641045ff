# shellcheck shell=bash disable=SC2034  # sourced by tests/observe/*.sh, which use SRC, BIN, WORK
# Helpers for the observability tests (sourced). Every process started with `start` is killed (TERM, then KILL
# after 5 s) when the test exits, pass or fail; the scratch folder is removed unless KEEP=1.
# The EXIT trap is this file's: a test adds its own clean-up steps with `on_exit FUNCTION` (run first) instead of
# setting another trap, so the test's exit status (read first thing in `cleanup`) stays its verdict.
set -euo pipefail
SRC=${DLIO_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
BIN=${DLIO_BIN_DIR:-$SRC/build/bin}
WORK=$(mktemp -d /tmp/dlio-observe-XXXXXX)
PIDS=()
EXIT_HOOKS=()

# on_exit FUNCTION: runs FUNCTION when the test exits, before the processes are stopped.
on_exit() { EXIT_HOOKS+=("$1"); }

cleanup() {
  local rc=$?
  for hook in "${EXIT_HOOKS[@]}"; do "$hook" || true; done
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  done
  if ((rc != 0)); then
    for log in "$WORK"/*.log; do [[ -f $log ]] && { echo "---- $log (last 30 lines)"; tail -30 "$log"; }; done
  fi
  if [[ ${KEEP:-0} == 1 ]]; then echo "kept $WORK"; else rm -rf "$WORK"; fi
  exit $rc
}
trap cleanup EXIT

# start NAME CMD...: runs CMD in the background with its output in $WORK/NAME.log.
start() {
  local name=$1; shift
  "$@" >"$WORK/$name.log" 2>&1 &
  PIDS+=($!)
}

# job_ran CMD...: runs a `dlio-coordinator run|submit` and succeeds when the job ran to its end: exit 0 (met its AU
# target), 5 (below it) or 6 (AU not measured). The verdict of a test job on a loaded machine is not these tests'
# subject; any other status fails the test.
job_ran() {
  local rc=0
  "$@" || rc=$?
  ((rc == 0 || rc == 5 || rc == 6)) || { echo "the job did not run to its end (exit $rc): $*" >&2; return 1; }
}

# A TCP port on 127.0.0.1 that was free a moment ago.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# wait_for SECONDS CMD...: polls CMD every 0.1 s until it succeeds; fails the test on timeout.
wait_for() {
  local deadline=$((SECONDS + $1)); shift
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || { echo "timed out waiting for: $*" >&2; return 1; }
    sleep 0.1
  done
}

need() {
  for tool in "$@"; do
    command -v "$tool" >/dev/null || { echo "missing tool '$tool': run scripts/setup.sh --test" >&2; exit 1; }
  done
  [[ -d $SRC/node_modules ]] || { echo "missing node_modules: run scripts/setup.sh --test (npm ci)" >&2; exit 1; }
}

# A DLIO workload: npz, generated, FILES files of one 64 KiB sample, batch 1, COMPUTE s per step, EPOCHS epochs.
workload() {
  local files=$1 compute=$2 epochs=$3
  cat <<YAML
model:
  name: observe
framework: pytorch
workflow:
  generate_data: true
  train: true
dataset:
  data_folder: data
  format: npz
  num_files_train: $files
  num_samples_per_file: 1
  record_length_bytes: 65536
reader:
  data_loader: pytorch
  batch_size: 1
  read_threads: 2
  prefetch_size: 2
train:
  epochs: $epochs
  computation_time: $compute
metric:
  au: 0.90
YAML
}
