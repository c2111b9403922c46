#!/usr/bin/env bash
# End-to-end tests: the official OpenTelemetry JS SDK and raw OTLP/HTTP against
# a real sightline binary (build/sightline, or $SIGHTLINE_BIN).
#
#   test/integration/run.sh                      # all files
#   test/integration/run.sh sdk.test.mjs         # some files
#   SIGHTLINE_IT_ENGINES=duckdb test/integration/run.sh
#   SIGHTLINE_IT_KEEP=1 ...                      # keep temp data dirs and server logs
#
# Exits non-zero if any test fails or the whole run exceeds its time budget.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
budget="${SIGHTLINE_IT_TIMEOUT:-1200}"   # seconds for the whole suite

# Install the pinned SDK packages when node_modules is missing or older than the lockfile.
stamp="$here/node_modules/.package-lock.json"
if [[ ! -f "$stamp" || "$here/package-lock.json" -nt "$stamp" || "$here/package.json" -nt "$stamp" ]]; then
  (cd "$here" && npm ci --silent --no-audit --no-fund)
fi

files=()
if [[ $# -gt 0 ]]; then
  for f in "$@"; do files+=("test/integration/$(basename "$f")"); done
else
  files=(test/integration/*.test.mjs)
fi

cd "$root"
# timeout signals the whole process group (test processes and the servers they
# started), then SIGKILLs it if it has not gone 15 s later.
set +e
timeout --kill-after=15 "$budget" node --test --test-concurrency=1 "${files[@]}"
rc=$?
set -e
if [[ $rc -eq 124 || $rc -eq 137 ]]; then
  echo "integration tests: timed out after ${budget}s" >&2
fi
exit "$rc"
