#!/usr/bin/env bash
# A one-node Ceph cluster with the RADOS Gateway on loopback, for the S3 tests and benchmarks (docs/object-storage.md).
#
#   scripts/ceph-rgw.sh start DIR    starts mon + osd (memstore) + radosgw with every file under DIR (created, must be
#                                    empty or absent), on random free loopback ports; prints the environment lines
#                                    `AWS_ENDPOINT_URL=... AWS_ACCESS_KEY_ID=... AWS_SECRET_ACCESS_KEY=... AWS_REGION=...`
#                                    and writes them to DIR/env (mode 600) and the daemons' PIDs to DIR/pids.
#   scripts/ceph-rgw.sh extra-rgw DIR  starts one more radosgw (client.rgw.b) of the running cluster on a new free port
#                                    and prints "PID ENDPOINT": the fault tests kill that gateway and leave the first
#                                    one serving the other tests. Recorded in DIR/pids too.
#   scripts/ceph-rgw.sh kill-rgw DIR PID  kills an extra gateway at once (SIGKILL: it handles nothing more, not even
#                                    the requests in flight) and blocklists its RADOS client, which drops its watches
#                                    (see extra-rgw below for why that matters).
#   scripts/ceph-rgw.sh stop DIR     kills exactly the daemons `start` recorded in DIR/pids (TERM, then KILL after 5 s).
#
# No cephadm, no systemd, no mgr; cephx on. Facts measured on this machine kind (issue 15):
#  - `osd pool default size/min size = 1`: with one OSD the pools never become usable otherwise (radosgw-admin hangs).
#  - `paxos propose interval = 0.05`: cuts the start-up from ~15 s to ~5 s.
#  - `tcp_nodelay=1` on the beast frontend: removes ~40 ms stalls on reused connections (Nagle + delayed ACK).
#  - the S3 user is made with `radosgw-admin user create` before radosgw starts.
# Environment: CEPH_RGW_OBJECTSTORE (default memstore: data in the OSD's memory; `bluestore` keeps it in a file under
# DIR for larger data: a sparse file DIR/osd/block-0.img of CEPH_RGW_BLUESTORE_BYTES, default 10 GiB; not the OSD
# folder's `block`, where mkfs puts its own link to the block path), CEPH_RGW_MEMSTORE_BYTES (memstore capacity,
# default 4 GiB).
set -euo pipefail

cmd=${1:-}
dir=${2:-}
if [[ -z $cmd || -z $dir ]]; then
  echo "usage: $0 start|stop DIR" >&2
  exit 2
fi

stop() {
  [[ -f $dir/pids ]] || return 0
  local pids=()
  while read -r pid name; do
    # Only a process that is still the daemon we started (its command line names our config) is signalled.
    if [[ -r /proc/$pid/cmdline ]] && tr '\0' ' ' < "/proc/$pid/cmdline" | grep -qF -- "$dir/ceph.conf"; then
      kill -TERM "$pid" 2>/dev/null || true
      pids+=("$pid")
    fi
  done < "$dir/pids"
  for _ in $(seq 50); do
    local alive=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    ((alive)) || break
    sleep 0.1
  done
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  rm -f "$dir/pids"
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_http() {
  for _ in $(seq 600); do
    if python3 - "$1" <<'PY' 2>/dev/null; then return 0; fi
import sys, urllib.request, urllib.error
try:
    urllib.request.urlopen(sys.argv[1] + "/", timeout=1)
except urllib.error.HTTPError:
    pass
PY
    sleep 0.1
  done
  return 1
}
# A failed start leaves nothing running; the exit status is always the script's own ($? read first).
starting=0
trap 'rc=$?; if ((rc != 0 && starting)); then stop; echo "ceph-rgw: start failed; logs in $dir/log" >&2; fi; exit $rc' EXIT

if [[ $cmd == stop ]]; then
  stop
  exit 0
fi
if [[ $cmd == extra-rgw ]]; then
  [[ -f $dir/pids ]] || { echo "$0: no cluster running in $dir" >&2; exit 2; }
  dir=$(cd "$dir" && pwd)
  port=$(free_port)
  # Stop it with SIGTERM (it exits within ~2 s, refusing new connections at once) or with kill-rgw: after a bare
  # SIGKILL its watch on the cluster's notify objects lingers until the OSD's 30 s watch timeout, and every metadata
  # change on the other gateway (a bucket creation) waits for it (measured: 29 s). Its watcher address (the one
  # notify.0 gains) is kept in DIR/rgw-b-PID.addr for kill-rgw.
  before=$(rados -c "$dir/ceph.conf" -p default.rgw.control listwatchers notify.0 | sort)
  radosgw -c "$dir/ceph.conf" -n client.rgw.b -f --rgw-frontends "beast endpoint=127.0.0.1:$port tcp_nodelay=1" \
    > "$dir/log/rgw-b-$port.out" 2>&1 &
  pid=$!
  echo "$pid rgw-b" >> "$dir/pids"
  wait_http "http://127.0.0.1:$port" || { echo "$0: the extra gateway did not answer" >&2; exit 1; }
  after=$(rados -c "$dir/ceph.conf" -p default.rgw.control listwatchers notify.0 | sort)
  comm -13 <(echo "$before") <(echo "$after") | sed -n 's/^watcher=\([^ ]*\) .*/\1/p' > "$dir/rgw-b-$pid.addr"
  [[ -s $dir/rgw-b-$pid.addr ]] || { echo "$0: the extra gateway's RADOS watch did not show" >&2; exit 1; }
  echo "$pid http://127.0.0.1:$port"
  exit 0
fi
if [[ $cmd == kill-rgw ]]; then
  pid=${3:-}
  [[ -f $dir/rgw-b-$pid.addr ]] || { echo "$0: no extra gateway with PID '$pid' in $dir" >&2; exit 2; }
  tr '\0' ' ' < "/proc/$pid/cmdline" | grep -qF -- "$dir/ceph.conf" || { echo "$0: PID $pid is not our gateway" >&2; exit 2; }
  kill -KILL "$pid"
  # Blocklisting the dead client drops its watches at once (measured: a bucket creation on the other gateway right
  # after takes 0.7 s instead of 29 s).
  while read -r addr; do
    ceph -c "$dir/ceph.conf" osd blocklist add "$addr" 600 > /dev/null
  done < "$dir/rgw-b-$pid.addr"
  exit 0
fi
[[ $cmd == start ]] || { echo "$0: unknown command '$cmd' (start, extra-rgw, kill-rgw, stop)" >&2; exit 2; }
for tool in ceph-mon ceph-osd radosgw radosgw-admin ceph-authtool monmaptool ceph; do
  command -v "$tool" >/dev/null || { echo "$0: $tool not found (install with scripts/setup.sh --test)" >&2; exit 1; }
done
if [[ -e $dir && -n $(ls -A "$dir" 2>/dev/null) ]]; then
  echo "$0: $dir is not empty" >&2
  exit 2
fi
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
mkdir -p "$dir"/{run,log,mon/ceph-a,osd/ceph-0,tmp}
: > "$dir/pids"
starting=1  # from here on, a failure stops what this start began (the EXIT trap)

mon_port=$(free_port)
rgw_port=$(free_port)
while [[ $rgw_port == "$mon_port" ]]; do rgw_port=$(free_port); done
fsid=$(uuidgen)
conf=$dir/ceph.conf
objectstore=${CEPH_RGW_OBJECTSTORE:-memstore}
cat > "$conf" <<EOF
[global]
fsid = $fsid
mon host = v1:127.0.0.1:$mon_port
public addr = 127.0.0.1
ms bind msgr2 = false
auth cluster required = cephx
auth service required = cephx
auth client required = cephx
keyring = $dir/keyring
run dir = $dir/run
admin socket = $dir/run/\$name.asok
log file = $dir/log/\$name.log
log to stderr = false
err to stderr = true
mon data = $dir/mon/ceph-\$id
osd data = $dir/osd/ceph-\$id
osd objectstore = $objectstore
memstore device bytes = ${CEPH_RGW_MEMSTORE_BYTES:-4294967296}
bluestore block path = $dir/osd/block-\$id.img
bluestore block size = ${CEPH_RGW_BLUESTORE_BYTES:-10737418240}
bluestore block create = true
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
mon allow pool size one = true
mon warn on pool no redundancy = false
paxos propose interval = 0.05
mon_osd_prime_pg_temp = false
osd max object name len = 460
osd max object namespace len = 64
rgw frontends = beast endpoint=127.0.0.1:$rgw_port tcp_nodelay=1
rgw data = $dir/rgw
rgw dns name = 127.0.0.1
EOF

ceph-authtool --create-keyring "$dir/keyring" --gen-key -n mon. --cap mon 'allow *' >/dev/null
ceph-authtool "$dir/keyring" --gen-key -n client.admin --cap mon 'allow *' --cap osd 'allow *' \
  --cap mds 'allow *' --cap mgr 'allow *' >/dev/null
for rgw in a b; do  # b: the extra gateway of the fault tests
  ceph-authtool "$dir/keyring" --gen-key -n "client.rgw.$rgw" --cap mon 'allow rw' --cap osd 'allow rwx' >/dev/null
done
monmaptool --create --addv a "[v1:127.0.0.1:$mon_port]" --fsid "$fsid" "$dir/monmap" >/dev/null
ceph-mon -c "$conf" --mkfs -i a --monmap "$dir/monmap" --keyring "$dir/keyring"
ceph-mon -c "$conf" -i a -f > "$dir/log/mon.out" 2>&1 &
echo "$! mon" >> "$dir/pids"

ceph_() { timeout 60 ceph -c "$conf" --connect-timeout 30 "$@"; }
ceph_ auth import -i "$dir/keyring" >/dev/null 2>&1
osd_uuid=$(uuidgen)
osd_id=$(ceph_ osd new "$osd_uuid")
ceph-authtool --create-keyring "$dir/osd/ceph-$osd_id/keyring" --gen-key -n "osd.$osd_id" >/dev/null
ceph_ auth add "osd.$osd_id" osd 'allow *' mon 'allow profile osd' mgr 'allow profile osd' \
  -i "$dir/osd/ceph-$osd_id/keyring" >/dev/null 2>&1
ceph-osd -c "$conf" -i "$osd_id" --mkfs --osd-uuid "$osd_uuid" --keyring "$dir/osd/ceph-$osd_id/keyring" \
  > "$dir/log/osd-mkfs.out" 2>&1
ceph-osd -c "$conf" -i "$osd_id" -f --keyring "$dir/osd/ceph-$osd_id/keyring" > "$dir/log/osd.out" 2>&1 &
echo "$! osd" >> "$dir/pids"

# The S3 user, before radosgw starts (radosgw-admin creates the rgw pools as it goes).
access_key=$(python3 -c 'import secrets,string; print("".join(secrets.choice(string.ascii_uppercase+string.digits) for _ in range(20)))')
secret_key=$(python3 -c 'import secrets; print(secrets.token_urlsafe(30))')
timeout 120 radosgw-admin -c "$conf" -n client.rgw.a user create --uid=dlio --display-name=dlio \
  --access-key="$access_key" --secret-key="$secret_key" > "$dir/log/user-create.out" 2>&1

radosgw -c "$conf" -n client.rgw.a -f > "$dir/log/rgw.out" 2>&1 &
echo "$! rgw" >> "$dir/pids"

endpoint="http://127.0.0.1:$rgw_port"
# Ready when it answers an HTTP request (an anonymous GET / gives a ListAllMyBuckets answer).
wait_http "$endpoint" || { echo "$0: radosgw did not answer at $endpoint" >&2; exit 1; }
umask 077
{
  echo "AWS_ENDPOINT_URL=$endpoint"
  echo "AWS_ACCESS_KEY_ID=$access_key"
  echo "AWS_SECRET_ACCESS_KEY=$secret_key"
  echo "AWS_REGION=us-east-1"
} > "$dir/env"
cat "$dir/env"
