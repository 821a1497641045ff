#!/usr/bin/env bash
# Regenerates the CLI reference from the binaries' --help: docs/cli.md and the block between the
# "cli:begin"/"cli:end" markers in README.md. With --check, changes nothing and exits 1 if either is stale
# (a test runs that, so the docs never drift from the code).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${DLIO_BIN_DIR:-build/bin}
check=0
[[ "${1:-}" == "--check" ]] && check=1

reference() {
  # The coordinator's verbs come from its table of verbs (cli/coordinator_main.cc kVerbs); a group of verbs (mlperf) is
  # documented through its children.
  local list verbs=() v
  list=$($bin/dlio-coordinator --list-verbs)
  while IFS= read -r v; do
    verbs+=("dlio-coordinator $v")
  done < <(awk '{ n[NR] = $0 } END { for (i = 1; i <= NR; i++) if (index(n[i + 1], n[i] " ") != 1) print n[i] }' \
             <<< "$list")
  for cmd in "dlio-coordinator" "${verbs[@]}" "dlio-agent"; do
    echo
    echo "### $cmd"
    echo
    echo '```'
    # shellcheck disable=SC2086
    $bin/$cmd --help
    echo '```'
  done
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ref=$(reference)
{
  echo "# CLI reference"
  echo
  echo "Generated from \`--help\` by \`scripts/gen-cli-docs.sh\`; do not edit by hand."
  echo "$ref"
} > "$tmp/cli.md"
echo "$ref" > "$tmp/ref"
awk -v ref="$tmp/ref" 'BEGIN { while ((getline l < ref) > 0) body = body l "\n" }
  /<!-- cli:begin -->/ { print; printf "%s", body; skip = 1; next }
  /<!-- cli:end -->/ { skip = 0 }
  !skip { print }' README.md > "$tmp/README.md"

if ((check)); then
  stale=0
  cmp -s "$tmp/cli.md" docs/cli.md || { echo "docs/cli.md is stale: run scripts/gen-cli-docs.sh" >&2; stale=1; }
  cmp -s "$tmp/README.md" README.md || { echo "README.md CLI reference is stale: run scripts/gen-cli-docs.sh" >&2; stale=1; }
  exit $stale
fi
cp "$tmp/cli.md" docs/cli.md
cp "$tmp/README.md" README.md
