#!/usr/bin/env bash
# Regenerates docs/cli.md from the binaries' --help (a test checks that it matches).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${DLIO_BIN_DIR:-build/bin}
{
  echo "# CLI reference"
  echo
  echo "Generated from \`--help\` by \`scripts/gen-cli-docs.sh\`; do not edit by hand."
  for cmd in "dlio-coordinator" "dlio-coordinator serve" "dlio-coordinator submit" "dlio-coordinator run" "dlio-agent"; do
    echo
    echo "## $cmd"
    echo
    echo '```'
    # shellcheck disable=SC2086
    $bin/$cmd --help
    echo '```'
  done
} > docs/cli.md
