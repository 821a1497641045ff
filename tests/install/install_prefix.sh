#!/usr/bin/env bash
# `cmake --install BUILD --prefix PREFIX` makes a tree a cluster can share: the two binaries in PREFIX/bin, the
# shipped configs, dashboards, Helm chart and sbatch script under PREFIX/share/dlio, the docs under
# PREFIX/share/doc/dlio. Then the installed binary, found on a PATH that holds only PREFIX/bin and the system, runs an
# installed workload file (its local agents are the installed dlio-agent beside it).
set -euo pipefail
build=${DLIO_BUILD_DIR:?set DLIO_BUILD_DIR to the build folder}
work=$(mktemp -d /tmp/dlio-install-XXXXXX)
cleanup() {
  local rc=$?
  ((rc == 0)) || { [[ -f $work/run.log ]] && tail -30 "$work/run.log"; }
  rm -rf "$work"
  exit $rc
}
trap cleanup EXIT
prefix=$work/prefix

cmake --install "$build" --prefix "$prefix" > "$work/install.log"
for f in bin/dlio-coordinator bin/dlio-agent share/dlio/configs/workloads/quickstart.yaml \
         share/dlio/configs/workloads/unet3d_h100.yaml share/dlio/dashboards/run-overview.json \
         share/dlio/dashboards/rules.yml share/dlio/dashboards/prometheus.yml share/dlio/helm/dlio/Chart.yaml \
         share/dlio/helm/dlio/values.schema.json share/dlio/slurm/dlio.sbatch share/doc/dlio/README.md \
         share/doc/dlio/docs/cli.md; do
  [[ -f $prefix/$f ]] || { echo "not installed: PREFIX/$f" >&2; exit 1; }
done
for b in dlio-coordinator dlio-agent; do [[ -x $prefix/bin/$b ]] || { echo "not executable: $b" >&2; exit 1; }; done
# Nothing but the two binaries in bin/ (no test or bench programs).
[[ $(ls "$prefix/bin") == $'dlio-agent\ndlio-coordinator' ]] || { echo "PREFIX/bin holds: $(ls "$prefix/bin")" >&2; exit 1; }

# The installed sbatch script finds the installed binaries without DLIO_BIN_DIR.
sbatch=$prefix/share/dlio/slurm/dlio.sbatch
bash -n "$sbatch"
grep -qx "installed_bin_dir=\"$prefix/bin\"" "$sbatch" || { echo "dlio.sbatch does not point at PREFIX/bin" >&2; exit 1; }

# The installed binary runs an installed config from a folder that has no build tree.
mkdir -p "$work/cwd"
cd "$work/cwd"
PATH="$prefix/bin:/usr/bin:/bin"
[[ $(command -v dlio-coordinator) == "$prefix/bin/dlio-coordinator" ]]
# metric.au=0: this test is about the installed tree, not about this machine's AU (any measured AU passes).
dlio-coordinator run "$prefix/share/dlio/configs/workloads/quickstart.yaml" --local-agents 2 --data-root . \
  --results-dir results --output out --set dataset.record_length_bytes=65536 --set metric.au=0 > "$work/run.log" 2>&1
[[ -f out/summary.json ]] || { echo "no summary.json" >&2; exit 1; }
# A shipped workload by name (DLIO's workload=NAME, or the bare name): the installed binary finds it in
# PREFIX/share/dlio/configs/workloads, not in the source tree it was built from.
for arg in quickstart workload=quickstart; do
  dlio-coordinator run "$arg" --explain > "$work/explain.log" 2>&1
  if ! grep -q "^plan for $prefix/share/dlio/configs/workloads/quickstart.yaml " "$work/explain.log"; then
    echo "$arg: not taken from PREFIX/share/dlio/configs/workloads:" >&2
    cat "$work/explain.log" >&2
    exit 1
  fi
done
python3 -c 'import json, sys; s = json.load(open("out/summary.json")); sys.exit(s["num_accelerators"] != 2)'
echo "installed tree under $prefix ran configs/workloads/quickstart.yaml"
