#!/usr/bin/env bash
# helm/dlio renders offline, with its defaults, an override and an admin's values file (resources, nodeSelector,
# tolerations, affinity, TLS, claims), through tests/minihelm (Go text/template + sprig from Debian's packages, the
# engine Helm uses); the merged values validate against values.schema.json, every rendered manifest against npm
# kubernetes-models, and every pod template against the Pod Security "restricted" profile
# (tests/js/check_pod_security.mjs); the hostPath opt-in is refused by baseline and restricted; bad overrides are
# rejected; a broken manifest is caught.
# shellcheck source=tests/observe/lib.sh
source "$(dirname "$0")/lib.sh"
need go node
chart=$SRC/helm/dlio
mkdir -p "$WORK/gopath/src/minihelm"
cp "$SRC/tests/minihelm/main.go" "$WORK/gopath/src/minihelm/"
# GOPATH mode: Debian's gocode tree has no module layout for the /v3 import paths (ecosystem.md §4).
(cd "$WORK/gopath/src/minihelm" && GO111MODULE=off GOPATH="$WORK/gopath:/usr/share/gocode" GOCACHE="$WORK/gocache" \
  go build -o "$WORK/minihelm" .)
mh() { "$WORK/minihelm" "$@"; }

check() {  # check NAME [minihelm args...]: render, validate values and manifests, the restricted profile
  local name=$1; shift
  mh "$@" "$chart" > "$WORK/$name.yaml"
  mh --values-json "$@" "$chart" > "$WORK/$name.values.json"
  echo "== $name: $(grep -c '^# Source:' "$WORK/$name.yaml") templates rendered"
  node "$SRC/tests/js/validate_chart.mjs" "$chart/values.schema.json" "$WORK/$name.values.json" "$WORK/$name.yaml"
  node "$SRC/tests/js/check_pod_security.mjs" --read-only-root restricted "$WORK/$name.yaml"
}

check default
kinds=$(grep '^kind:' "$WORK/default.yaml" | sort | tr '\n' ' ')
[[ $kinds == "kind: ConfigMap kind: Deployment kind: Job kind: PersistentVolumeClaim kind: Secret kind: Service kind: Service kind: StatefulSet " ]] \
  || { echo "default kinds: $kinds" >&2; exit 1; }
grep -q 'clusterIP: None' "$WORK/default.yaml"                     # headless Service for the StatefulSet
grep -q 'fieldPath: metadata.name' "$WORK/default.yaml"            # POD_NAME from the downward API
grep -q -- '--token-file=/etc/dlio/token/token' "$WORK/default.yaml"
grep -q 'claimName: dlio-data' "$WORK/default.yaml"                # the dataset: an existing PVC
if grep -q 'hostPath:' "$WORK/default.yaml"; then echo "hostPath by default" >&2; exit 1; fi
grep -q 'topologyKey: kubernetes.io/hostname' "$WORK/default.yaml"  # one agent per node
grep -q -- '--store=/results/jobs.db' "$WORK/default.yaml"          # the job store on the coordinator's PVC
grep -q 'claimName: dlio-results' "$WORK/default.yaml"
grep -A2 'requests:' "$WORK/default.yaml" | grep -q 'cpu:'
# The dataset and the results stay writable under the read-only root file system.
for mount in /data /results; do
  lines=$(grep -A1 "mountPath: $mount\$" "$WORK/default.yaml")
  [[ -n $lines && $lines != *"readOnly: true"* ]] || { echo "$mount not mounted, or read-only: $lines" >&2; exit 1; }
done

# An admin's values file: resources, nodeSelector, tolerations, affinity, TLS, claims; still restricted.
check admin -f "$SRC/tests/observe/fixtures/helm-admin.yaml"
grep -q -- '--tls-cert=/etc/dlio/tls/tls.crt' "$WORK/admin.yaml"
grep -q -- '--tls-ca=/etc/dlio/tls/ca.crt' "$WORK/admin.yaml"
grep -q 'secretName: dlio-coordinator-tls' "$WORK/admin.yaml"
grep -q 'storage-bench: "true"' "$WORK/admin.yaml"
grep -q 'tolerationSeconds: 3600' "$WORK/admin.yaml"
grep -q 'topology.kubernetes.io/zone' "$WORK/admin.yaml"
if grep -q 'podAntiAffinity' "$WORK/admin.yaml"; then echo "the admin's affinity was not used as given" >&2; exit 1; fi
grep -q 'cpu: "16"' "$WORK/admin.yaml"
grep -q 'runAsUser: 1000' "$WORK/admin.yaml"
grep -q 'storageClassName: fast-ssd' "$WORK/admin.yaml"
grep -q -- '- "--mlperf"' "$WORK/admin.yaml"
grep -q -- '--mlperf-results-dir=/output/mlperf' "$WORK/admin.yaml"

# hostPath is an opt-in: a valid manifest, refused by the baseline and the restricted profile alike.
mh --set data.type=hostPath "$chart" > "$WORK/hostpath.yaml"
for level in baseline restricted; do
  if node "$SRC/tests/js/check_pod_security.mjs" "$level" "$WORK/hostpath.yaml" 2> "$WORK/hostpath-$level.err"; then
    echo "hostPath passed the $level profile" >&2; exit 1
  fi
  grep -q 'HostPath Volumes: volume "data" is a hostPath' "$WORK/hostpath-$level.err"
done
grep -q 'Volume Types: volume "data" is of type hostPath' "$WORK/hostpath-restricted.err"
# The profile checker bites on each restricted control the chart sets.
for edit in 's/allowPrivilegeEscalation: false/allowPrivilegeEscalation: true/' 's/runAsNonRoot: true/runAsNonRoot: false/' \
            's/type: RuntimeDefault/type: Unconfined/' 's/- ALL/- NET_ADMIN/' \
            's/readOnlyRootFilesystem: true/readOnlyRootFilesystem: false/'; do
  sed "$edit" "$WORK/default.yaml" > "$WORK/weakened.yaml"
  if node "$SRC/tests/js/check_pod_security.mjs" --read-only-root restricted "$WORK/weakened.yaml" 2> /dev/null; then
    echo "the restricted checker accepted: $edit" >&2; exit 1
  fi
done

check override -f "$SRC/tests/observe/fixtures/helm-override.yaml" --set agents.logLevel=debug
kinds=$(grep '^kind:' "$WORK/override.yaml" | sort | tr '\n' ' ')
[[ $kinds == "kind: ConfigMap kind: DaemonSet kind: Deployment kind: Job kind: Service kind: Service kind: ServiceMonitor " ]] \
  || { echo "override kinds: $kinds" >&2; exit 1; }
grep -q 'claimName: lustre-dlio' "$WORK/override.yaml"
grep -q 'secretName: dlio-token-prod' "$WORK/override.yaml"
grep -q 'image: registry.example.org/hpc/dlio-cpp:0.1.0-test' "$WORK/override.yaml"
grep -q -- '--log-level=debug' "$WORK/override.yaml"
grep -q '"++workload.train.epochs=3"' "$WORK/override.yaml"

# values.schema.json rejects bad overrides, naming the value.
bad() {  # bad EXPECTED --set ...
  local expect=$1; shift
  mh --values-json "$@" "$chart" > "$WORK/bad.json"
  if node "$SRC/tests/js/validate_chart.mjs" "$chart/values.schema.json" "$WORK/bad.json" 2> "$WORK/bad.err"; then
    echo "accepted a bad override: $*" >&2; exit 1
  fi
  grep -q "$expect" "$WORK/bad.err" || { cat "$WORK/bad.err"; exit 1; }
  echo "rejected as expected ($*): $(head -1 "$WORK/bad.err")"
}
bad '/agents/kind' --set agents.kind=Deployment
bad '/agents/replicas' --set agents.replicas=two
bad '/data' --set data.claimName=
bad '/tls' --set tls.enabled=true
bad '/securityContext/privileged' --set securityContext.privileged=yes
bad '/agents/metricsPort' --set agents.metricsPort=70000

# The manifest validator bites: a containerPort that is not an integer is refused.
sed 's/containerPort: 9464/containerPort: "metrics"/' "$WORK/default.yaml" > "$WORK/broken.yaml"
if node "$SRC/tests/js/validate_chart.mjs" "$chart/values.schema.json" "$WORK/default.values.json" "$WORK/broken.yaml" \
     2> "$WORK/broken.err"; then
  echo "a broken manifest passed" >&2; exit 1
fi
grep -q containerPort "$WORK/broken.err"
echo "chart checks passed"
