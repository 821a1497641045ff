#!/usr/bin/env bash
# The million-object bench's options on a small scale (ctest bench.S3MillionReuse): bench/s3_million.py generates 300
# objects on its own gateway and keeps it (--keep-gateway, --reads ''); a second run reads them again with --reuse
# (no gateway started, no generation: the seed folder is never made), only the read --reads names, capped by --steps,
# with --validation-interval in the job;
# a --reuse asking for more objects than the bucket holds fails with exit 2 naming --objects; --reads refuses an
# unknown read by name. The gateway is stopped at the end whatever happens.
#   bench/s3_million_smoke.sh BIN_DIR
set -euo pipefail
bin=${1:?usage: $0 BIN_DIR}
src=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'bash "$src/scripts/ceph-rgw.sh" stop "$work/gen/gateway"; rm -rf "$work"' EXIT
fail() { echo "s3_million_smoke: $*" >&2; exit 1; }
million() { python3 "$src/bench/s3_million.py" --bin-dir "$bin" "$@"; }

million --work "$work/gen" --objects 300 --reads '' --keep-gateway --results "$work/gen.md" 2> "$work/gen.log" ||
  fail "generation: $(tail -5 "$work/gen.log")"
grep -q "generation .* PUTs/s" "$work/gen.md" || fail "no generation line in $(cat "$work/gen.md")"
grep -q "^| listing \|^| skip_listing " "$work/gen.md" && fail "--reads '' read anyway: $(cat "$work/gen.md")"

million --work "$work/reuse" --reuse "$work/gen/gateway" --objects 300 --reads skip_listing --steps 2 \
  --validation-interval 0 --results "$work/reuse.md" 2> "$work/reuse.log" ||
  fail "--reuse: $(tail -5 "$work/reuse.log")"
grep -q "generated before (--reuse $work/gen/gateway)" "$work/reuse.md" || fail "not reused: $(cat "$work/reuse.md")"
grep -q "2 steps of 64" "$work/reuse.md" || fail "--steps not applied: $(cat "$work/reuse.md")"
grep -q "^| skip_listing | 0 |" "$work/reuse.md" || fail "no skip_listing row: $(cat "$work/reuse.md")"
grep -q "^| listing " "$work/reuse.md" && fail "--reads skip_listing ran the listing read too"
[[ -e $work/reuse/runs/seed || -e $work/reuse/gateway ]] && fail "--reuse generated or started a gateway"
grep -q "total_training_steps: 2" "$work/reuse/runs/skip_listing/job.yaml" || fail "--steps not in the job"
grep -q "listing_validation_interval: 0" "$work/reuse/runs/skip_listing/job.yaml" ||
  fail "--validation-interval not in the job"

rc=0
million --work "$work/more" --reuse "$work/gen/gateway" --objects 301 2> "$work/more.log" || rc=$?
[[ $rc == 2 ]] || fail "--reuse with more objects than the bucket holds: exit $rc, not 2"
grep -q "bucket million holds 300 objects, fewer than --objects 301" "$work/more.log" ||
  fail "message: $(cat "$work/more.log")"
rc=0
million --work "$work/bad" --reuse "$work/gen/gateway" --objects 300 --reads listing,lst 2> "$work/bad.log" || rc=$?
[[ $rc == 2 ]] && grep -q "unknown read 'lst' (allowed: listing, skip_listing)" "$work/bad.log" ||
  fail "--reads lst: exit $rc, $(cat "$work/bad.log")"
echo "s3_million_smoke: ok"
