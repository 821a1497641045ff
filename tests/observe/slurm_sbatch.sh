#!/usr/bin/env bash
# A real Slurm on this host (Debian's slurmctld + 4 slurmd emulating nodes n1..n4, auth/none; ecosystem.md §5)
# runs `sbatch -N 4 slurm/dlio.sbatch JOB.yaml OUTPUT_DIR` end to end, three times:
#  1. with the defaults: exclusive nodes, a token generated for the job (mode 600), the coordinator listening on the
#     first node's address (not every interface) with its job store under OUTPUT_DIR; the result lists 4 agents on 4
#     distinct node names (num_hosts 4);
#  2. with TLS (a CA and a certificate for 127.0.0.1 made here) and the MLPerf mode (--mlperf --mlperf-runs 1): the
#     coordinator serves TLS and the MLPerf results tree lands in OUTPUT_DIR/mlperf;
#  3. with --find-max-accelerators --max-accelerators 2: the agents offer 2 ranks and the search reports 2;
# and after each the script tore down everything it started.
# shellcheck source=tests/observe/lib.sh
source "$(dirname "$0")/lib.sh"
need slurmctld slurmd sbatch scontrol sinfo
[[ $(id -u) == 0 ]] || { echo "Slurm daemons need root here (SlurmUser=root): run as root" >&2; exit 1; }

S=$WORK/slurm
mkdir -p "$S/state" "$S/spool" "$S/run" "$S/log"
ctld_port=$(free_port)
node_ports=()
for _ in 1 2 3 4; do node_ports+=("$(free_port)"); done
# A private cluster: its own ports, state, pid and log files (other tests or users on the host are not disturbed).
# MinJobAge=0 keeps every finished job's record (three jobs; the cluster is torn down after), so `sbatch --wait`
# polls every 2 s: it multiplies its poll interval by 4 while that is below MinJobAge/2 (sbatch.c _job_wait), and
# MinJobAge=10 made it poll at 2, 10, 18, 26 s: up to 8 s lost after each job's end.
cat > "$S/slurm.conf" <<CONF
ClusterName=dliotest
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
AuthType=auth/none
CredType=cred/none
SlurmctldPort=$ctld_port
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool/%n
SlurmctldPidFile=$S/run/slurmctld.pid
SlurmdPidFile=$S/run/slurmd-%n.pid
SlurmctldLogFile=$S/log/slurmctld.log
SlurmdLogFile=$S/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
MinJobAge=0
MailProg=/bin/true
SlurmdParameters=config_overrides
NodeName=n1 NodeHostname=localhost NodeAddr=127.0.0.1 Port=${node_ports[0]} CPUs=2 RealMemory=2000 State=UNKNOWN
NodeName=n2 NodeHostname=localhost NodeAddr=127.0.0.1 Port=${node_ports[1]} CPUs=2 RealMemory=2000 State=UNKNOWN
NodeName=n3 NodeHostname=localhost NodeAddr=127.0.0.1 Port=${node_ports[2]} CPUs=2 RealMemory=2000 State=UNKNOWN
NodeName=n4 NodeHostname=localhost NodeAddr=127.0.0.1 Port=${node_ports[3]} CPUs=2 RealMemory=2000 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
CONF
export SLURM_CONF=$S/slurm.conf

# The daemons fork into the background; their pids (from the pid files) join the cleanup list.
stop_slurm() {
  for f in "$S"/run/slurmd-*.pid "$S/run/slurmctld.pid"; do
    [[ -f $f ]] && PIDS+=("$(cat "$f")")
  done
  return 0
}
on_exit stop_slurm
slurmctld -i
for n in n1 n2 n3 n4; do slurmd -N "$n"; done
# shellcheck disable=SC2016  # expanded by the inner bash
wait_for 30 bash -c '[[ $(sinfo -h -o "%D %t" | awk "\$2 == \"idle\" {s += \$1} END {print s}") == 4 ]]'
sinfo

mkdir -p "$WORK/data"
workload 64 0.01 2 > "$WORK/job.yaml"

# sbatch NAME [ENV=VALUE...] -- [SCRIPT ARGS...]: runs the script on the 4 nodes into $WORK/NAME, waits, prints its log.
# metric.au=0 (an override, passed on by the script): the job's AU on this loaded machine is not this test's subject;
# the script's exit status is the job's, so any measured AU exits 0 and anything else fails the test.
run_sbatch() {
  local name=$1; shift
  local env=()
  while [[ $1 != -- ]]; do env+=("$1"); shift; done
  shift
  local start_s=$SECONDS
  env DLIO_BIN_DIR="$BIN" DLIO_DATA_ROOT="$WORK/data" "${env[@]}" \
    sbatch --wait -N 4 -o "$WORK/$name.log" -D "$WORK" "$SRC/slurm/dlio.sbatch" "$WORK/job.yaml" "$WORK/$name" \
    ++workload.metric.au=0 "$@" \
    || { echo "sbatch $name failed"; cat "$WORK/$name.log"; for f in "$WORK/$name"/slurm/*.log; do echo "== $f"; cat "$f"; done; exit 1; }
  echo "sbatch $name returned after $((SECONDS - start_s)) s"
  cat "$WORK/$name.log"
  # Torn down: no process of this run is left (the agents exited after losing the coordinator).
  sleep 1
  if pgrep -f -- "--data-root $WORK/data" > /dev/null; then echo "agents left running" >&2; pgrep -af -- "--data-root $WORK/data"; exit 1; fi
  if pgrep -f -- "--targets-file $WORK/$name/slurm" > /dev/null; then echo "coordinator left running" >&2; exit 1; fi
}

# 1. Defaults.
run_sbatch out --
python3 - "$WORK/out/summary.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
agents = s["dlio_ext"]["agents"]
names = sorted(a["name"] for a in agents)
nodes = sorted(a["hostname"] for a in agents)
print("agents:", names, "nodes:", nodes, "num_hosts:", s["num_hosts"], "num_accelerators:", s["num_accelerators"])
assert names == ["n1", "n2", "n3", "n4"], names
assert len(set(nodes)) == 4, nodes
assert s["num_hosts"] == 4 and s["num_accelerators"] == 4
assert s["metric"]["train_au_percentage"] and len(s["metric"]["train_au_percentage"]) == 2
PY
ls -l "$WORK/out/slurm"
[[ $(stat -c %a "$WORK/out/slurm/token") == 600 && -s $WORK/out/slurm/token ]] || { echo "no private token" >&2; exit 1; }
grep -q 'coordinator listening on 127.0.0.1:0 ' "$WORK/out/slurm/coordinator.log" \
  || { echo "the coordinator did not listen on the first node's address" >&2; cat "$WORK/out/slurm/coordinator.log"; exit 1; }
if grep -q 'without --token-file' "$WORK/out/slurm/coordinator.log"; then echo "served without a token" >&2; exit 1; fi
[[ -s $WORK/out/slurm/jobs.db ]] || { echo "no job store under OUTPUT_DIR" >&2; exit 1; }
grep -q '4 node(s), 1 accelerator(s) and 2 CPU(s) each' "$WORK/out.log"   # --exclusive: the nodes' 2 CPUs each

# 2. TLS and the MLPerf mode.
(cd "$WORK" && openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 1 -subj /CN=dlio-test-ca \
  && openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj /CN=localhost \
  && printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' > san.ext \
  && openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 1 -extfile san.ext) \
  > "$WORK/openssl.log" 2>&1
run_sbatch out-tls DLIO_TLS_CERT="$WORK/server.pem" DLIO_TLS_KEY="$WORK/server.key" DLIO_TLS_CA="$WORK/ca.pem" -- \
  --mlperf --mlperf-runs 1
grep -q 'coordinator listening on 127.0.0.1:0 (port [0-9]*), TLS' "$WORK/out-tls/slurm/coordinator.log" \
  || { echo "the coordinator did not serve TLS" >&2; cat "$WORK/out-tls/slurm/coordinator.log"; exit 1; }
grep -q 'verdict: MLPerf observe: AU PASS, replication PASS' "$WORK/out-tls.log"
ls "$WORK"/out-tls/mlperf/training/observe/mlperf_result_*.json
[[ $(find "$WORK/out-tls/mlperf/training/observe/run" -name summary.json | wc -l) == 2 ]]   # the warm-up and run 1

# 3. The accelerator search from the same script: the agents offer the bound, 2 ranks each.
run_sbatch out-search -- --find-max-accelerators --max-accelerators 2
grep -q 'maximum accelerators per agent with AU >= 0 %: 2' "$WORK/out-search.log"
echo "slurm runs passed"
