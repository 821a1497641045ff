#!/usr/bin/env bash
# DLIO_LINKER (CMakeLists.txt; scripts/setup.sh --test sets lld): a bad value is refused at configure time with one
# line naming the key and the values allowed, and the build folder's executables were linked by the linker its
# DLIO_LINKER names (the .comment section of an lld-linked ELF file says "Linker: ... LLD"; GNU ld writes no such
# line). Environment: DLIO_SOURCE_DIR, DLIO_BUILD_DIR (tests/CMakeLists.txt).
set -euo pipefail
src=${DLIO_SOURCE_DIR:?} build=${DLIO_BUILD_DIR:?}
scratch=$(mktemp -d /tmp/dlio-linker-XXXXXX)
trap 'rm -rf "$scratch"' EXIT

if cmake -S "$src" -B "$scratch" -DDLIO_LINKER=ld.foo -DDLIO_BUILD_TESTS=OFF -DDLIO_BUILD_BENCH=OFF \
  > "$scratch/configure.log" 2>&1; then
  echo "DLIO_LINKER=ld.foo was accepted" >&2; exit 1
fi
grep -q "DLIO_LINKER: 'ld.foo' is not allowed: lld, gold, bfd or empty" "$scratch/configure.log" \
  || { echo "DLIO_LINKER=ld.foo refused without naming the key and the values allowed:" >&2; cat "$scratch/configure.log" >&2; exit 1; }
echo "DLIO_LINKER=ld.foo refused: $(grep -A1 "DLIO_LINKER:" "$scratch/configure.log" | tr -s ' \n' ' ')"

linker=$(sed -n 's/^DLIO_LINKER:[A-Z]*=//p' "$build/CMakeCache.txt")
for exe in dlio-agent dlio-coordinator; do
  comment=$(readelf -p .comment "$build/bin/$exe")
  case $linker in
    lld) grep -q 'Linker: .*LLD' <<<"$comment" || { echo "$exe: DLIO_LINKER=lld but not linked by lld:$comment" >&2; exit 1; } ;;
    gold) grep -q 'gold' <<<"$comment" || { echo "$exe: DLIO_LINKER=gold but not linked by gold:$comment" >&2; exit 1; } ;;
    *) if grep -q 'LLD' <<<"$comment"; then echo "$exe: DLIO_LINKER='$linker' but linked by lld" >&2; exit 1; fi ;;
  esac
  echo "$exe: linked as DLIO_LINKER='$linker' says"
done
